#!/bin/bash
# What the rules' backend costs a filtered child's lookups on the DNS fast path: the agent's own
# ruleset installed through iptables-nft (what the agent uses) and, the same agent and the same
# rules, through iptables-legacy (x_tables), beside no filter, in alternating rounds. Not part of
# `make bench`, and not something the agent can run as it is (below); run it as root:
# Benchmarks/dns-backends.sh BIN_DIR.
#
# Each round starts the agent afresh in a mount namespace of its own in which the iptables
# programs are the backend's (`xtables-nft-multi` or `xtables-legacy-multi` bound over what
# /usr/sbin/iptables leads to: each picks its command by the name it is run as), lets each name's
# first question through the queue, then measures her dnsperf rate (4 s, 4 clients, names
# allowed, no rate limit) and the whole machine's busy time a query answered; then kills the
# agent and empties both backends' tables, and measures no filter. A round counts only if the
# fast path passed the questions in the kernel (the raw table's `bpf` rules' counters, read with
# the backend's own iptables-save) and the other backend held none of the agent's rules.
#
# Why the agent cannot simply switch: x_tables replaces a whole table at each change, and checks
# every rule of it again; the `bpf` match finds its program by the pinned path, which the agent
# keeps only while it installs (`DNSFastPath.pinned`). After that, any change to the table (a
# revoke, the next generation, another program's rule) fails with "No chain/target/match by that
# name", and an agent restarted after kill -9 could not take the old rules out.
set -euo pipefail
BIN=${1:?usage: dns-backends.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "dns backends skipped: needs root"; exit 0; fi
. "$(dirname "$0")/agent-in-namespace.sh" stk
ROUNDS=${ROUNDS:-6}
if ! in_ns iptables-legacy -w -t raw -n -L OUTPUT >/dev/null 2>&1; then
  echo "dns backends skipped: this kernel has no x_tables (iptables-legacy) tables"; exit 0
fi
targets=$(for tool in iptables ip6tables; do readlink -f "$(command -v $tool)"; done | sort -u)
# The agent under backend $1 (nft or legacy): a wrapper for start_agent's AGENT_WRAP.
cat > $DIR/wrap <<SCRIPT
#!/bin/sh
backend=\$1; shift
exec unshare -m --propagation private sh -c 'for target in $(echo $targets); do
  mount --bind /usr/sbin/xtables-'"\$backend"'-multi "\$target" || exit 1; done; exec "\$@"' sh "\$@"
SCRIPT
chmod +x $DIR/wrap
start_with_resolver
st authorize --child $KID
st shield --user $KID --domain blocked.test
stop_agent
empty() { for table in raw mangle filter; do printf '*%s\nCOMMIT\n' $table; done; }
clear_rules() {
  empty | in_ns iptables-legacy-restore; empty | in_ns ip6tables-legacy-restore
  in_ns nft flush ruleset
}
# The questions the raw table's `bpf` rules passed so far, through backend $1's iptables-save.
fast_passed() {
  in_ns iptables-$1-save -c 2>/dev/null | awk '/^\*/ {table = $1} table == "*raw" && /--dport 53/ && /-m bpf/ {
    gsub(/[^0-9:]/, "", $1); split($1, c, ":"); n += c[1]} END {print n + 0}'
}
rules_of() { in_ns iptables-$1-save 2>/dev/null | grep -c -- "-j $CHAIN" || true; }
. "$(dirname "$0")/dnsperf-measure.sh"
# One run of her dnsperf: sets qps and busy (µs a query), or leaves them empty when queries were lost.
her_dnsperf() { measure as_kid dnsperf -s 127.0.0.1 -d $DIR/allowed.txt -l 4 -c 4 -q 100; }
declare -A rates=() times=()
for round in $(seq 1 "$ROUNDS"); do
  for backend in nft legacy; do
    other=$([ $backend = nft ] && echo legacy || echo nft)
    AGENT_WRAP="$DIR/wrap $backend" start_agent
    as_kid dnsperf -s 127.0.0.1 -d $DIR/allowed.txt -n 1 -c 1 -q 10 >/dev/null 2>&1 || true
    before=$(fast_passed $backend)
    her_dnsperf
    passed=$(( $(fast_passed $backend) - before ))
    stray=$(rules_of $other)
    note=""
    if [ -z "$qps" ]; then note="LOST QUERIES"
    elif [ "$passed" -lt 1000 ]; then note="NOT ON THE FAST PATH: $passed questions passed in the kernel"
    elif [ "$stray" -gt 0 ]; then note="RULES IN THE OTHER BACKEND: $stray"
    else rates[$backend]+="$qps "; times[$backend]+="$busy "; fi
    printf "  round %d: %-7s %8s q/s  busy %6s µs a query  %s\n" $round $backend "${qps:-?}" "${busy:-?}" "$note"
    stop_agent
    clear_rules
  done
  her_dnsperf
  if [ -n "$qps" ]; then rates[none]+="$qps "; times[none]+="$busy "; fi
  printf "  round %d: %-7s %8s q/s  busy %6s µs a query\n" $round none "${qps:-?}" "${busy:-?}"
done
median() { printf "%s\n" $1 | sort -g | awk '{a[NR]=$1} END {if (NR) print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
none_rate=$(median "${rates[none]:-}"); none_busy=$(median "${times[none]:-}")
for backend in nft legacy; do
  rate=$(median "${rates[$backend]:-}"); busy=$(median "${times[$backend]:-}")
  if [ -z "$rate" ] || [ -z "$none_rate" ]; then echo "  $backend: !! no whole round"; continue; fi
  awk -v b=$backend -v r=$rate -v n=$none_rate -v t=$busy -v u=$none_busy 'BEGIN {
    printf "  her filter through %-6s median %.0f q/s against no filter %.0f (%.2f×); busy %.2f against %.2f µs a query (+%.2f; %.2f×)\n",
      b, r, n, r / n, t, u, t - u, u / t}'
done
