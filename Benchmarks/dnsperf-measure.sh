# Sourced by dns-filter.sh (busy_ticks, HZ) and the DNS what-ifs (dns-backends.sh, dns-cgroup-hooks.sh,
# which call measure): one measured run of a
# child's dnsperf. `measure CMD...` runs CMD (which runs dnsperf, as her) and sets qps, completed
# and busy (µs of the whole machine's busy time a query answered: dnsperf, her resolver, the
# kernel's work for both and anything else running), or leaves qps and busy empty when any query
# was lost.

# The whole machine's busy time so far, in clock ticks (/proc/stat's first line: user, nice, system,
# interrupts; not idle, waiting for a disk, or taken by the host).
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
HZ=$(getconf CLK_TCK)
measure() {
  local t0 t1 out lost
  t0=$(busy_ticks)
  out=$("$@" 2>&1)
  t1=$(busy_ticks)
  completed=$(awk '/Queries completed:/ {print $3}' <<<"$out")
  lost=$(awk '/Queries lost:/ {print $3}' <<<"$out")
  qps=""; busy=""
  [ -n "$completed" ] && [ "$completed" -gt 0 ] && [ "${lost:-1}" -eq 0 ] || return 0
  qps=$(awk '/Queries per second:/ {printf "%.0f", $4}' <<<"$out")
  busy=$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v q="$completed" 'BEGIN {printf "%.2f", t / hz / q * 1e6}')
}
