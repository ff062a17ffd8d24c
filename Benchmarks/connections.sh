#!/bin/bash
# `make bench`, connections: the web shield at the connection measured beside its baseline, in
# the same run, in a network namespace of its own.
#
#  1. Bulk download (iperf3 -R, 5 s, as a filtered child) with no agent (the baseline) and with
#     the child authorized: judged flows stay in the kernel, so the two should match.
#  2. Many short TLS connections, one after another (connect, a captured curl ClientHello, the
#     server's first byte), connect-to-first-byte p50/p99 and connections a second: someone not
#     filtered (nobody) and the authorized child, alternating connection by connection in the
#     same run (the baseline and the subject meet the same moments of load; on this 2-core
#     machine separate runs differ by more than the filter's cost), and the median over the
#     pairs of the child's time minus the other's. The child's connections have the agent judge
#     each opening (the first hello through the queue, the same hello after let go in the kernel
#     by the hello fast path, its copy judged from the log; a SYN only when it goes to an address
#     in the kernel set of those learned for shielded names; the server's acknowledgement of the
#     hello copied to the log, not queued); then the floor of a hello judged in the kernel (her
#     TLS connections let go, unjudged, by a rule before the agent's: a measurement, not a
#     ruleset); then as before the hello fast path (every hello through the queue: its rules
#     taken out); then as before the log (the acknowledgement through the queue too); then as
#     before the kernel set as well (every SYN through the queue too: the set's rules taken out).
#
# Needs root (namespaces, iptables, users). Figures are printed, never asserted.
set -euo pipefail
BIN=${1:?usage: connections.sh BIN_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "connection benchmark skipped: needs root"; exit 0; fi

RUNS=${RUNS:-3}; COUNT=${COUNT:-2000}
. "$HERE/agent-in-namespace.sh" stc
start_tls_server
# The hello fast path is on (the default); a row takes its rules out (every hello queued).
in_ns iperf3 -s -D -B 10.1.1.1 -p 5201 --logfile $DIR/iperf.log
HELLO=$HERE/../Tests/ScreenTimeCoreTests/Fixtures/ClientHellos/curl.bin

bulk() { as_kid iperf3 -c 10.1.1.1 -p 5201 -R -t 5 -J | /usr/bin/python3 -c \
  'import json,sys; print("%.0f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The packets the agent's queue rules sent it so far (IPv4): the trips through the queue.
queued() { in_ns iptables -w -vxnL $CHAIN-filter 2>/dev/null | awk '/NFQUEUE/ {n += $1} END {print n + 0}'
  in_ns iptables -w -vxnL $CHAIN-in 2>/dev/null | awk '/NFQUEUE/ {n += $1} END {print n + 0}'; }
# A paired run (someone not filtered, the child), with the child's trips through the queue
# appended to its line ("N.NN trips/conn").
BASE=$(id -u nobody); KIDUID=$(id -u $KID)
connects() {
  local before after out
  before=$(queued | awk '{n += $1} END {print n}')
  out=$(in_ns /usr/bin/python3 $HERE/connect-latency.py 10.1.1.1 443 $HELLO $COUNT $BASE $KIDUID)
  after=$(queued | awk '{n += $1} END {print n}')
  trips=$(awk -v a="$after" -v b="$before" -v c="$COUNT" 'BEGIN {printf "%.2f queue trips/conn", (a - b) / c}')
  echo "$out" | sed "/^B /s|\$| $trips|"
}

# Bulk: baseline and filtered alternate, run after run, so that the machine's load falls on both.
field() { awk -v n="$1" '{print $n}'; }
line_of() { grep "^$1 " | sed "s/^$1 //"; }
plain=(); judged=(); base_lat=(); judged_lat=(); judged_diff=(); ack_lat=(); ack_diff=(); syn_lat=(); syn_diff=()
floor_lat=(); floor_diff=(); queue_lat=(); queue_diff=(); programs=()
start_agent
for _ in $(seq 1 $RUNS); do
  plain+=("$(bulk)")
  st authorize --child $KID
  st shield --user $KID --domain blocked.test
  judged+=("$(bulk)")
  program_times connects; out=$PROGRAM_OUTPUT; programs+=("$PROGRAM_TIMES")
  base_lat+=("$(line_of A <<<"$out")"); judged_lat+=("$(line_of B <<<"$out")"); judged_diff+=("$(line_of B-A <<<"$out")")
  # The floor of a hello judged in the kernel (a measurement, not a ruleset: nothing is judged):
  # her TLS connections marked PASSED and let go by two rules put just where her rules would send
  # the hello to the filter chain, so that it walks every rule before that but makes no trip.
  passed=$(in_ns iptables -w -S $CHAIN | grep -- '-p tcp -m connmark --mark .* -j RETURN' | head -1 |
    sed 's/.*--mark \([^/ ]*\).*/\1/')
  # (Before her hello fast path's rule, if the agent has one; else her rule to the filter chain for
  # the rest of her traffic: with a limit, or, with none, alone.)
  n=$(in_ns iptables -w -S $CHAIN | grep '^-A' | grep -n -E -- "--uid-owner $KIDUID .*-m bpf .*-j MARK" |
    head -1 | cut -d: -f1)
  [ -n "$n" ] || n=$(in_ns iptables -w -S $CHAIN | grep '^-A' |
    grep -n -E -- "--uid-owner $KIDUID (-m limit .*)?-j $CHAIN-filter" | grep -v -- '--dport' | head -1 | cut -d: -f1)
  if [ -n "$n" ] && [ -n "$passed" ]; then
    for target in RETURN "CONNMARK --set-xmark $passed/0xfff0000"; do
      in_ns iptables -w -I $CHAIN "$n" -p tcp -m tcp --dport 443 -m owner --uid-owner $KIDUID -j $target
    done
    out=$(connects)
    floor_lat+=("$(line_of B <<<"$out")"); floor_diff+=("$(line_of B-A <<<"$out")")
    in_ns iptables -w -D $CHAIN "$n"; in_ns iptables -w -D $CHAIN "$n"
  else
    floor_lat+=("(not measured: her rule to the filter chain or the PASSED rule not found)"); floor_diff+=("p50 +0 µs")
  fi
  # The same, with every hello through the queue, as before the hello fast path: its rules taken
  # out (the agent puts them back with its next rules).
  # (By number, last first: a rule naming a pinned program is found only while it is pinned.)
  hellos=$(in_ns iptables -w -S $CHAIN | grep '^-A' |
    grep -n -E -- '-m bpf .*-j MARK|-p tcp -m mark --mark .*-j (NFLOG|CONNMARK|ACCEPT)' | cut -d: -f1 | sort -rn || true)
  if [ -n "$hellos" ]; then
    for number in $hellos; do in_ns iptables -w -D $CHAIN "$number"; done
    out=$(connects)
    queue_lat+=("$(line_of B <<<"$out")"); queue_diff+=("$(line_of B-A <<<"$out")")
  else
    queue_lat+=("(no hello fast path: every hello went through the queue above)"); queue_diff+=("p50 +0 µs")
  fi
  # The same, with the server's acknowledgement of the hello through the queue as well, as before
  # the log: the agent's rule that copies it to the log turned back into the two that queue it.
  rules=$(in_ns iptables -w -S $CHAIN-in | grep '^-A')
  # (The first: a queued opening's; the hello fast path's, after it, is the kernel's to pass.)
  n=$(grep -n -- '-j NFLOG' <<<"$rules" | head -1 | cut -d: -f1)
  watched=$(grep -- '-j NFLOG' <<<"$rules" | head -1 | sed 's/^-A [^ ]* //; s/ -j NFLOG.*//')
  if [ -n "$n" ]; then
    in_ns iptables -w -R $CHAIN-in "$n" $watched -j CONNMARK --restore-mark --nfmask 0xff0000 --ctmask 0xff0000
    in_ns iptables -w -I $CHAIN-in $((n + 1)) ${watched/-m connmark/-m mark} -j NFQUEUE --queue-num $QUEUE
    out=$(connects)
    ack_lat+=("$(line_of B <<<"$out")"); ack_diff+=("$(line_of B-A <<<"$out")")
  else
    ack_lat+=("(no log rule: the agent queues the acknowledgement already)"); ack_diff+=("p50 +0 µs")
  fi
  # The same, with the SYN fast path's rules taken out too: every SYN through the queue, as before
  # the kernel set (the agent puts them back with its next rules).
  in_ns iptables -w -S $CHAIN | grep -- '--match-set' | sed 's/^-A /-D /' | while read -r rule; do
    eval in_ns iptables -w "$rule"; done
  out=$(connects)
  syn_lat+=("$(line_of B <<<"$out")"); syn_diff+=("$(line_of B-A <<<"$out")")
  st revoke --user $KID
done
p=$(printf "%s\n" "${plain[@]}" | median); j=$(printf "%s\n" "${judged[@]}" | median)
echo "== bulk download as a child (iperf3 -R over loopback, $RUNS alternating runs of 5 s, median Mbit/s)"
printf "  %-44s %8s Mbit/s  (runs: %s)\n" "not filtered (baseline)" "$p" "${plain[*]}"
printf "  %-44s %8s Mbit/s  (runs: %s)\n" "filtered, the flow judged once" "$j" "${judged[*]}"
awk -v a="$j" -v b="$p" 'BEGIN {if (b > 0) printf "  filtered/unfiltered: %.2f×\n", a/b}'
echo "== short TLS connections, $COUNT pairs one after another per run (connect to the server's first byte; someone not filtered and the child, alternating)"
for i in $(seq 0 $((RUNS - 1))); do
  printf "  run %d %-38s %s\n" $((i + 1)) "not filtered (baseline)" "${base_lat[$i]}"
  printf "  run %d %-38s %s  (paired: %s)\n" $((i + 1)) "filtered: hello judged" "${judged_lat[$i]}" "${judged_diff[$i]}"
  printf "  run %d %-38s %s  (paired: %s)\n" $((i + 1)) "the hello let go in the kernel (floor)" "${floor_lat[$i]}" "${floor_diff[$i]}"
  printf "  run %d %-38s %s\n" $((i + 1)) "the kernel's programs, hello judged" "${programs[$i]:-n/a}"
  printf "  run %d %-38s %s  (paired: %s)\n" $((i + 1)) "filtered, every hello through the queue" "${queue_lat[$i]}" "${queue_diff[$i]}"
  printf "  run %d %-38s %s  (paired: %s)\n" $((i + 1)) "filtered, acknowledgement queued too" "${ack_lat[$i]}" "${ack_diff[$i]}"
  printf "  run %d %-38s %s  (paired: %s)\n" $((i + 1)) "filtered, and every SYN queued too" "${syn_lat[$i]}" "${syn_diff[$i]}"
done
pm=$(printf "%s\n" "${base_lat[@]}" | field 2 | median); jm=$(printf "%s\n" "${judged_lat[@]}" | field 2 | median)
p9=$(printf "%s\n" "${base_lat[@]}" | field 5 | median); j9=$(printf "%s\n" "${judged_lat[@]}" | field 5 | median)
pr=$(printf "%s\n" "${base_lat[@]}" | field 7 | median); jr=$(printf "%s\n" "${judged_lat[@]}" | field 7 | median)
dm=$(printf "%s\n" "${judged_diff[@]}" | field 2 | tr -d + | median)
printf "  medians of the runs: p50 %s → %s µs, p99 %s → %s µs, %s → %s connections/s\n" "$pm" "$jm" "$p9" "$j9" "$pr" "$jr"
printf "  added by the filter, the median over pairs (median of the runs): %+d µs\n" "$dm"
am=$(printf "%s\n" "${ack_diff[@]}" | field 2 | tr -d + | median)
sm=$(printf "%s\n" "${syn_diff[@]}" | field 2 | tr -d + | median)
fm=$(printf "%s\n" "${floor_diff[@]}" | field 2 | tr -d + | median)
printf "  her hello let go, unjudged, by a rule before the agent's (the floor of a hello judged in the kernel): %+d µs\n" "$fm"
qm=$(printf "%s\n" "${queue_diff[@]}" | field 2 | tr -d + | median)
printf "  every hello through the queue (no hello fast path): %+d µs\n" "$qm"
printf "  the server's acknowledgement through the queue too (no log): %+d µs\n" "$am"
printf "  and every SYN through the queue too (no kernel set): %+d µs\n" "$sm"
judged_count=$(grep -c "connection refused" $DIR/agent.log || true)
printf "  (refused while measuring: %s)\n" "$judged_count"
