# Sourced by the benchmarks that run the agent in a network namespace of their own, with a test
# child: sets NS, KID, DIR, QUEUE, CHAIN (from the prefix $1), the helpers in_ns, as_kid,
# write_config, start_agent, start_with_resolver, start_tls_server, stop_agent and st, and a cleanup on exit that
# removes all of it.
# BIN must be set; the caller writes $DIR/conf.json (write_config, or its own) before start_agent.
prefix=${1:?agent-in-namespace.sh PREFIX}
ID=$(head -c3 /dev/urandom | od -An -tx1 | tr -d ' \n')
NS=$prefix$ID; KID=${prefix}kid$ID; DIR=/tmp/screentime-bench-$ID
QUEUE=$((2000 + RANDOM % 50000)); CHAIN=$prefix$ID
mkdir -p $DIR/categories
cleanup() {
  [ -f $DIR/agent.pid ] && kill -9 "$(cat $DIR/agent.pid)" 2>/dev/null || true
  for f in $DIR/*.dnsmasq.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
  ip netns exec $NS $BIN/screentimed --remove-firewall --config $DIR/conf.json --state-dir $DIR/state --log-level error 2>/dev/null || true
  for pid in $(ip netns pids $NS 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  ip netns del $NS 2>/dev/null || true
  userdel $KID 2>/dev/null || true
  rm -rf $DIR
}
trap cleanup EXIT
useradd -M -N -s /bin/sh $KID
ip netns add $NS
ip -n $NS link set lo up
in_ns() { ip netns exec $NS "$@"; }
as_kid() { ip netns exec $NS setpriv --reuid=$KID --regid=users --init-groups -- "$@"; }
# AGENT_WRAP, if set, is a command the agent runs under (valgrind, for scripts/link-order), and
# AGENT_START_TRIES how many 5 ms waits its start may take.
start_agent() {
  # Started directly, not through a shell function, so that $! is the agent itself.
  ip netns exec $NS ${AGENT_WRAP:-} $BIN/screentimed --config $DIR/conf.json --state-dir $DIR/state --socket $DIR/s.sock \
    </dev/null >/dev/null 2>>$DIR/agent.log &
  echo $! > $DIR/agent.pid
  for _ in $(seq 1 ${AGENT_START_TRIES:-2000}); do SCREENTIME_SOCKET=$DIR/s.sock $BIN/screentime ping >/dev/null 2>&1 && return; sleep 0.005; done
  echo "the agent did not start"; cat $DIR/agent.log; exit 1
}
# The agent's configuration with the names of this run (queue, chain, freezer group) and no
# desktop or browser side; $1, if given, adds keys (a JSON fragment: '"webUser": "x"').
write_config() {
  cat > $DIR/conf.json <<JSON
{"dnsQueue": $QUEUE, "firewallChain": "$CHAIN", "freezerGroup": "screentime-bench-$ID",
 "categoriesDirectory": "$DIR/categories", "extensionUser": "nobody", "logindBus": "", "focusSocket": "",
 "browserPolicies": ""${1:+, $1}}
JSON
}
stop_agent() { kill -9 "$(cat $DIR/agent.pid)"; wait "$(cat $DIR/agent.pid)" 2>/dev/null || true; rm -f $DIR/agent.pid; }
st() { SCREENTIME_SOCKET=$DIR/s.sock $BIN/screentime "$@" >/dev/null; }
# The kernel's time in the agent's fast-path programs while "$@" runs (kernel.bpf_stats_enabled
# on for it): sets PROGRAM_TIMES to "name: N ns a packet (runs)" for each program that ran, named
# by the order the agent loads them (the object's: question, answer, asked, hello, acknowledged), from
# their run_time_ns and run_cnt in /proc/PID/fdinfo. "$@"'s output is kept in PROGRAM_OUTPUT.
program_times() {
  local pid names=(question answer asked hello acknowledged) before=() after=() f i
  pid=$(cat $DIR/agent.pid)
  stats() { for f in $(ls /proc/$pid/fdinfo | sort -n); do
      awk '/^prog_type/ {p=1} /^run_time_ns/ {t=$2} /^run_cnt/ {c=$2} END {if (p) print t + 0, c + 0}' \
        /proc/$pid/fdinfo/$f 2>/dev/null; done; }
  mapfile -t before < <(stats)
  local was; was=$(sysctl -n kernel.bpf_stats_enabled)
  sysctl -qw kernel.bpf_stats_enabled=1
  PROGRAM_OUTPUT=$("$@")
  sysctl -qw kernel.bpf_stats_enabled=$was
  mapfile -t after < <(stats)
  local parts=() part
  for i in "${!after[@]}"; do
    [ $i -lt ${#names[@]} ] || break
    part=$(awk -v a="${after[$i]}" -v b="${before[$i]:-0 0}" -v n="${names[$i]}" 'BEGIN {
      split(a, x, " "); split(b, y, " "); t = x[1] - y[1]; c = x[2] - y[2]
      if (c > 0) printf "%s: %.0f ns a packet (%d runs)", n, t / c, c}')
    [ -z "$part" ] || parts+=("$part")
  done
  PROGRAM_TIMES=$(IFS=';'; echo "${parts[*]}" | sed 's/;/; /g')
}
# The DNS benchmarks' set-up: a dnsmasq on 127.0.0.1 answering *.allowed.test, 200 such names in
# $DIR/allowed.txt, the agent with no DNS rate limit, and the child authorized.
start_with_resolver() {
  in_ns dnsmasq --no-resolv --no-hosts --bind-interfaces --listen-address=127.0.0.1 --port=53 --user=root \
    --cache-size=0 --address=/allowed.test/10.1.1.1 --pid-file=$DIR/resolver.dnsmasq.pid </dev/null >/dev/null 2>&1
  write_config "\"guardianGroup\": \"root\", \"bypassList\": \"$DIR/none.list\", \"dnsRateLimit\": 0"
  for i in $(seq 1 200); do echo "host$i.allowed.test A"; done > $DIR/allowed.txt
  start_agent
  st authorize --child $KID
}
# The connection benchmarks' set-up: 10.1.1.1 in the namespace with a TLS server on 443 (openssl
# s_server, a certificate of its own), and the agent's configuration with the acknowledgement
# log; the agent is not started.
start_tls_server() {
  ip -n $NS addr add 10.1.1.1/32 dev lo
  cat > $DIR/conf.json <<JSON
{"guardianGroup": "root", "categoriesDirectory": "$DIR/categories", "bypassList": "$DIR/none.list",
 "dnsQueue": $QUEUE, "firewallChain": "$CHAIN", "browserPolicies": "", "focusSocket": "",
 "acknowledgementLog": true}
JSON
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=bench -days 1 \
    -keyout $DIR/key.pem -out $DIR/cert.pem 2>/dev/null
  in_ns setsid openssl s_server -quiet -accept 10.1.1.1:443 -cert $DIR/cert.pem -key $DIR/key.pem -www \
    </dev/null >/dev/null 2>&1 &
  sleep 0.5
}
