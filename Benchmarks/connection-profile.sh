#!/bin/bash
# Where the agent's time goes on a filtered child's new TLS connections: the CPU each of its
# threads spends per connection (from /proc, over COUNT connections of the child paired with as
# many of someone not filtered, as connections.sh makes them), and `perf record -g` of the agent
# over the same connections: the share of its samples in the verdict's reinjection (the packet's
# way on to the server, which runs in the agent's thread), in switching tasks (its threads'
# sleeps and wakeups), in the rules, in its own Swift code and the Swift runtime, in malloc and
# free; then its busiest symbols. Not part of `make bench` (it needs perf); run it by hand:
# Benchmarks/connection-profile.sh BIN_DIR.
set -euo pipefail
BIN=${1:?usage: connection-profile.sh BIN_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "connection profile skipped: needs root"; exit 0; fi
command -v perf >/dev/null || { echo "connection profile skipped: no perf (Debian's linux-perf)"; exit 0; }
COUNT=${COUNT:-3000}
. "$HERE/agent-in-namespace.sh" stq
start_tls_server
start_agent
st authorize --child $KID
st shield --user $KID --domain blocked.test
PID=$(cat $DIR/agent.pid)
# Each thread's name and its user + system time so far, in clock ticks.
cpu() { for t in /proc/$PID/task/*; do echo "$(tr ' ' _ <$t/comm) $(awk '{print $14 + $15}' $t/stat)"; done | sort; }
cpu >$DIR/cpu.before
perf record -q -g -p $PID -o $DIR/perf.data -- sleep 1000 >/dev/null 2>&1 &
profiler=$!
in_ns /usr/bin/python3 $HERE/connect-latency.py 10.1.1.1 443 \
  $HERE/../Tests/ScreenTimeCoreTests/Fixtures/ClientHellos/curl.bin $COUNT "$(id -u nobody)" "$(id -u $KID)" |
  sed 's/^A /  not filtered     /; s/^B /  the child        /; s/^B-A /  added (paired)   /'
kill -INT $profiler; wait $profiler || true
cpu >$DIR/cpu.after
echo "the agent's threads, CPU per filtered connection:"
join $DIR/cpu.before $DIR/cpu.after | awk -v c=$COUNT -v hz="$(getconf CLK_TCK)" \
  '$3 > $2 {printf "  %-22s %6.0f µs\n", $1, ($3 - $2) * 1e6 / hz / c}'
share() { perf report -i $DIR/perf.data --children --sort sym --stdio -g none 2>/dev/null |
  awk -v s="$1" '$NF ~ s {n += $1} END {printf "%5.1f%%", n}'; }
own() { perf report -i $DIR/perf.data --no-children --sort sym --stdio -g none 2>/dev/null |
  awk -v s="$1" '$NF ~ s {n += $1} END {printf "%5.1f%%", n}'; }
echo "the agent's samples: the verdict's reinjection and the packet's way on $(share '^nfqnl_reinject$')," \
  "switching tasks $(own '^finish_task_switch')," "the rules $(share '^nft_do_chain')," \
  "its Swift code $(own '^\$s'), the Swift runtime $(own '^swift_')," "malloc and free $(own '^(malloc|_int_free|free|_int_malloc|cfree)$')"
echo "its busiest symbols (their own samples):"
perf report -i $DIR/perf.data --no-children --sort sym --stdio -g none 2>/dev/null | grep '%' | head -12 |
  awk '{printf "  %s %s\n", $1, substr($NF, 1, 100)}'
