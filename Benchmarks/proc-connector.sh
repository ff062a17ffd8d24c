#!/bin/bash
# `make bench`, proc-connector half: the agent's proc-connector reader (libnl-3) beside the
# hand-written reader it replaced (Benchmarks/ProcConnectorBaseline), in alternating rounds of
# the same run, under a fork storm (Benchmarks/fork-storm.c): events read per second, events
# lost (gaps in the kernel's per-CPU event numbers) and the reader thread's CPU time per event,
# with the agent's receive buffer and libnl's default (32 KiB).
#
# Needs root (the proc connector needs CAP_NET_ADMIN). Figures are printed, never asserted.
set -euo pipefail
BIN=${1:?usage: proc-connector.sh BIN_DIR}
if [ "$(id -u)" -ne 0 ]; then echo "proc-connector benchmark skipped: needs root"; exit 0; fi
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$(mktemp -d /tmp/screentime-bench-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
cc -O2 -o "$DIR/fork-storm" "$HERE/fork-storm.c"
"$BIN/ScreenTimeBenchmarks" proc-connector "$DIR/fork-storm"
