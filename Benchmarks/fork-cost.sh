#!/bin/bash
# The agent's CPU per fork of a child's process, on an INSTALLED agent (not part of `make bench`,
# which runs built binaries): 200 idle processes of the child in the agent's table, then a fork
# storm of hers (2 workers, 10 s; Benchmarks/fork-storm.c), 3 rounds. Figures are printed.
#
#   sudo Benchmarks/fork-cost.sh CHILD      CHILD: an account authorized as a child
set -euo pipefail
child=${1:?usage: fork-cost.sh CHILD}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'pkill -u "$child" -x sleep >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
cc -O2 -o "$dir/fork-storm" "$here/fork-storm.c"
chmod 755 "$dir"
as_child() { setpriv --reuid="$child" --regid=users --init-groups -- "$@"; }
(for _ in $(seq 200); do as_child sleep 600 & done) >/dev/null 2>&1
sleep 2
agent=$(pgrep -x screentimed | head -n 1)
ticks() { awk '{print $14 + $15}' "/proc/$agent/stat"; }
hz=$(getconf CLK_TCK)
for round in 1 2 3; do
    before=$(ticks)
    forks=$(as_child "$dir/fork-storm" 2 10 | tr -dc 0-9)
    after=$(ticks)
    ms=$(((after - before) * 1000 / hz))
    echo "round $round: $forks forks in 10 s, agent CPU $ms ms, $((ms * 1000 / forks)) us a fork"
done
