#!/bin/bash
# How near no filter a child's DNS could come if the DNS fast path's programs were all that
# judged it: not the agent's design, a measurement of what a redesign could reach (not part of
# `make bench`; run it as root: Benchmarks/dns-cgroup-hooks.sh).
#
# The fast path's own programs (Sources/CDNSFastPath/bpf), rebuilt as cgroup programs and
# attached to a cgroup v2 group her dnsperf runs in: `question` then `asked` on her sockets'
# egress, `answer` on their ingress, with her 200 names in their table (as the agent puts them
# after judging each once), every packet let through. No netfilter rule and no connection
# tracking in the namespace: the least her lookups could cost with these programs reading them,
# if her DNS left netfilter and the connection shield kept its verdicts elsewhere than in
# connection marks. Beside it, in alternating rounds (4 s each, 4 clients, dnsmasq on loopback):
# no filter; the floor (dns-filter.sh's: one native chain lets her DNS go untracked, connection
# tracking loaded); and the floor with the cgroup programs (her DNS judged outside netfilter,
# the connection shield left in connection tracking). Each cgroup run counts only if the table
# let go at least as many questions as were answered.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then echo "dns cgroup hooks skipped: needs root"; exit 0; fi
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-6}
ID=$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
NS=stc$ID; KID=stckid$ID; DIR=/tmp/screentime-bench-$ID
UNIFIED=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
if [ -z "$UNIFIED" ]; then echo "dns cgroup hooks skipped: no cgroup v2 hierarchy mounted"; exit 0; fi
GROUP=$UNIFIED/screentime-bench-$ID
LOADER=""
cleanup() {
  [ -n "$LOADER" ] && kill "$LOADER" 2>/dev/null || true
  for pid in $(ip netns pids $NS 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 50); do [ -d "$GROUP" ] || break; rmdir "$GROUP" 2>/dev/null || sleep 0.02; done
  ip netns del $NS 2>/dev/null || true
  userdel $KID 2>/dev/null || true
  rm -rf $DIR
}
trap cleanup EXIT
mkdir -p $DIR/bpf
# The programs as cgroup programs: the three entry points made inline functions of two wrappers.
perl -0pe 's/SEC\("socket"\)\nint (question|answer|asked)\(/static __always_inline int $1(/g' \
  "$HERE/../Sources/CDNSFastPath/bpf/dns-fast-path.bpf.c" > $DIR/bpf/cgroup.bpf.c
# QUESTIONS=hash: the table of questions let go a plain hash table (its entries made ahead, none
# pushed out: a full table lets no more go) rather than the LRU one, to see what the LRU's insert
# and delete cost a query.
if [ "${QUESTIONS:-lru}" = hash ]; then
  perl -0pi -e 's/BPF_MAP_TYPE_LRU_HASH\);(\s+__uint\(max_entries, DNS_QUESTIONS_ENTRIES\))/BPF_MAP_TYPE_HASH);$1/' \
    $DIR/bpf/cgroup.bpf.c
  grep -q 'BPF_MAP_TYPE_HASH);' $DIR/bpf/cgroup.bpf.c ||
    { echo "dns cgroup hooks: the table of questions was not found in the source"; exit 1; }
fi
[ "$(grep -c '__always_inline int \(question\|answer\|asked\)(' $DIR/bpf/cgroup.bpf.c)" -eq 3 ] ||
  { echo "dns cgroup hooks: the programs' entry points were not found in the source"; exit 1; }
# What the hooks run, to take the programs' time apart: STAGE=hook, a program that lets every
# packet go and reads nothing (what a cgroup program costs at all); STAGE=read, her question read,
# and the answer's flow and message, as the fast path reads them, nothing looked up; STAGE=find,
# besides, her question found in the table of names and nothing more; STAGE=lookup, found, its
# expiry and generation checked, and counted; STAGE=small, found instead in a table whose key is
# 16 bytes (her uid, the type, the name's length and a 64-bit FNV-1a hash of it; the loader puts
# the same names there), and counted, rather than the 136 of the name itself; STAGE=question, `question`
# and `answer` but not `asked` (the question not read again); else all three programs.
cat >> $DIR/bpf/cgroup.bpf.c <<'C'

#if defined(STAGE_SMALL)
struct small_key {
    __u32 uid;
    __u16 type;
    __u16 length;
    __u64 hash;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, DNS_FAST_PATH_ENTRIES);
    __type(key, struct small_key);
    __type(value, struct dns_fast_path_value);
} small_names SEC(".maps");
#endif

SEC("cgroup_skb/egress")
int cg_egress(struct __sk_buff *skb) {
#if defined(STAGE_HOOK)
    (void)skb;
#elif defined(STAGE_READ) || defined(STAGE_FIND) || defined(STAGE_LOOKUP) || defined(STAGE_SMALL)
    struct dns_packet packet = {};
    struct dns_fast_path_key key = {};
    if (read_her_question(skb, &packet, &key) < 0) return 1;
#if defined(STAGE_SMALL)
    struct small_key small = {.uid = bpf_get_socket_uid(skb), .type = key.type, .length = key.length,
                              .hash = 0xcbf29ce484222325ull};
    for (__u32 i = 0; i < DNS_FAST_PATH_NAME_MAX; i++) {
        if (i >= key.length) break;
        small.hash = (small.hash ^ key.name[i]) * 0x100000001b3ull;
    }
    struct dns_fast_path_value *found = bpf_map_lookup_elem(&small_names, &small);
    if (found) __sync_fetch_and_add(&found->hits, 1);
#elif defined(STAGE_FIND)
    key.uid = bpf_get_socket_uid(skb);
    bpf_map_lookup_elem(&names, &key);
#elif defined(STAGE_LOOKUP)
    key.uid = bpf_get_socket_uid(skb);
    __u64 *current = current_generation();
    struct dns_fast_path_value *entry = current ? in_force(&key, *current) : 0;
    if (entry) __sync_fetch_and_add(&entry->hits, 1);
#endif
#elif defined(STAGE_QUESTION)
    question(skb);
#else
    if (question(skb)) asked(skb);
#endif
    return 1;
}

SEC("cgroup_skb/ingress")
int cg_ingress(struct __sk_buff *skb) {
#if defined(STAGE_HOOK)
    (void)skb;
#elif defined(STAGE_READ) || defined(STAGE_FIND) || defined(STAGE_LOOKUP) || defined(STAGE_SMALL)
    struct dns_packet packet = {};
    __u64 run;
    if (read_packet(skb, 1, &packet) == 0) read_message(skb, &packet, &run);
#else
    answer(skb);
#endif
    return 1;
}
C
case "${STAGE:-programs}" in
  hook) stage=-DSTAGE_HOOK ;;
  read) stage=-DSTAGE_READ ;;
  find) stage=-DSTAGE_FIND ;;
  small) stage=-DSTAGE_SMALL ;;
  lookup) stage=-DSTAGE_LOOKUP ;;
  question) stage=-DSTAGE_QUESTION ;;
  programs) stage="" ;;
  *) echo "dns cgroup hooks: STAGE is hook, read, find, small, lookup, question or programs, not $STAGE"; exit 1 ;;
esac
ln -s "$HERE/../Sources/CDNSFastPath/include" $DIR/include
tools=$(dirname "$(readlink -f "$(command -v "${SWIFT:-swift}")")")
"$tools/clang" -O2 -g -target bpf $stage -I"/usr/include/$(gcc -dumpmachine)" -c $DIR/bpf/cgroup.bpf.c -o $DIR/cgroup.bpf.o
cc -O2 -o $DIR/loader "$HERE/dns-cgroup-hooks.c" -lbpf

useradd -M -N -s /bin/sh $KID
KIDUID=$(id -u $KID)
ip netns add $NS
ip -n $NS link set lo up
mkdir "$GROUP"
ip netns exec $NS dnsmasq --no-resolv --no-hosts --bind-interfaces --listen-address=127.0.0.1 --port=53 --user=root \
  --cache-size=0 --address=/allowed.test/10.1.1.1 </dev/null >/dev/null 2>&1
for i in $(seq 1 200); do echo "host$i.allowed.test A"; done > $DIR/allowed.txt

. "$HERE/dnsperf-measure.sh"
# Her dnsperf, in the group (moved there before `ip netns exec`, which mounts a /sys of its own):
# sets qps, busy (µs of the machine's busy time a query) and completed, or leaves qps empty when
# queries were lost.
her_dnsperf() {
  measure sh -c "echo \$\$ > $GROUP/cgroup.procs && exec ip netns exec $NS setpriv --reuid=$KID --regid=users \
    --init-groups -- dnsperf -s 127.0.0.1 -d $DIR/allowed.txt -l 4 -c 4 -q 100"
}
attach() {
  $DIR/loader $DIR/cgroup.bpf.o "$GROUP" $KIDUID 200 > $DIR/loader.out 2>&1 &
  LOADER=$!
  for _ in $(seq 1 500); do grep -q '^attached' $DIR/loader.out && return; sleep 0.01; done
  echo "dns cgroup hooks: the programs were not attached: $(cat $DIR/loader.out)"; exit 1
}
# Detaches; sets passed (the questions the table let go) and said (the loader's figures).
detach() {
  kill "$LOADER"; wait "$LOADER" 2>/dev/null || true; LOADER=""
  passed=$(awk '/^passed/ {print $2}' $DIR/loader.out)
  said=$({ grep -v -e '^attached' -e '^passed' $DIR/loader.out || true; } | tr '\n' ';' | sed 's/;$//; s/;/; /g')
}
floor_on() {
  ip netns exec $NS nft -f - <<NFT
table inet floor$ID {
  chain output {
    type filter hook output priority raw; policy accept;
    udp dport 53 meta skuid $KIDUID meta mark set 0x610000 notrack accept
    oif lo udp sport 53 meta mark set 0x610000 notrack accept
    ct mark 0x1 accept
  }
}
NFT
}
floor_off() { ip netns exec $NS nft delete table inet floor$ID; }
declare -A rates=() times=()
# One measured run of mode $1 ("programs" ones attached around it): keeps its figures if whole.
run_mode() {
  local mode=$1 note=""
  [[ $mode != *programs* ]] || attach
  her_dnsperf
  if [[ $mode == *programs* ]]; then
    detach
    if [ -n "$qps" ] && [ -z "$stage" ] && [ "${passed:-0}" -lt "$completed" ]; then note="NOT JUDGED: $passed of $completed let go by the table"; fi
  fi
  [ -n "$qps" ] || note="LOST QUERIES"
  if [ -z "$note" ]; then rates[$mode]+="$qps "; times[$mode]+="$busy "; fi
  printf "  round %d: %-22s %8s q/s  busy %6s µs a query  %s\n" "$round" "$mode" "${qps:-?}" "${busy:-?}" "$note"
}

echo "== her DNS judged by the fast path's programs from her cgroup's hooks, no netfilter (dnsperf as a child, dnsmasq on loopback; the questions' table: ${QUESTIONS:-lru}; what the hooks run: ${STAGE:-programs})"
was=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
attach; her_dnsperf; detach
sysctl -qw kernel.bpf_stats_enabled="$was"
echo "  the programs' time (kernel.bpf_stats_enabled, one run): $said; $passed questions let go, $completed answered"
modes=("no filter" "programs" "floor" "floor and programs")
for round in $(seq 1 "$ROUNDS"); do
  for mode in "${modes[@]}"; do
    [[ $mode != floor* ]] || floor_on
    run_mode "$mode"
    [[ $mode != floor* ]] || floor_off
  done
done
median() { printf "%s\n" $1 | sort -g | awk '{a[NR]=$1} END {if (NR) print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
base_rate=$(median "${rates[no filter]:-}"); base_busy=$(median "${times[no filter]:-}")
if [ -z "$base_rate" ]; then echo "  !! no whole round with no filter"; exit 0; fi
printf "  medians of %d rounds: no filter %.0f q/s, busy %.2f µs a query\n" "$ROUNDS" "$base_rate" "$base_busy"
for mode in "${modes[@]:1}"; do
  rate=$(median "${rates[$mode]:-}"); busy=$(median "${times[$mode]:-}")
  if [ -z "$rate" ]; then echo "  $mode: !! no whole round"; continue; fi
  awk -v m="$mode" -v r=$rate -v n=$base_rate -v t=$busy -v u=$base_busy 'BEGIN {
    printf "  %-22s %.0f q/s (%.2f× of no filter); busy %.2f µs a query (+%.2f; no filter'"'"'s time over it %.2f×)\n",
      m, r, r / n, t, t - u, u / t}'
done
