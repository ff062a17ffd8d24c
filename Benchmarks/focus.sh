#!/bin/bash
# `make bench`, focus half: a display of its own (Xvfb with openbox and two xterms), watched by
# the agent's X11 watch and by a once-a-second poller (ActivityWatch's way) in the same run; see
# Benchmarks/ScreenTimeBenchmarks/FocusBenchmark.swift. About 100 s. Figures are printed, never
# asserted.
set -euo pipefail
BIN=${1:?usage: focus.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "focus benchmark skipped: needs root (other users' displays)"; exit 0; fi
mkdir -p /tmp/.X11-unix && chmod 1777 /tmp/.X11-unix
DISPLAY_NUMBER=$((1000 + RANDOM % 500))
while [ -e "/tmp/.X11-unix/X$DISPLAY_NUMBER" ]; do DISPLAY_NUMBER=$((1000 + RANDOM % 500)); done
export DISPLAY=":$DISPLAY_NUMBER"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  rm -f "/tmp/.X11-unix/X$DISPLAY_NUMBER" "/tmp/.X$DISPLAY_NUMBER-lock"
}
trap cleanup EXIT
Xvfb "$DISPLAY" -screen 0 800x600x24 -nolisten tcp >/dev/null 2>&1 & PIDS+=($!)
for _ in $(seq 200); do xdotool getdisplaygeometry >/dev/null 2>&1 && break; sleep 0.05; done
HOME=/tmp openbox >/dev/null 2>&1 & PIDS+=($!)
for _ in $(seq 200); do xprop -root _NET_SUPPORTED 2>/dev/null | grep -q _NET_ACTIVE_WINDOW && break; sleep 0.05; done
xterm -class BenchOne -e sleep 600 & PIDS+=($!)
xterm -class BenchTwo -e sleep 600 & PIDS+=($!)
for _ in $(seq 200); do
  ONE=$(xdotool search --onlyvisible --class BenchOne 2>/dev/null | head -1 || true)
  TWO=$(xdotool search --onlyvisible --class BenchTwo 2>/dev/null | head -1 || true)
  [ -n "$ONE" ] && [ -n "$TWO" ] && break
  sleep 0.05
done
"$BIN/ScreenTimeBenchmarks" focus "$DISPLAY" "$ONE" "$TWO"
