#!/bin/bash
# Where a filtered child's lookups spend the machine's time: `perf record` over the whole machine
# while dnsperf runs as the child (her questions and answers through the DNS fast path) and then
# as someone not filtered (root) with the agent's rules in; then the kernel's share for each of
# the netfilter hooks, the rule traversal (iptables-nft's nft_do_chain and its xt matches),
# connection tracking and the fast path's two BPF programs. Not part of `make bench` (it needs
# perf); run it by hand: Benchmarks/dns-profile.sh BIN_DIR.
set -euo pipefail
BIN=${1:?usage: dns-profile.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "dns profile skipped: needs root"; exit 0; fi
command -v perf >/dev/null || { echo "dns profile skipped: no perf (Debian's linux-perf)"; exit 0; }
. "$(dirname "$0")/agent-in-namespace.sh" stp

start_with_resolver
st shield --user $KID --domain blocked.test
# Her questions judged once each in the queue, so that the run itself is all in the kernel.
as_kid dnsperf -s 127.0.0.1 -d $DIR/allowed.txt -l 2 -c 4 >/dev/null 2>&1
share() { perf report -i "$1" --children --sort sym --stdio -g none 2>/dev/null |
  awk -v s="$2" '$NF ~ s {n += $1} END {printf "%5.1f%%", n}'; }
for who in child root; do
  asker=as_kid; [ $who = root ] && asker=in_ns
  perf record -a -g -e cpu-clock -F 5000 -o $DIR/$who.data -- sleep 3 >/dev/null 2>&1 &
  profiler=$!
  rate=$($asker dnsperf -s 127.0.0.1 -d $DIR/allowed.txt -l 4 -c 4 2>&1 | awk '/Queries per second/ {print $4}')
  wait $profiler
  printf "%-6s %10.0f q/s   netfilter hooks %s  rule traversal %s  conntrack %s  fast path programs %s  (of all samples)\n" \
    $who "$rate" "$(share $DIR/$who.data '^nf_hook_slow$')" "$(share $DIR/$who.data '^nft_do_chain_ipv4$')" \
    "$(share $DIR/$who.data '^nf_conntrack_in$')" "$(share $DIR/$who.data '^bpf_prog_.*_(question|answer)$')"
done
