#!/bin/bash
# `make bench`, login part: what the PAM hook (screentime-pam, run by pam_exec in the account and
# session stacks as the package installs it) adds to a login, for someone who is not a child (a
# guardian, a sibling: the hook reads the agent's list and ends) and for an authorized child (the
# agent is asked at account and at open_session, and told at close). Each beside the same login
# through the same stack without the hook, in the same run, through real PAM (Benchmarks/
# pam-logins.c: pam_start, account, open and close a session, pam_end). Figures are printed, never
# asserted. About 20 s.
set -euo pipefail
BIN=${1:?usage: pam-login.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "login benchmark skipped: needs root (test accounts, PAM services)"; exit 0; fi
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/agent-in-namespace.sh" stpam
SIB=stpamsib$ID; BASE=stpam-base-$ID; HOOK=stpam-hook-$ID
useradd -M -N -s /bin/sh $SIB
more_cleanup() { userdel $SIB 2>/dev/null || true; rm -f /etc/pam.d/$BASE /etc/pam.d/$HOOK; cleanup; }
trap more_cleanup EXIT
cat > $DIR/conf.json <<JSON
{"dnsQueue": $QUEUE, "firewallChain": "$CHAIN", "freezerGroup": "screentime-bench-$ID",
 "categoriesDirectory": "$DIR/categories", "extensionUser": "nobody", "logindBus": "", "focusSocket": "",
 "browserPolicies": ""}
JSON
stack='account required pam_unix.so\nsession required pam_unix.so\n'
hook="pam_exec.so quiet stdout seteuid $BIN/screentime-pam --socket $DIR/s.sock --state-dir $DIR/state"
printf "$stack" > /etc/pam.d/$BASE
printf "${stack}account required $hook\nsession required $hook\n" > /etc/pam.d/$HOOK
cc -O2 -o $DIR/pam-logins "$HERE/pam-logins.c" -lpam
start_agent
st authorize --child $KID
for _ in $(seq 1 100); do grep -q " $KID" $DIR/state/login-children 2>/dev/null && break; sleep 0.05; done
logins() { in_ns $DIR/pam-logins "$@"; }
logins $HOOK $KID 5 >/dev/null  # the agent's first answers, and the program's pages read
echo "a login through PAM (account, session opened and closed), 200 each (ms: p50 p95 max):"
for who in "$SIB:someone not a child" "$KID:an authorized child"; do
  user=${who%%:*}; what=${who#*:}
  read -r b50 b95 bmax < <(logins $BASE $user 200)
  read -r h50 h95 hmax < <(logins $HOOK $user 200)
  printf "  %-44s %7s %7s %7s\n" "$what, without the hook" "$b50" "$b95" "$bmax"
  printf "  %-44s %7s %7s %7s   added p50 %s ms\n" "$what, with screentime-pam" "$h50" "$h95" "$hmax" \
    "$(awk -v h=$h50 -v b=$b50 'BEGIN { printf "%.2f", h - b }')"
done
