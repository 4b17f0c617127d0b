#!/bin/bash
# `make demo`, guest side: load each kmodlab module and drive its client,
# narrating as it goes, so a newcomer sees the whole path work once.
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
ko=$repo/build/kmod/${KVER:-6.12}-${PROFILE:-default}/modules
bin=$repo/build/bin
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { say "$*"; "$@"; }

echo "kmodlab demo on Linux $(uname -r)"

run insmod "$ko/kml_stats/kml_stats.ko" demo_counters=4
run ls -l /proc/kmodlab
run head -8 /proc/kmodlab/stats
run "$bin/kml-stats"
run "$bin/kml-stats" --json demo/values
say "kml-stats -w 1 -c 3 kml_stats   # per-second rates while something reads the file"
(for _ in $(seq 30); do cat /proc/kmodlab/stats > /dev/null; sleep 0.1; done) &
"$bin/kml-stats" -w 1 -c 3 kml_stats
wait
run "$bin/kml-stats" reset demo
run "$bin/kml-stats" demo/c
say "setpriv --reuid=nobody $bin/kml-stats reset   # unprivileged: refused"
setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/kml-stats" reset || echo "(exit status $?)"
run rmmod kml_stats
say "$bin/kml-stats   # module gone: a clear error"
"$bin/kml-stats" || echo "(exit status $?)"
echo
echo "demo finished"
