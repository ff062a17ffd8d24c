#!/bin/bash
# `make bench`, dashboard part: the guardian's dashboard (screentime-web, release build) over TLS
# on loopback, in front of a real agent with a test child and guardian, measured with one
# kept-alive HTTPS connection as a phone holds it. Side by side in the same run: the child's page
# (five requests to the agent: two reports, asks, status, and the page made), the dashboard's own
# style sheet (no agent: the server's floor), and `screentime report` for the same child in a
# terminal (what a guardian does without the dashboard). Then 100 event streams open at once:
# how many see a new ask, the agent's CPU while they wait, and the dashboard's memory (one
# device may hold 16 connections as installed; the 100 streams here come from one address, so the
# benchmark lets it hold 128). Figures are printed, never asserted. About a minute.
set -euo pipefail
BIN=${1:?usage: web.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "dashboard benchmark skipped: needs root (test accounts, the agent)"; exit 0; fi
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/agent-in-namespace.sh" stweb
MUM=stwebmum$ID; WEB=stwebweb$ID; GROUP=stwebg$ID; PAM=stweb-bench-$ID; PASSWORD="bench $ID"
groupadd $GROUP; useradd -M -N -s /bin/sh -G $GROUP $MUM; useradd -M -N -s /bin/sh $WEB
echo "$MUM:$PASSWORD" | chpasswd
printf 'auth required pam_unix.so\naccount required pam_unix.so\n' > /etc/pam.d/$PAM
more_cleanup() {
  [ -f $DIR/web.pid ] && kill -9 "$(cat $DIR/web.pid)" 2>/dev/null || true
  # The dashboard itself (web.pid is the namespace's wrapper): its account cannot go while it runs.
  pkill -KILL -u $WEB 2>/dev/null || true
  for _ in $(seq 1 50); do pgrep -u $WEB >/dev/null || break; sleep 0.1; done
  userdel $MUM 2>/dev/null || true; userdel $WEB 2>/dev/null || true; groupdel $GROUP 2>/dev/null || true
  rm -f /etc/pam.d/$PAM
  cleanup
}
trap more_cleanup EXIT
cat > $DIR/conf.json <<JSON
{"dnsQueue": $QUEUE, "firewallChain": "$CHAIN", "freezerGroup": "screentime-bench-$ID",
 "categoriesDirectory": "$DIR/categories", "extensionUser": "nobody", "logindBus": "", "focusSocket": "",
 "browserPolicies": "", "guardianGroup": "$GROUP", "pamService": "$PAM", "webUser": "$WEB"}
JSON
chmod 0755 $DIR
start_agent
AGENT=$(cat $DIR/agent.pid)
SCREENTIME_SOCKET=$DIR/s.sock setpriv --reuid=$MUM --regid=users --init-groups -- $BIN/screentime authorize --child $KID >/dev/null
mkdir -m 0700 $DIR/web && chown $WEB $DIR/web
in_ns setpriv --reuid=$WEB --regid=users --init-groups -- $BIN/screentime-web --listen 127.0.0.1 --port 8443 \
  --max-per-device 128 --state-dir $DIR/web --socket $DIR/s.sock </dev/null >$DIR/web.log 2>&1 &
echo $! > $DIR/web.pid
disown
for _ in $(seq 1 200); do [ -f $DIR/web/status.json ] && break; sleep 0.05; done
WEBPID=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' $DIR/web/status.json)
CA=$DIR/web/certificate.pem
# RSS, and how much of it is the program's own memory (anonymous) and how much pages of its file
# (the static binary's code and data: clean, shared with the page cache, dropped under pressure).
rss() {
  awk '/^VmRSS/ {t = $2} /^RssAnon/ {a = $2} /^RssFile/ {f = $2}
    END {printf "%.1f MB (%.1f MB its own, %.1f MB pages of its program file)", t / 1024, a / 1024, f / 1024}' /proc/$1/status
}
idle=$(rss $WEBPID)
cookie=$(in_ns curl -s --cacert $CA -D - -o /dev/null --data-urlencode "user=$MUM" --data-urlencode "password=$PASSWORD" \
  https://127.0.0.1:8443/signin | sed -n 's/^set-cookie: \([^;]*\);.*/\1/Ip')
[ -n "$cookie" ] || { echo "could not sign in"; cat $DIR/web.log; exit 1; }

client() { in_ns python3 "$HERE/web-client.py" "$@"; }
echo "dashboard on loopback over TLS, one kept-alive connection, 200 requests each (ms: p50 p95 max):"
read -r p50 p95 max < <(client latency 127.0.0.1 8443 $CA "$cookie" "/child/$KID" 200)
printf "  %-58s %7s %7s %7s\n" "the child's page (5 agent requests)" "$p50" "$p95" "$max"
read -r p50 p95 max < <(client latency 127.0.0.1 8443 $CA "$cookie" "/" 200)
printf "  %-58s %7s %7s %7s\n" "the family page" "$p50" "$p95" "$max"
read -r p50 p95 max < <(client latency 127.0.0.1 8443 $CA "$cookie" "/static/app.css" 200)
printf "  %-58s %7s %7s %7s\n" "baseline: its style sheet (no agent)" "$p50" "$p95" "$max"
times=()
for _ in $(seq 1 50); do
  start=$(date +%s%N)
  SCREENTIME_SOCKET=$DIR/s.sock setpriv --reuid=$MUM --regid=users --init-groups -- $BIN/screentime report --user $KID >/dev/null
  times+=($(( ($(date +%s%N) - start) / 1000 )))
done
p50=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int(NR/2)+1]/1000}')
printf "  %-58s %7s\n" "baseline: 'screentime report' in a terminal (50 runs, p50)" "$p50"

cpu() { awk '{print $14 + $15}' /proc/$AGENT/stat; }
client streams 127.0.0.1 8443 $CA "$cookie" 100 12 > $DIR/streams.out &
STREAMS=$!
sleep 4
before=$(cpu); mid=$(rss $WEBPID)
SCREENTIME_SOCKET=$DIR/s.sock setpriv --reuid=$KID --regid=users --init-groups -- $BIN/screentime ask --domain example.org --minutes 5 >/dev/null
wait $STREAMS
after=$(cpu)
read -r opened saw < $DIR/streams.out
echo "100 event streams of one session open at once:"
printf "  %-58s %s\n" "streams opened / saw the child's new ask" "$opened / $saw"
printf "  %-58s %s\n" "agent CPU while they were open (~8 s)" "$(( after - before )) clock ticks"
echo "screentime-web memory (RSS):"
printf "  %-58s %s\n" "idle, just started" "$idle"
printf "  %-58s %s\n" "with 100 event streams open" "$mid"
printf "  %-58s %s\n" "after" "$(rss $WEBPID)"
