#!/bin/bash
# `make bench`, DNS half: the domain shield measured beside its baselines, in the same run.
#
#  1. dnsperf as a filtered child against dnsmasq in a network namespace, with no rules (the
#     baseline), with connection tracking alone (what a PC with any stateful firewall has), as
#     someone not filtered with the agent's rules in (what the rules and connection tracking cost
#     everyone), through the filter (names allowed: each name's first question through the
#     agent's queue, the rest through the DNS fast path in the kernel), the same with every
#     question through the queue (`dnsFastPath` off), and with the agent answering shielded
#     names itself: queries/s, and latency percentiles from a paced run (dnsperf -v per query).
#     The child's DNS rate limit (`dnsRateLimit`, 200 packets/s with bursts of 1,000) is off for
#     these runs (0), in the benchmark's own configuration: they measure the filter, not the
#     limit. Each run is checked: no query lost or dropped by a limit, every filtered query
#     through the agent's queue or its fast path, shielded names answered NXDOMAIN. A run that is not whole says
#     so, loudly, instead of giving a ratio. Then her rate and the rate with no filter in turn,
#     ROUNDS times (5), each round's ratio and their median: the ratio the goal (≥ 0.9×) is read
#     from, as the machine's own rate swings between runs; and beside each, the whole machine's
#     busy time a query answered (/proc/stat), which swings less: what the filter adds a query.
#     Each round also measures the floor: the least any DNS filter in netfilter costs her before
#     it judges anything, when connection tracking is loaded (her connections' shield keeps its
#     verdicts there): one native nftables chain that lets her questions and their answers go
#     untracked, nothing else. The median split of what her filter adds: the floor, the fast
#     path's programs (kernel.bpf_stats_enabled), and the rest (the agent's rules in the raw,
#     mangle and filter tables).
#  2. The default limit, as a browser meets it: a page that looks up 150 names at once (all
#     answered? how long until the last?), two such pages back to back, and a flood (which the
#     limit is there to stop).
#  3. A one-million-domain web category: the agent's start-up with and without it and its memory,
#     beside dnsmasq doing the same blocking with one address=/domain/ line per domain (how
#     CTparental does it): its start-up time and memory.
#
# Needs root (namespaces, iptables, users). Figures are printed, never asserted.
set -euo pipefail
BIN=${1:?usage: dns-filter.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "dns benchmark skipped: needs root"; exit 0; fi

. "$(dirname "$0")/agent-in-namespace.sh" stb

in_ns dnsmasq --no-resolv --no-hosts --bind-interfaces --listen-address=127.0.0.1 --port=53 --user=root \
  --cache-size=0 --address=/allowed.test/10.1.1.1 --address=/blocked.test/10.2.2.2 --pid-file=$DIR/resolver.dnsmasq.pid \
  </dev/null >/dev/null 2>&1
# The filter's own speed: no rate limit (0); the default's for the limit's part.
write_conf() {
  cat > $DIR/conf.json <<JSON
{"guardianGroup": "root", "categoriesDirectory": "$DIR/categories", "bypassList": "$DIR/none.list",
 "dnsQueue": $QUEUE, "firewallChain": "$CHAIN", "browserPolicies": "", "focusSocket": ""$1}
JSON
}
write_conf ', "dnsRateLimit": 0'
for i in $(seq 1 200); do echo "host$i.allowed.test A"; done > $DIR/allowed.txt
for i in $(seq 1 200); do echo "host$i.blocked.test A"; done > $DIR/blocked.txt
for i in $(seq 1 150); do echo "page$i.allowed.test A"; done > $DIR/page.txt
for i in $(seq 151 300); do echo "page$i.allowed.test A"; done > $DIR/page2.txt

# DNS packets the child's rate limit dropped so far (its DROP rules' counters, v4 and v6).
limit_drops() {
  { in_ns iptables-save -c; in_ns ip6tables-save -c; } 2>/dev/null |
    awk '/--dport 53/ && /-j DROP/ {gsub(/[^0-9:]/, "", $1); split($1, c, ":"); n += c[1]} END {print n + 0}'
}
# DNS packets the agent's queue was given so far (its NFQUEUE rules' counters, v4 and v6).
queued() {
  { in_ns iptables-save -c; in_ns ip6tables-save -c; } 2>/dev/null |
    awk '/--dport 53/ && /NFQUEUE/ {gsub(/[^0-9:]/, "", $1); split($1, c, ":"); n += c[1]} END {print n + 0}'
}
# Questions the DNS fast path passed in the kernel so far (the raw table's `bpf` rules' counters:
# the mangle table's rule reads each of them again, and is not counted).
fast_passed() {
  { in_ns iptables-save -c; in_ns ip6tables-save -c; } 2>/dev/null |
    awk '/^\*/ {table = $1} table == "*raw" && /--dport 53/ && /-m bpf/ {
      gsub(/[^0-9:]/, "", $1); split($1, c, ":"); n += c[1]} END {print n + 0}'
}
# busy_ticks: the whole machine's busy time so far, in clock ticks; HZ, ticks a second.
. "$(dirname "$0")/dnsperf-measure.sh"
# Whether every run so far was whole: no query lost, none dropped by the limit (the paced runs'
# apart).
whole=yes
paced_whole=yes
problems=()
# Runs dnsperf as the child with "$@"; sets sent, completed, lost, qps, dropped, through (the
# queries the queue was given), codes (the answers' response codes), and verdict (empty when
# whole, else what went wrong).
dnsperf_run() {
  local before out queued_before fast_before ticks_before ticks_after
  before=$(limit_drops)
  queued_before=$(queued)
  fast_before=$(fast_passed)
  ticks_before=$(busy_ticks)
  out=$(${ASKER:-as_kid} dnsperf -s 127.0.0.1 "$@" 2>&1)
  ticks_after=$(busy_ticks)
  dropped=$(( $(limit_drops) - before ))
  through=$(( $(queued) - queued_before ))
  kernel=$(( $(fast_passed) - fast_before ))
  codes=$(awk '/Response codes:/ {sub(/.*Response codes: */, ""); print}' <<<"$out")
  sent=$(awk '/Queries sent:/ {print $3}' <<<"$out")
  completed=$(awk '/Queries completed:/ {print $3}' <<<"$out")
  lost=$(awk '/Queries lost:/ {print $3}' <<<"$out")
  qps=$(awk '/Queries per second:/ {print $4}' <<<"$out")
  # The machine's busy time a query answered, in µs (dnsperf, her resolver, the kernel's work for
  # both and anything else running).
  busy=$(awk -v t=$((ticks_after - ticks_before)) -v hz="$HZ" -v q="${completed:-0}" \
    'BEGIN {if (q > 0) printf "%.2f", t / hz / q * 1e6}')
  VERBOSE=$out
  verdict=""
  if [ -z "$sent" ] || [ -z "$completed" ]; then verdict="dnsperf said nothing usable: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
  elif [ "$dropped" -gt 0 ]; then verdict="THROTTLED: the rate limit dropped $dropped packets; $completed of $sent answered"
  elif [ "${lost:-0}" -gt 0 ] || [ "$completed" -lt "$sent" ]; then verdict="LOST QUERIES: $completed of $sent answered, ${lost:-?} lost"
  fi
}
# What a measured run must also be ($1: none, queued, judged, refused): unfiltered, each query
# through the agent's queue, each through the queue or passed by the fast path's table (which
# only the queue fills), or each answered NXDOMAIN by the filter. Adds to verdict.
expect_path() {
  case $1 in
    none) [ "$through" -eq 0 ] && [ "$kernel" -eq 0 ] ||
      verdict+="${verdict:+; }FILTERED: $through queries went through the queue, $kernel through the fast path";;
    judged) [ $((through + kernel)) -ge "$sent" ] ||
      verdict+="${verdict:+; }NOT FILTERED: $through of $sent queries went through the queue, $kernel through the fast path";;
    *) [ "$through" -ge "$sent" ] || verdict+="${verdict:+; }NOT FILTERED: $through of $sent queries went through the queue";;
  esac
  case $1 in
    refused) [[ $codes == NXDOMAIN* && $codes != *NOERROR* ]] || verdict+="${verdict:+; }NOT REFUSED: answers $codes";;
    *) [[ $codes == NOERROR* && $codes != *NXDOMAIN* ]] || verdict+="${verdict:+; }NOT ANSWERED: answers $codes";;
  esac
}
# 5 s of as much as dnsperf can send: sets result (queries/s). At most 100 queries outstanding:
# with 200, the resolver's own socket dropped 7 of a million at the start, with no filter at all.
throughput() {
  dnsperf_run -d "$1" -l 5 -c 4 -q 100
  expect_path "$3"
  result=$qps
  kernel_share="$kernel of $sent in the kernel"
  if [ -n "$verdict" ]; then whole=no; problems+=("$2: $verdict"); result="$qps ($verdict)"; fi
}
# A paced run, each query's time: sets result (percentiles). 2,000 queries a second for 3 s,
# up to 10 outstanding: with one (-q 1), dnsperf's sender waited on its own wakeups and sent as few
# as 109 of the 6,000, so the percentiles rested on a handful of queries. A run with fewer than
# 5,400 says so.
latency() {
  dnsperf_run -d "$1" -l 3 -c 1 -q 10 -Q 2000 -v
  expect_path "$3"
  if [ -n "$sent" ] && [ "$sent" -lt 5400 ]; then verdict+="${verdict:+; }FEW QUERIES: $sent of 6000 sent"; fi
  result=$(awk '$1 == ">" {print $NF * 1e6}' <<<"$VERBOSE" | sort -n |
    awk '{a[NR]=$1} END {if (NR==0) {print "n/a"; exit} printf "p50 %.0f µs  p90 %.0f µs  p99 %.0f µs  (%d queries)", a[int(NR*0.5)+1], a[int(NR*0.9)+1], a[int(NR*0.99)+1], NR}')
  # (A paced run that could not keep its pace says so, and leaves the throughput ratio be.)
  if [ -n "$verdict" ]; then paced_whole=no; problems+=("$2, paced: $verdict"); result="$result ($verdict)"; fi
}

echo "== DNS through the domain shield (dnsperf as a child, dnsmasq on loopback, one namespace; no rate limit)"
start_agent
throughput $DIR/allowed.txt "no filter" none; base_qps=$result
latency $DIR/allowed.txt "no filter" none; base_lat=$result
# The same with connection tracking on (one conntrack rule; what any PC with a stateful firewall,
# ufw, firewalld or Docker, has): the part of the cost that is tracking her flows, which the
# agent's connection marks need. Taken out again: the runs below track because of the agent.
in_ns iptables -A OUTPUT -m conntrack --ctstate INVALID -j DROP
throughput $DIR/allowed.txt "no filter, flows tracked" none; track_qps=$result
latency $DIR/allowed.txt "no filter, flows tracked" none; track_lat=$result
in_ns iptables -D OUTPUT -m conntrack --ctstate INVALID -j DROP
st authorize --child $KID
st shield --user $KID --domain blocked.test
# Someone not filtered (root), with the rules in: what the rules and connection tracking cost
# every user of the PC, the child's lookups aside.
ASKER=in_ns throughput $DIR/allowed.txt "not filtered, the rules in" none; rules_qps=$result
ASKER=in_ns latency $DIR/allowed.txt "not filtered, the rules in" none; rules_lat=$result
# The 200 names again and again: after its first question each is asked in the kernel (the DNS
# fast path, the default).
throughput $DIR/allowed.txt "through the filter" judged; filt_qps=$result; filt_share=$kernel_share
# Where her lookups' time in the kernel goes: the fast path's two programs, per packet.
program_times as_kid dnsperf -s 127.0.0.1 -d $DIR/allowed.txt -l 3 -c 4 -q 100; filt_programs=$PROGRAM_TIMES
latency $DIR/allowed.txt "through the filter" judged; filt_lat=$result
throughput $DIR/blocked.txt "shielded names" refused; shield_qps=$result
latency $DIR/blocked.txt "shielded names" refused; shield_lat=$result
stop_agent
# Each question through the queue, as a name's first lookup goes.
write_conf ', "dnsRateLimit": 0, "dnsFastPath": false'
start_agent
throughput $DIR/allowed.txt "every question through the queue" queued; queue_qps=$result
latency $DIR/allowed.txt "every question through the queue" queued; queue_lat=$result
write_conf ', "dnsRateLimit": 0'
printf "  %-44s %10s q/s   %s\n" "no filter (baseline)" "$base_qps" "$base_lat"
printf "  %-44s %10s q/s   %s\n" "no filter, connection tracking on" "$track_qps" "$track_lat"
printf "  %-44s %10s q/s   %s\n" "someone not filtered, with the agent's rules" "$rules_qps" "$rules_lat"
printf "  %-44s %10s q/s   %s   (%s)\n" "through the filter, names allowed" "$filt_qps" "$filt_lat" "$filt_share"
printf "  %-44s %s\n" "  the kernel's programs meanwhile" "${filt_programs:-n/a}"
printf "  %-44s %10s q/s   %s\n" "the same, every question through the queue" "$queue_qps" "$queue_lat"
printf "  %-44s %10s q/s   %s\n" "shielded names, answered by the filter" "$shield_qps" "$shield_lat"
if [ "$whole" = yes ]; then
  awk -v a="${filt_qps%% *}" -v q="${queue_qps%% *}" -v b="${base_qps%% *}" -v r="${rules_qps%% *}" -v t="${track_qps%% *}" 'BEGIN {if (b > 0) printf "  filtered/unfiltered queries/s: %.2f× (every question through the queue: %.2f×); against no filter with connection tracking on: %.2f×; against someone not filtered with the rules in: %.2f×\n", a/b, q/b, (t > 0 ? a/t : 0), (r > 0 ? a/r : 0)}'
else
  echo "  !! NO RATIO: these runs were not whole, so their figures do not measure the filter:"
fi
if [ "$whole" != yes ] || [ "$paced_whole" != yes ]; then
  for problem in "${problems[@]}"; do echo "  !!   $problem"; done
fi
stop_agent

# The machine's rate swings between runs by more than the filter costs (a baseline of 77 k q/s in
# one run, 96 k in the next): her rate and the unfiltered rate taken in turn, round after round,
# each round's ratio from two runs seconds apart, and the median of the rounds.
ROUNDS=${ROUNDS:-5}
echo "== her rate through the filter and the rate with no filter, in turn ($ROUNDS rounds of 5 s each)"
start_agent
ratios=()
# And the machine's busy time a query answered, hers against no filter's: steadier than the rate
# (which moves with how much of the machine the host gives), and what the filter costs the PC.
busy_ratios=()
added=()
floor_ratios=()
floor_busy_ratios=()
floor_added=()
# The floor's table: her questions and the loopback resolver's answers marked as the fast path
# marks them and let go untracked, at the raw table's priority; its last rule, which matches
# nothing here (no flow has the connection mark 1 with the agent's rules out), names connection
# tracking, which loads it for every packet of the namespace.
FLOOR=${CHAIN}floor
# A run of this round ($1 its rate, $2 its busy time a query) against this round's no filter
# ($none, $none_busy): sets round_ratio (rate over no filter's), and, when both runs were whole,
# adds to the arrays named $3 (that ratio), $4 (no filter's busy time over the run's) and $5
# (the busy time the run adds a query).
against_none() {
  local -n kept_ratios=$3 kept_busy_ratios=$4 kept_added=$5
  round_ratio=$(awk -v a="${1%% *}" -v b="${none%% *}" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b}')
  [[ $1 != *"("* && $none != *"("* && -n $round_ratio ]] || return 0
  kept_ratios+=("$round_ratio")
  if [ -n "$2" ] && [ -n "$none_busy" ]; then
    kept_busy_ratios+=("$(awk -v a="$2" -v b="$none_busy" 'BEGIN {printf "%.2f", b / a}')")
    kept_added+=("$(awk -v a="$2" -v b="$none_busy" 'BEGIN {printf "%.2f", a - b}')")
  fi
}
floor_on() {
  in_ns nft -f - <<NFT
table inet $FLOOR {
  chain output {
    type filter hook output priority raw; policy accept;
    udp dport 53 meta skuid $(id -u "$KID") meta mark set 0x610000 notrack accept
    oif lo udp sport 53 meta mark set 0x610000 notrack accept
    ct mark 0x1 accept
  }
}
NFT
}
for round in $(seq 1 "$ROUNDS"); do
  st authorize --child $KID
  st shield --user $KID --domain blocked.test
  # Each name's first question through the queue, outside the measured run.
  dnsperf_run -d $DIR/allowed.txt -n 1 -c 1 -q 10
  throughput $DIR/allowed.txt "through the filter, round $round" judged; her=$result; her_busy=$busy
  st revoke --user $KID
  throughput $DIR/allowed.txt "no filter, round $round" none; none=$result; none_busy=$busy
  floor_on
  throughput $DIR/allowed.txt "the floor, round $round" none; floor=$result; floor_busy=$busy
  in_ns nft delete table inet "$FLOOR"
  against_none "$her" "$her_busy" ratios busy_ratios added; ratio=$round_ratio
  against_none "$floor" "$floor_busy" floor_ratios floor_busy_ratios floor_added; floor_ratio=$round_ratio
  printf "  round %d: through the filter %10s q/s, no filter %10s q/s   %s   busy %s against %s µs a query\n" \
    "$round" "$her" "$none" "${ratio:+$ratio×}" "${her_busy:-?}" "${none_busy:-?}"
  printf "           the floor          %10s q/s                        %s   busy %s µs a query\n" \
    "$floor" "${floor_ratio:+$floor_ratio×}" "${floor_busy:-?}"
done
median() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
if [ ${#ratios[@]} -gt 0 ]; then
  printf "  median of the %d whole rounds: %s× (goal ≥ 0.9×)\n" "${#ratios[@]}" "$(median "${ratios[@]}")"
  if [ ${#added[@]} -gt 0 ]; then
    printf "  the machine's busy time a query: her filter adds a median %s µs; no filter's time over hers, %s×\n" \
      "$(median "${added[@]}")" "$(median "${busy_ratios[@]}")"
  fi
  if [ ${#floor_ratios[@]} -gt 0 ] && [ ${#floor_added[@]} -gt 0 ] && [ ${#added[@]} -gt 0 ]; then
    # The programs' time a query: one question, one asked, one answer (the first section's runs).
    programs=$(awk -v t="${filt_programs:-}" 'BEGIN {n = split(t, w, " "); for (i = 2; i <= n; i++)
      if (w[i] == "ns" && w[i - 1] + 0 > 0) s += w[i - 1]; if (s > 0) printf "%.2f", s / 1000}')
    printf "  the floor (one native chain lets her DNS go untracked, nothing judged, connection tracking loaded): median %s×; it adds %s µs busy a query (no filter's time over its, %s×)\n" \
      "$(median "${floor_ratios[@]}")" "$(median "${floor_added[@]}")" "$(median "${floor_busy_ratios[@]}")"
    awk -v a="$(median "${added[@]}")" -v f="$(median "${floor_added[@]}")" -v p="${programs:-}" 'BEGIN {
      if (p == "") {printf "  of her filter'"'"'s %.2f µs a query: the floor %.2f µs, the rest %.2f µs (the programs'"'"' time unknown)\n", a, f, a - f; exit}
      printf "  of her filter'"'"'s %.2f µs a query: the floor %.2f µs, the fast path'"'"'s programs %.2f µs, the rest (the agent'"'"'s rules in the raw, mangle and filter tables) %.2f µs\n", a, f, p, a - f - p }'
  fi
else
  echo "  !! NO RATIO: no round was whole"
fi
st authorize --child $KID
st shield --user $KID --domain blocked.test
stop_agent

echo "== the child's default DNS rate limit (200 packets/s, bursts of 1,000), as a browser meets it"
write_conf ""
start_agent
# A page: 150 names asked at once (as many outstanding), each once.
page() {
  dnsperf_run -d "$1" -n 1 -c 1 -q 150 -t 2 -v
  expect_path queued
  local last
  last=$(awk '$1 == ">" {t = $NF * 1000; if (t > m) m = t} END {printf "%.1f", m}' <<<"$VERBOSE")
  printf "  %-44s %s of %s answered, the last after %s ms%s\n" "$2" "$completed" "$sent" "$last" \
    "${verdict:+   !! $verdict}"
}
page $DIR/page.txt "a page of 150 names at once"
page $DIR/page2.txt "another 150 right after"
dnsperf_run -d $DIR/allowed.txt -l 5 -c 4 -q 200
if [ "$dropped" -gt 0 ]; then held="the limit dropped $dropped packets: its job"; else held="!! the limit dropped nothing"; fi
printf "  %-44s %10s q/s   (%s of %s answered; %s)\n" "a flood for 5 s" "$qps" "$completed" "$sent" "$held"
stop_agent
write_conf ', "dnsRateLimit": 0'

echo "== one million domains in a web category"
python3 - "$DIR" <<'PY'
import random, sys
rng = random.Random(1)
words = ["play", "game", "bet", "chat", "tube", "pix", "fun", "win", "hot", "net", "shop", "news"]
tlds = ["com", "net", "org", "io", "co.uk", "de", "fr", "xyz"]
names = set()
while len(names) < 1_000_000:
    names.add("%s%s%d.%s" % (rng.choice(words), rng.choice(words), rng.randrange(10**7), rng.choice(tlds)))
names = sorted(names)
with open(sys.argv[1] + "/million.list", "w") as f:
    f.write("\n".join(names) + "\n")
with open(sys.argv[1] + "/million.dnsmasq.conf", "w") as f:
    f.write("".join("address=/%s/\n" % n for n in names))
with open(sys.argv[1] + "/probe.txt", "w") as f:
    f.write(names[500_000])
PY
PROBE=$(cat $DIR/probe.txt)
rss() { awk '/VmRSS/ {print $2}' /proc/$1/status; }
now() { date +%s.%N; }

t0=$(now); start_agent; t1=$(now); rss_empty=$(rss "$(cat $DIR/agent.pid)"); stop_agent
cp $DIR/million.list $DIR/categories/million.list
t2=$(now); start_agent; t3=$(now); rss_full=$(rss "$(cat $DIR/agent.pid)")
st shield --user $KID --web-category million
answer=$(as_kid dig +short +time=2 +tries=1 @127.0.0.1 "www.$PROBE" 2>&1 | head -1)
status=$(as_kid dig +time=2 +tries=1 @127.0.0.1 "www.$PROBE" | awk -F'status: ' '/status:/ {split($2, a, ","); print a[1]}')
stop_agent
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v e="$rss_empty" -v f="$rss_full" -v s="$status" 'BEGIN {
  printf "  screentimed: start %.2f s without the list, %.2f s with it (+%.2f s); RSS %.1f MiB → %.1f MiB (+%.1f MiB); a listed name: %s\n",
    b-a, d-c, (d-c)-(b-a), e/1024, f/1024, (f-e)/1024, s }'

t4=$(now)
in_ns dnsmasq --no-resolv --no-hosts --bind-interfaces --listen-address=127.0.0.2 --port=53 --user=root \
  --conf-file=$DIR/million.dnsmasq.conf --pid-file=$DIR/million.dnsmasq.pid </dev/null >/dev/null 2>&1
for _ in $(seq 1 6000); do
  in_ns dig +short +time=1 +tries=1 @127.0.0.2 allowed.test >/dev/null 2>&1 && break; sleep 0.01
done
t5=$(now)
pid=$(cat $DIR/million.dnsmasq.pid)
dstatus=$(in_ns dig +time=2 +tries=1 @127.0.0.2 "www.$PROBE" | awk -F'status: ' '/status:/ {split($2, a, ","); print a[1]}')
awk -v a="$t4" -v b="$t5" -v r="$(rss $pid)" -v s="$dstatus" 'BEGIN {
  printf "  dnsmasq, one address=/domain/ line each (CTparental-style): start %.2f s; RSS %.1f MiB; a listed name: %s\n", b-a, r/1024, s }'
