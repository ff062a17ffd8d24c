#!/bin/bash
# What the agent's rules cost a filtered child's lookups on the DNS fast path, taken apart by
# hand (not part of `make bench`; run it as root: Benchmarks/dns-rules-cost.sh BIN_DIR). In three
# alternating rounds, her dnsperf rate (4 s, 4 clients, names allowed, no rate limit):
#   - with the agent's rules as it installs them;
#   - with the TCP-only rules and the mark rules taken out (41 of the main chain's 53, 21 of the
#     answers' chain's 23): whether the number of rules her packets pass is what costs;
#   - with the jumps to the agent's chains taken out (connection tracking stays on: the chains'
#     rules hold it), then with one conntrack rule besides.
# The hand-made rulesets are measurements, not rulesets (TCP is not judged in them); each round
# starts from the agent's own, put back by a guardian's change (a new shielded name).
set -euo pipefail
BIN=${1:?usage: dns-rules-cost.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "dns rules cost skipped: needs root"; exit 0; fi
. "$(dirname "$0")/agent-in-namespace.sh" stx

start_with_resolver
rate() { as_kid dnsperf -s 127.0.0.1 -d $DIR/allowed.txt -l 4 -c 4 2>&1 | awk '/Queries per second/ {printf "%.0f", $4}'; }
# Each rule that matches, made into a delete.
deletes() { in_ns iptables-save | grep -E "$1" | sed 's/^-A /-D /'; }
apply() { while read -r rule; do [ -n "$rule" ] && eval in_ns iptables -w "$rule"; done; }
full=(); pruned=(); unjumped=(); tracked=()
for round in 1 2 3; do
  st shield --user $KID --domain other$round.test
  # Her questions judged once each in the queue (the change voided the kernel's table).
  as_kid dnsperf -s 127.0.0.1 -d $DIR/allowed.txt -l 1 -c 4 >/dev/null 2>&1
  full+=("$(rate)")
  deletes "^-A $CHAIN(-in)? .*-p tcp|^-A $CHAIN -m mark .*-j (CONNMARK|RETURN)|^-A $CHAIN .*--ctdir REPLY -j RETURN|^-A $CHAIN -m length --length 0:1500" |
    apply
  pruned+=("$(rate)")
  jumps=$(in_ns iptables-save | grep -E "^-A (OUTPUT|INPUT) .*-j $CHAIN")
  sed 's/^-A /-D /' <<<"$jumps" | apply
  unjumped+=("$(rate)")
  in_ns iptables -w -A OUTPUT -m conntrack --ctstate INVALID -j DROP
  tracked+=("$(rate)")
  in_ns iptables -w -D OUTPUT -m conntrack --ctstate INVALID -j DROP
  apply <<<"$jumps"
done
echo "== the child's lookups on the DNS fast path (dnsperf, 4 s, q/s; 3 alternating rounds)"
printf "  %-58s %s\n" "the agent's rules" "${full[*]}" \
  "without the TCP-only and mark rules (62 of 76 rules gone)" "${pruned[*]}" \
  "no jump to the agent's chains (connection tracking on)" "${unjumped[*]}" \
  "and one conntrack rule" "${tracked[*]}"
