#!/bin/bash
# `make bench`, scheduler half: how often the agent's activity scheduler wakes while nothing
# happens, with 20 monitors, a daily limit and downtime of a test child whose boundaries are all
# hours away — against a poller that checks its schedules once a second (what Timekpr-nExT and
# most parental tools do), run side by side for the same minute. Then the same with a monitor
# whose interval starts in the middle of the minute, which must cost exactly one wake.
# Counted are the scheduler thread's voluntary context switches, read from /proc: each return
# from its wait, and each wait on the disk while it writes what a boundary made owed. Figures are
# printed, never asserted. About 2.5 minutes.
set -euo pipefail
BIN=${1:?usage: scheduler.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "scheduler benchmark skipped: needs root (a test child, the agent)"; exit 0; fi
SECONDS_IDLE=${SECONDS_IDLE:-60}
source "$(dirname "$0")/agent-in-namespace.sh" stsch
cat > $DIR/conf.json <<JSON
{"dnsQueue": $QUEUE, "firewallChain": "$CHAIN", "freezerGroup": "screentime-bench-$ID",
 "categoriesDirectory": "$DIR/categories", "extensionUser": "nobody", "logindBus": "", "focusSocket": "",
 "browserPolicies": ""}
JSON
start_agent
AGENT=$(cat $DIR/agent.pid)
st authorize --child $KID
# Boundaries hours away whatever the time: intervals starting 6 to 9 hours from now.
for i in $(seq 0 19); do
  from=$(date -d "+$((6 + i % 3)) hours" +%H:%M); to=$(date -d "+$((6 + i % 3)) hours 30 min" +%H:%M)
  st monitor start "m$i" --user $KID --client org.example.Bench --from "$from" --to "$to" --repeats --warning 5m
done
st limit --user $KID --app-category Game --daily 1h
st downtime --user $KID --from "$(date -d '+5 hours' +%H:%M)" --to "$(date -d '+6 hours' +%H:%M)"

thread_of() {
  for task in /proc/$AGENT/task/*; do
    [ "$(cat $task/comm 2>/dev/null)" = "screentime.time" ] && { basename $task; return; }
  done
}
switches() { awk '/^voluntary_ctxt_switches/ {print $2}' /proc/$AGENT/task/$1/status; }
TID=$(thread_of)
[ -n "$TID" ] || { echo "no scheduler thread found"; exit 1; }

# The poller: a loop that looks at its schedules once a second (its wake-ups counted the same way).
poller() { while :; do sleep 1; done; }
poller & POLLER=$!
trap 'kill $POLLER 2>/dev/null || true; cleanup' EXIT
poller_switches() { awk '/^voluntary_ctxt_switches/ {print $2}' /proc/$POLLER/status; }

measure() {
  local seconds=$1
  local a0 p0 a1 p1 cpu0 cpu1
  a0=$(switches $TID); p0=$(poller_switches)
  cpu0=$(awk '{print $14 + $15}' /proc/$AGENT/task/$TID/stat)
  sleep "$seconds"
  a1=$(switches $TID); p1=$(poller_switches)
  cpu1=$(awk '{print $14 + $15}' /proc/$AGENT/task/$TID/stat)
  echo "$((a1 - a0)) $((p1 - p0)) $((cpu1 - cpu0))"
}

echo "scheduler wake-ups in ${SECONDS_IDLE} s, 22 monitors of one child (20 of a guardian app, a limit, downtime), no boundary due:"
read -r agent poll ticks < <(measure "$SECONDS_IDLE")
printf "  %-44s %6s wakes  (%s clock ticks of CPU)\n" "agent's scheduler (wall-clock timer)" "$agent" "$ticks"
printf "  %-44s %6s wakes\n" "baseline: a poller checking once a second" "$poll"

# One boundary inside the next minute: a monitor starting at the next whole minute.
next=$(date -d '+1 minute' +%H:%M); until=$(date -d '+31 minutes' +%H:%M)
st monitor start boundary --user $KID --from "$next" --to "$until" --repeats
sleep 1
left=$(( 60 - $(date +%-S) + 5 ))
read -r agent poll ticks < <(measure "$left")
printf "%s\n" "with one interval starting at $next (${left} s measured):"
printf "  %-44s %6s switches  (%s clock ticks of CPU; the boundary, and its writes)\n" "agent's scheduler" "$agent" "$ticks"
printf "  %-44s %6s wakes\n" "baseline: a poller checking once a second" "$poll"
SCREENTIME_SOCKET=$DIR/s.sock $BIN/screentime monitor list --user $KID | grep -A2 "screentime/boundary" | sed 's/^/  /'
