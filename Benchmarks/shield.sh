#!/bin/bash
# `make bench`, shield half: from the child starting a shielded program to the shield window being
# on its screen (the window manager listing a window with the shield's title), 20 times, beside
# the same window started directly by the child with the same content (what the toolkit costs by
# itself, with no agent in between). A display of the child's own (Xvfb, openbox). p50, p90, max.
# Needs root (a test child, the agent, its launcher). Figures are printed, never asserted.
set -euo pipefail
BIN=${1:?usage: shield.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "shield benchmark skipped: needs root"; exit 0; fi
HERE=$(cd "$(dirname "$0")" && pwd)
ID=$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
KID=stskid$ID; DIR=/tmp/screentime-bench-$ID; GROUP=screentime-bench-$ID
RUNS=${RUNS:-20}
mkdir -p $DIR/data/applications $DIR/bin /tmp/.X11-unix && chmod 1777 /tmp/.X11-unix
chmod 755 $DIR $DIR/bin
DISPLAY_NUMBER=$((1500 + RANDOM % 500))
while [ -e "/tmp/.X11-unix/X$DISPLAY_NUMBER" ]; do DISPLAY_NUMBER=$((1500 + RANDOM % 500)); done
cleanup() {
  [ -f $DIR/agent.pid ] && kill -9 "$(cat $DIR/agent.pid)" 2>/dev/null || true
  pkill -KILL -u $KID 2>/dev/null || true
  $BIN/screentimed --remove-firewall --config $DIR/conf.json --state-dir $DIR/state --log-level error 2>/dev/null || true
  for g in /sys/fs/cgroup/unified/$GROUP /sys/fs/cgroup/$GROUP; do
    [ -d $g/frozen ] && { echo 1 > $g/frozen/cgroup.kill; sleep 0.2; rmdir $g/frozen; rmdir $g; } 2>/dev/null || true
  done
  rm -f "/tmp/.X11-unix/X$DISPLAY_NUMBER" "/tmp/.X$DISPLAY_NUMBER-lock"
  userdel $KID 2>/dev/null || true
  # The DNS fast path's bpf file system, which the agent killed above leaves mounted in $DIR.
  awk -v d="$DIR/" 'index($2, d) == 1 {print $2}' /proc/mounts | xargs -r -n1 umount -l
  rm -rf $DIR
}
trap cleanup EXIT
useradd -M -N -s /bin/sh $KID
cc -O2 -o $DIR/bin/shield-latency "$HERE/shield-latency.c" -lxcb
printf 'int main(void) { for (;;) { } }\n/* shielded game %s */\n' $ID > $DIR/game.c
cc -O2 -o $DIR/bin/game $DIR/game.c
printf '[Desktop Entry]\nType=Application\nName=Bench Game\nExec=%s\nCategories=Game;\n' $DIR/bin/game \
  > $DIR/data/applications/org.example.BenchGame.desktop
as_kid() { setpriv --reuid=$KID --regid=users --init-groups -- "$@"; }
export DISPLAY=:$DISPLAY_NUMBER
as_kid Xvfb $DISPLAY -screen 0 800x600x24 -nolisten tcp -noreset >/dev/null 2>&1 &
for _ in $(seq 200); do xdotool getdisplaygeometry >/dev/null 2>&1 && break; sleep 0.05; done
as_kid env HOME=/tmp openbox >/dev/null 2>&1 &
for _ in $(seq 200); do xprop -root _NET_SUPPORTED 2>/dev/null | grep -q _NET_ACTIVE_WINDOW && break; sleep 0.05; done
QUEUE=$((2000 + RANDOM % 50000))
cat > $DIR/conf.json <<JSON
{"guardianGroup": "root", "categoriesDirectory": "$DIR/categories", "bypassList": "$DIR/none.list",
 "dnsQueue": $QUEUE, "firewallChain": "sts$ID", "freezerGroup": "$GROUP", "browserPolicies": "",
 "extensionUser": "nobody", "logindBus": "", "focusSocket": ""}
JSON
XDG_DATA_DIRS=$DIR/data $BIN/screentimed --config $DIR/conf.json --state-dir $DIR/state --socket $DIR/s.sock \
  </dev/null >/dev/null 2>>$DIR/agent.log &
echo $! > $DIR/agent.pid
for _ in $(seq 1 2000); do SCREENTIME_SOCKET=$DIR/s.sock $BIN/screentime ping >/dev/null 2>&1 && break; sleep 0.005; done
st() { SCREENTIME_SOCKET=$DIR/s.sock $BIN/screentime "$@" >/dev/null; }
st authorize --child $KID
st shield --user $KID --app org.example.BenchGame
for _ in $(seq 100); do
  SCREENTIME_SOCKET=$DIR/s.sock $BIN/screentime status --user $KID | grep -q "x11 :$DISPLAY_NUMBER" && break
  sleep 0.1
done
summary() { # milliseconds on stdin → p50 p90 max
  grep -v timeout | sort -n | awk '{v[NR]=$1} END {
    printf "%4d runs  p50 %6.1f ms  p90 %6.1f ms  max %6.1f ms\n", NR, v[int((NR-1)*0.5)+1], v[int((NR-1)*0.9)+1], v[NR] }'
}
echo "shield window on the screen after the child starts a shielded program ($RUNS starts, display :$DISPLAY_NUMBER):"
printf "  %-52s" "exec of the shielded program → shield window listed"
$DIR/bin/shield-latency $DISPLAY "Bench Game is shielded" $RUNS setpriv --reuid=$KID --regid=users --init-groups -- \
  $DIR/bin/game | summary
CONTENT='{"kind":"application","name":"Bench Game","configuration":{"secondaryButtonLabel":{"text":"Ask for more time"}}}'
printf '%s\n' "$CONTENT" > $DIR/content.json
chmod 644 $DIR/content.json
printf "  %-52s" "baseline: the same window started directly"
$DIR/bin/shield-latency $DISPLAY "Bench Game is shielded" $RUNS setpriv --reuid=$KID --regid=users --init-groups -- \
  env -i DISPLAY=$DISPLAY HOME=/tmp PATH=/usr/bin:/bin GSK_RENDERER=cairo GSETTINGS_BACKEND=memory GTK_A11Y=none \
  DBUS_SESSION_BUS_ADDRESS=disabled: sh -c "exec $BIN/screentime-shield < $DIR/content.json" | summary
