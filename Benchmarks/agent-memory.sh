#!/bin/bash
# `make bench`, the agent's memory and wakeups: a release agent with one child authorized and a
# graphical session of the child's open (Xvfb, openbox, two xterms, run as the child), its
# resident memory idle (its own pages, and the pages of its program file it reads), how often it
# wakes while nothing happens, then the same after a minute of the child's use (the window in
# front switched twice a second, 20 programs started a second, a shield and a limit changed).
# Beside it, in the same run, the same agent with no one authorized; then where its resident pages
# are, by file. Figures are printed, never asserted. About 100 s.
set -euo pipefail
BIN=${1:?usage: agent-memory.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "agent memory benchmark skipped: needs root (a test child, the agent)"; exit 0; fi
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/agent-in-namespace.sh" stmem
PIDS=()
DISPLAY_NUMBER=$((1500 + RANDOM % 400))
more_cleanup() {
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  pkill -KILL -u $KID 2>/dev/null || true
  rm -f "/tmp/.X11-unix/X$DISPLAY_NUMBER" "/tmp/.X$DISPLAY_NUMBER-lock"
  cleanup
}
trap more_cleanup EXIT
write_config
# Resident memory: in all, its own pages, the pages of its program and libraries' files it has
# read (shared with every other process that maps them: the Swift runtime's libraries with the
# other screentime programs), and its proportional share (PSS: each shared page divided among its
# users).
memory() {
  local pss
  pss=$(awk '/^Pss:/ {print $2}' /proc/$1/smaps_rollup)
  awk -v pss="$pss" '/^VmRSS/ {t = $2} /^RssAnon/ {a = $2} /^RssFile/ {f = $2}
    END {printf "%5.1f MB (%4.1f MB its own, %4.1f MB pages of program and library files; PSS %4.1f MB)", t / 1024, a / 1024, f / 1024, pss / 1024}' /proc/$1/status
}
# Context switches of each of its threads: "tid count" lines.
switches() {
  for task in /proc/$1/task/*; do
    awk -v t="${task##*/}" '/ctxt_switches/ {s += $2} END {print t, s}' "$task/status" 2>/dev/null || true
  done
}
# Wakeups: its threads' context switches over 10 quiet seconds (a thread started meanwhile counts
# whole; one that ended, not at all).
wakeups() {
  switches $1 > $DIR/switches.before; sleep 10; switches $1 > $DIR/switches.after
  awk 'NR == FNR {before[$1] = $2; next} {n += $2 - before[$1]} END {print n + 0}' $DIR/switches.before $DIR/switches.after
}

start_agent
AGENT=$(cat $DIR/agent.pid)
sleep 3
echo "the agent (release), resident memory and wakeups in 10 quiet seconds:"
printf "  %-40s %s, %s wakeups\n" "no one authorized" "$(memory $AGENT)" "$(wakeups $AGENT)"

st authorize --child $KID
mkdir -p /tmp/.X11-unix && chmod 1777 /tmp/.X11-unix
export DISPLAY=:$DISPLAY_NUMBER
as_kid Xvfb $DISPLAY -screen 0 800x600x24 -nolisten tcp >/dev/null 2>&1 & PIDS+=($!)
for _ in $(seq 200); do in_ns xdotool getdisplaygeometry >/dev/null 2>&1 && break; sleep 0.05; done
as_kid env HOME=$DIR openbox >/dev/null 2>&1 & PIDS+=($!)
as_kid xterm -class MemOne -e sleep 600 & PIDS+=($!)
as_kid xterm -class MemTwo -e sleep 600 & PIDS+=($!)
for _ in $(seq 200); do
  ONE=$(in_ns xdotool search --onlyvisible --class MemOne 2>/dev/null | head -1 || true)
  TWO=$(in_ns xdotool search --onlyvisible --class MemTwo 2>/dev/null | head -1 || true)
  [ -n "$ONE" ] && [ -n "$TWO" ] && break
  sleep 0.05
done
watched=no
for _ in $(seq 100); do
  SCREENTIME_SOCKET=$DIR/s.sock $BIN/screentime status --user $KID 2>/dev/null | grep -q "$DISPLAY" && { watched=yes; break; }
  sleep 0.1
done
[ $watched = yes ] || { echo "  the agent did not find her session on $DISPLAY"; exit 1; }
sleep 3
printf "  %-40s %s, %s wakeups\n" "a child authorized, her session open" "$(memory $AGENT)" "$(wakeups $AGENT)"

# A minute of the child's use.
end=$(( $(date +%s) + 60 )); n=0
while [ "$(date +%s)" -lt $end ]; do
  in_ns xdotool windowactivate $ONE 2>/dev/null || true; sleep 0.25
  in_ns xdotool windowactivate $TWO 2>/dev/null || true; sleep 0.25
  for _ in $(seq 10); do as_kid /bin/true; done
  n=$((n + 1))
  if [ $((n % 20)) -eq 0 ]; then
    st shield --user $KID --domain "site$n.example"
    st limit --user $KID --app-category Game --daily $((n % 50 + 10))m
  fi
done
sleep 3
printf "  %-40s %s, %s wakeups\n" "after a minute of her use" "$(memory $AGENT)" "$(wakeups $AGENT)"
# Where the resident pages are: by file mapped (its program, each library), and its own pages.
echo "  resident, by what is mapped (over 500 kB):"
awk '/^[0-9a-f]+-[0-9a-f]+ / {name = $6 == "" ? "(its own, anonymous)" : $6} /^Rss:/ {r[name] += $2}
  END {for (n in r) if (r[n] > 500) printf "    %6.1f MB  %s\n", r[n] / 1024, n}' /proc/$AGENT/smaps | sort -rn
