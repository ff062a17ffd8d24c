#!/bin/bash
# The agent's CPU while a child keeps many displays it cannot read, on an INSTALLED agent (not
# part of `make bench`): her processes hold many sockets (20 processes of 4,000 socket pairs, what
# each look at her connections must go through), then 120 sockets of hers in /tmp/.X11-unix that
# close root's connections (each a display counted the conservative way, looked at every 3 s).
# Printed side by side: the agent's CPU over 30 s with the sockets alone (the baseline), then
# with the displays too.
#
#   sudo Benchmarks/unreadable-displays.sh CHILD      CHILD: an account authorized as a child
set -euo pipefail
child=${1:?usage: unreadable-displays.sh CHILD}
first=${FIRST:-7600}
dir=$(mktemp -d)
chmod 755 "$dir"
cleanup() {
    pkill -u "$child" -f "$dir/" >/dev/null 2>&1 || true
    for n in $(seq "$first" $((first + 119))); do rm -f "/tmp/.X11-unix/X$n"; done
    rm -rf "$dir"
}
trap cleanup EXIT
cat > "$dir/hog.py" <<'EOF'
import os, resource, socket, sys, time
procs, pairs = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE, (pairs * 2 + 64, pairs * 2 + 64))
for _ in range(procs):
    if os.fork() == 0:
        held = [socket.socketpair() for _ in range(pairs)]
        while True:
            time.sleep(3600)
while True:
    time.sleep(3600)
EOF
cat > "$dir/displays.py" <<'EOF'
import os, selectors, socket, struct, sys
first, count = int(sys.argv[1]), int(sys.argv[2])
chosen = selectors.DefaultSelector()
kept = []
for number in range(first, first + count):
    path = "/tmp/.X11-unix/X%d" % number
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    listener.setblocking(False)
    chosen.register(listener, selectors.EVENT_READ)
while True:
    for key, _ in chosen.select():
        try:
            connection, _ = key.fileobj.accept()
        except OSError:
            continue
        uid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        if uid == 0:
            connection.close()
        else:
            kept.append(connection)
EOF
as_child() { setpriv --reuid="$child" --regid=users --init-groups -- "$@"; }
agent=$(pgrep -x screentimed | head -n 1)
hz=$(getconf CLK_TCK)
cpu() {
    local before after
    before=$(awk '{print $14 + $15}' "/proc/$agent/stat")
    sleep 30
    after=$(awk '{print $14 + $15}' "/proc/$agent/stat")
    echo "$(((after - before) * 1000 / hz))"
}
as_child /usr/bin/python3 "$dir/hog.py" 20 4000 >/dev/null 2>&1 &
sleep 15
baseline=$(cpu)
as_child /usr/bin/python3 "$dir/displays.py" "$first" 120 >/dev/null 2>&1 &
sleep 15
sessions=$(screentime status --user "$child" --json | grep -c '"display" : ":7[67][0-9][0-9]"' || true)
with=$(cpu)
echo "agent CPU over 30 s: her 80,000 sockets alone ${baseline} ms; with 120 displays it cannot read ($sessions found) ${with} ms"
