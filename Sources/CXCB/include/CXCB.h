// The agent's reading of an X11 session: which window is in front, whose process it is, and
// whether anyone touched the keyboard or mouse lately. libxcb, libxcb-res (X-Resource: the pid of
// a window's client, told by the server rather than claimed by the client) and libxcb-sync (the
// IDLETIME counter with an alarm: idle and back, as events, with no polling). In C because the
// SYNC alarm's value lists and the X-Resource replies are variable-length structures; the Swift
// side (LinuxSupport's X11FocusWatch) sees only this small interface.
#ifndef CXCB_H
#define CXCB_H

#include <stddef.h>
#include <stdint.h>

typedef struct cxcb_session cxcb_session;

/// What `cxcb_drain` saw, as bits.
enum {
    CXCB_ACTIVE_WINDOW_CHANGED = 1,
    CXCB_BECAME_IDLE = 2,
    CXCB_BECAME_ACTIVE = 4,
    CXCB_CONNECTION_ERROR = 8,
    /// `_NET_SUPPORTED` changed (a window manager started or went): ask `cxcb_reads_focus` again.
    CXCB_SUPPORT_CHANGED = 16,
    /// A top-level window was mapped, unmapped, destroyed or reparented.
    CXCB_WINDOWS_CHANGED = 32,
    /// A pointer button was pressed or a wheel turned (XInput 2's raw event): see
    /// `cxcb_window_under_pointer`.
    CXCB_POINTER_USED = 64,
    /// The pointer moved (XInput 2's raw event), while `cxcb_watch_motion` has it heard.
    CXCB_POINTER_MOVED = 128,
};

/// Speaks X11 through a relay over a copy of `fd` (a connected socket; the caller keeps and closes
/// its own; the relay bounds what the server sends: see relay.h), with a
/// MIT-MAGIC-COOKIE-1 when `cookie` is not NULL. Blocks until the server answers the setup: call it
/// where a server that never answers holds nothing else up, and `shutdown(fd)` to give up. NULL on
/// failure, with the reason in `error`.
cxcb_session *cxcb_open(int fd, const uint8_t *cookie, size_t cookie_length, int screen, char *error,
                        size_t error_length);

/// How many screens the display has (each its own root window, windows and window manager), at
/// most 16.
int cxcb_screens(cxcb_session *session);

/// The connection's descriptor, to poll for events.
int cxcb_fd(const cxcb_session *session);

/// The thread id of the relay the server's bytes pass through (0 until it has started).
int cxcb_relay_thread(cxcb_session *session);

/// Asks for `_NET_ACTIVE_WINDOW` changes on the root window and, when `idle_ms` > 0 and the server
/// has SYNC's IDLETIME counter, for an alarm after `idle_ms` without input. Returns 1 when the
/// window manager announces `_NET_ACTIVE_WINDOW` (EWMH), 0 when not, -1 on a connection error.
int cxcb_watch(cxcb_session *session, uint32_t idle_ms);

/// Whether the window manager announces `_NET_ACTIVE_WINDOW` now (a round trip).
int cxcb_reads_focus(cxcb_session *session);

/// Hears the pointer's raw motion from now on (`on` 1) or no more (0): a mouse moves a thousand
/// times a second, and the caller listens for the first move of each second only. Buttons and
/// wheels stay heard. Returns -1 on a connection error, 0 when the server has no XInput 2.
int cxcb_watch_motion(cxcb_session *session, int on);

/// Whether the idle alarm is set up (the server has SYNC's IDLETIME).
int cxcb_has_idle_alarm(const cxcb_session *session);

/// Reads every event already received, without blocking; returns what happened (bits above).
int cxcb_drain(cxcb_session *session);

/// Takes only the events libxcb already read from the socket and holds (never reads it). Every
/// request with a reply reads whatever the server sent before the reply, and libxcb keeps the
/// events among it: the socket has nothing more to tell `poll`, so these are taken before it
/// sleeps, or a focus change told during a round trip waits for the server's next event.
int cxcb_drain_queued(cxcb_session *session);

/// The window `_NET_ACTIVE_WINDOW` names now (0: none or unknown).
uint32_t cxcb_active_window(cxcb_session *session);

/// The pid of the client that owns `window`, as the server knows it (X-Resource); -1 when the
/// server cannot tell (a remote client, no X-Resource).
int32_t cxcb_window_pid(cxcb_session *session, uint32_t window);

/// The window that has the keyboard focus (the server's own state, which `_NET_ACTIVE_WINDOW`
/// only reports); with PointerRoot or the root window as the focus, the deepest window under the
/// pointer (where the keys go then); 0 for none.
uint32_t cxcb_input_focus(cxcb_session *session);

/// The deepest window under the pointer (0: the root window, or none): the one its clicks go to.
uint32_t cxcb_window_under_pointer(cxcb_session *session);

/// The deepest window shown under the pointer, whatever its input shape (a window that lets
/// clicks through to the one below still shows there); 0: the root window, or none.
uint32_t cxcb_window_shown_under_pointer(cxcb_session *session);

/// The pid of the client whose window frames `window` (its top-level ancestor's, when another
/// client's: a reparenting window manager's); -1 when none does or the server cannot tell.
int32_t cxcb_frame_owner_pid(cxcb_session *session, uint32_t window);

/// Whether another client holds the keyboard (grabbed: the keys go to it, wherever the focus is),
/// asked of the server with a grab that cannot succeed. 0: nobody does. 1: one does, and the
/// focus events its grab made name `*window` (its window, or one it is inside), or none (0: the
/// grab is on the focused window itself, which made no such event). 2: one does, and where the
/// keys go is not known (the root window, a window not watched yet): every client may have them.
int cxcb_keyboard_grab(cxcb_session *session, uint32_t *window);

/// Whether a window exists, is not the root window, and is viewable (mapped, its ancestors too).
int cxcb_is_viewable(cxcb_session *session, uint32_t window);

/// The viewable top-level windows and their viewable children (a frame's client), at most
/// `capacity`; returns how many were written.
size_t cxcb_mapped_windows(cxcb_session *session, uint32_t *windows, size_t capacity);

/// Asks the window manager to make `window` active (EWMH's client message, as a taskbar does).
void cxcb_request_activation(cxcb_session *session, uint32_t window);

/// The viewable windows inside `window` that other clients made (a window reparented into it: what
/// shows there is theirs too), up to `capacity`; at most 256 windows are looked at. `*complete` is
/// 0 when some were left unlooked at (a window filled with decoys).
size_t cxcb_foreign_windows_inside(cxcb_session *session, uint32_t window, uint32_t *windows, size_t capacity,
                                   int *complete);

/// The pids of the display's clients, as the server knows them (X-Resource), at most `capacity`;
/// returns how many were written (0 without X-Resource).
size_t cxcb_client_pids(cxcb_session *session, int32_t *pids, size_t capacity);

/// Asks the IDLETIME counter itself whether idle changed (CXCB_BECAME_IDLE, CXCB_BECAME_ACTIVE or
/// 0) and sets the alarm again: what a watch does now and then while idle, in case a client of
/// the display tampered with the alarm.
int cxcb_check_idle(cxcb_session *session);

/// Whether the session is idle, as last known.
int cxcb_is_idle(const cxcb_session *session);

/// Why the connection was ended by the agent's side (a server out of bounds), or "".
void cxcb_problem(cxcb_session *session, char *out, size_t length);

/// Milliseconds since the last input, from IDLETIME; -1 when unknown.
int64_t cxcb_idle_time(cxcb_session *session);

/// One request and its reply, asking nothing of use: whether the server answers at all (a client
/// that grabbed the server has it answer no one else).
void cxcb_round_trip(cxcb_session *session);

/// Whether the connection is in error (the server went away).
int cxcb_has_error(const cxcb_session *session);

void cxcb_close(cxcb_session *session);

#endif
