// Screen Time focus: tells the screentime agent which window is in front, and when no one has
// touched the keyboard or mouse for the agent's idle timeout. GNOME Shell runs it inside the
// compositor, as the session's user; the agent believes it only because the kernel says the
// connection comes from the compositor process of a session it reads, and counts the pid it
// names only if that process is the session user's. Without it (disabled, crashed, the agent
// away) the agent counts every connected app, so turning it off gains nothing.
//
// One line of JSON per change, to the agent's focus socket:
//   {"focus": {"pid": 1234, "appId": "org.gnome.Chess"}} or {"focus": null}
//   {"idle": true} / {"idle": false}
// The agent's first line says the idle timeout: {"idleTimeoutMilliseconds": 300000}.

const { Gio, GLib } = imports.gi;

const SOCKET = GLib.getenv('SCREENTIME_FOCUS_SOCKET') || '/run/screentime/focus.socket';
const RETRY_SECONDS = 2;

class FocusReporter {
    enable() {
        this._stopped = false;
        this._focusHandler = global.display.connect('notify::focus-window', () => this._sendFocus());
        this._connect();
    }

    disable() {
        this._stopped = true;
        if (this._focusHandler) global.display.disconnect(this._focusHandler);
        this._focusHandler = null;
        this._clearIdleWatches();
        if (this._retry) GLib.source_remove(this._retry);
        this._retry = 0;
        this._close();
    }

    _connect() {
        if (this._stopped || this._connection) return;
        const client = new Gio.SocketClient();
        client.connect_async(Gio.UnixSocketAddress.new(SOCKET), null, (source, result) => {
            try {
                this._connection = client.connect_finish(result);
            } catch (e) {
                this._later();
                return;
            }
            if (this._stopped) {
                this._close();
                return;
            }
            this._output = this._connection.get_output_stream();
            this._input = new Gio.DataInputStream({ base_stream: this._connection.get_input_stream() });
            this._queue = [];
            this._writing = false;
            this._readLine();
            this._sendFocus();
        });
    }

    _later() {
        this._close();
        if (this._stopped || this._retry) return;
        this._retry = GLib.timeout_add_seconds(GLib.PRIORITY_DEFAULT, RETRY_SECONDS, () => {
            this._retry = 0;
            this._connect();
            return GLib.SOURCE_REMOVE;
        });
    }

    _close() {
        this._clearIdleWatches();
        if (this._connection) {
            try {
                this._connection.close(null);
            } catch (e) {}
        }
        this._connection = null;
        this._output = null;
        this._input = null;
    }

    // The agent's lines: the idle timeout, once.
    _readLine() {
        if (!this._input) return;
        this._input.read_line_async(GLib.PRIORITY_DEFAULT, null, (stream, result) => {
            let line;
            try {
                [line] = stream.read_line_finish_utf8(result);
            } catch (e) {
                this._later();
                return;
            }
            if (line === null) {
                this._later();
                return;
            }
            try {
                const told = JSON.parse(line);
                if (Number.isInteger(told.idleTimeoutMilliseconds) && told.idleTimeoutMilliseconds > 0)
                    this._watchIdle(told.idleTimeoutMilliseconds);
            } catch (e) {}
            this._readLine();
        });
    }

    _watchIdle(milliseconds) {
        this._clearIdleWatches();
        const monitor = global.backend.get_core_idle_monitor();
        this._monitor = monitor;
        this._idleWatch = monitor.add_idle_watch(milliseconds, () => {
            this._send({ idle: true });
            this._activeWatch = monitor.add_user_active_watch(() => {
                this._activeWatch = 0;
                this._send({ idle: false });
            });
        });
    }

    _clearIdleWatches() {
        if (this._monitor) {
            if (this._idleWatch) this._monitor.remove_watch(this._idleWatch);
            if (this._activeWatch) this._monitor.remove_watch(this._activeWatch);
        }
        this._idleWatch = 0;
        this._activeWatch = 0;
        this._monitor = null;
    }

    _sendFocus() {
        const window = global.display.focus_window;
        if (!window) {
            this._send({ focus: null });
            return;
        }
        this._send({
            focus: {
                pid: window.get_pid(),
                appId: window.get_gtk_application_id() || window.get_wm_class() || '',
            },
        });
    }

    // Writes in order, one at a time; while the agent reads nothing, only the newest focus waits.
    _send(message) {
        if (!this._output) return;
        if ('focus' in message) this._queue = this._queue.filter(m => !('focus' in m));
        this._queue.push(message);
        this._flush();
    }

    _flush() {
        if (this._writing || !this._output || this._queue.length === 0) return;
        const message = this._queue.shift();
        const bytes = new GLib.Bytes(new TextEncoder().encode(JSON.stringify(message) + '\n'));
        this._writing = true;
        this._output.write_bytes_async(bytes, GLib.PRIORITY_DEFAULT, null, (stream, result) => {
            this._writing = false;
            try {
                stream.write_bytes_finish(result);
            } catch (e) {
                this._later();
                return;
            }
            this._flush();
        });
    }
}

function init() {
    return new FocusReporter();
}
