#!/bin/bash
# `make bench`, login part: what the PAM module (pam_screentime.so, in the account and session
# stacks as the package installs it) adds to a login, for someone who is not a child (a guardian,
# a sibling: the module reads the agent's list and returns) and for an authorized child (the agent
# is asked at account and at open_session, and told at close). Each beside the same login through
# the same stack without it, in the same run, through real PAM (Benchmarks/pam-logins.c:
# pam_start, account, open and close a session, pam_end); and beside the floor of the hook it
# replaced, pam_exec starting a program that does nothing (/bin/true). Figures are printed, never
# asserted. About 20 s.
#
#   pam-login.sh BIN_DIR [MODULE]   (MODULE: .build/pam_screentime.so, which `make build` makes)
set -euo pipefail
BIN=${1:?usage: pam-login.sh BIN_DIR [MODULE]}
HERE=$(cd "$(dirname "$0")" && pwd)
MODULE=$(realpath "${2:-$HERE/../.build/pam_screentime.so}")
if [ "$(id -u)" -ne 0 ]; then echo "login benchmark skipped: needs root (test accounts, PAM services)"; exit 0; fi
[ -f "$MODULE" ] || { echo "login benchmark: $MODULE is not built (make build)"; exit 1; }
source "$HERE/agent-in-namespace.sh" stpam
SIB=stpamsib$ID; BASE=stpam-base-$ID; HOOK=stpam-hook-$ID; EXEC=stpam-exec-$ID
useradd -M -N -s /bin/sh $SIB
more_cleanup() { userdel $SIB 2>/dev/null || true; rm -f /etc/pam.d/$BASE /etc/pam.d/$HOOK /etc/pam.d/$EXEC; cleanup; }
trap more_cleanup EXIT
write_config
stack='account required pam_unix.so\nsession required pam_unix.so\n'
module="$MODULE socket=$DIR/s.sock state_dir=$DIR/state"
printf "$stack" > /etc/pam.d/$BASE
printf "${stack}account required $module\nsession required $module\n" > /etc/pam.d/$HOOK
printf "${stack}account required pam_exec.so quiet /bin/true\nsession required pam_exec.so quiet /bin/true\n" > /etc/pam.d/$EXEC
cc -O2 -o $DIR/pam-logins "$HERE/pam-logins.c" -lpam
start_agent
st authorize --child $KID
for _ in $(seq 1 100); do grep -q " $KID" $DIR/state/login-children 2>/dev/null && break; sleep 0.05; done
logins() { in_ns $DIR/pam-logins "$@"; }
logins $HOOK $KID 5 >/dev/null  # the agent's first answers
added() { awk -v h=$1 -v b=$2 'BEGIN { printf "%.2f", h - b }'; }
echo "a login through PAM (account, session opened and closed), 200 each (ms: p50 p95 max):"
for who in "$SIB:someone not a child" "$KID:an authorized child"; do
  user=${who%%:*}; what=${who#*:}
  read -r b50 b95 bmax < <(logins $BASE $user 200)
  read -r h50 h95 hmax < <(logins $HOOK $user 200)
  printf "  %-52s %7s %7s %7s\n" "$what, without it" "$b50" "$b95" "$bmax"
  printf "  %-52s %7s %7s %7s   added p50 %s ms\n" "$what, with pam_screentime" "$h50" "$h95" "$hmax" "$(added $h50 $b50)"
done
read -r e50 e95 emax < <(logins $EXEC $SIB 200)
printf "  %-52s %7s %7s %7s   added p50 %s ms\n" "the floor of a pam_exec hook (/bin/true, 3 calls)" "$e50" "$e95" "$emax" "$(added $e50 $b50)"
