#!/bin/bash
# `make bench`, DNS half: the domain shield measured beside its baselines, in the same run.
#
#  1. dnsperf as a filtered child against dnsmasq in a network namespace, with no rules (the
#     baseline), through the agent's queue (names allowed), and with the agent answering shielded
#     names itself: queries/s, and latency percentiles from a paced run (dnsperf -v per query).
#  2. A one-million-domain web category: the agent's start-up with and without it and its memory,
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
cat > $DIR/conf.json <<JSON
{"guardianGroup": "root", "categoriesDirectory": "$DIR/categories", "bypassList": "$DIR/none.list",
 "dnsQueue": $QUEUE, "firewallChain": "$CHAIN", "browserPolicies": ""}
JSON
for i in $(seq 1 200); do echo "host$i.allowed.test A"; done > $DIR/allowed.txt
for i in $(seq 1 200); do echo "host$i.blocked.test A"; done > $DIR/blocked.txt

# Throughput: 5 s of as much as dnsperf can send; latency: a paced run, each query's time.
throughput() { as_kid dnsperf -s 127.0.0.1 -d "$1" -l 5 -c 4 -q 200 2>&1 | awk '/Queries per second/ {print $4}'; }
latency() {
  as_kid dnsperf -s 127.0.0.1 -d "$1" -l 3 -c 1 -q 1 -Q 2000 -v 2>/dev/null |
    awk '$1 == ">" {print $NF * 1e6}' | sort -n |
    awk '{a[NR]=$1} END {if (NR==0) {print "n/a"; exit} printf "p50 %.0f µs  p90 %.0f µs  p99 %.0f µs  (%d queries)", a[int(NR*0.5)+1], a[int(NR*0.9)+1], a[int(NR*0.99)+1], NR}'
}

echo "== DNS through the domain shield (dnsperf as a child, dnsmasq on loopback, one namespace)"
start_agent
base_qps=$(throughput $DIR/allowed.txt); base_lat=$(latency $DIR/allowed.txt)
st authorize --child $KID
st shield --user $KID --domain blocked.test
filt_qps=$(throughput $DIR/allowed.txt); filt_lat=$(latency $DIR/allowed.txt)
shield_qps=$(throughput $DIR/blocked.txt); shield_lat=$(latency $DIR/blocked.txt)
printf "  %-44s %10s q/s   %s\n" "no filter (baseline)" "$base_qps" "$base_lat"
printf "  %-44s %10s q/s   %s\n" "through the filter, names allowed" "$filt_qps" "$filt_lat"
printf "  %-44s %10s q/s   %s\n" "shielded names, answered by the filter" "$shield_qps" "$shield_lat"
awk -v a="$filt_qps" -v b="$base_qps" 'BEGIN {if (b > 0) printf "  filtered/unfiltered queries/s: %.2f×\n", a/b}'
stop_agent

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
