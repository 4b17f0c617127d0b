#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the test guest: every client against the real modules under
# valgrind's memcheck, as TAP. A leak or memory error fails its line.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
ko=$repo/build/kmod/${KVER:-6.12}-${PROFILE:-default}/modules
bin=$repo/build/bin
tap=${KMODLAB_OUT:-/tmp}/valgrind.tap

insmod "$ko/kml_stats/kml_stats.ko" demo_counters=50
insmod "$ko/kml_sensor/kml_sensor.ko"
insmod "$ko/kml_probe/kml_probe_target.ko"
insmod "$ko/kml_probe/kml_probe.ko"
insmod "$ko/kml_ring/kml_ring.ko"
insmod "$ko/kml_filter/kml_filter.ko"

# Valgrind under TCG is slow: one run per code path that allocates.
cmds=(
	"kml-stats --json -w 0.2 -c 2 demo"
	"kml-sensor --json read"
	"kml-sensor watch -c 2"
	"kml-probe attach kml_probe_target --args 2"
	"kml-probe hist kml_probe_target"
	"kml-ring produce --size 128 --rate 1000 --count 200"
	"kml-ring --json stat"
	"kml-filter load $repo/selftests/fuzz/corpus/kml_filter/c"
	"kml-filter list -v"
	"kml-filter --json list"
)
echo "1..${#cmds[@]}" | tee "$tap"
rc=0 i=0
for c in "${cmds[@]}"; do
	i=$((i + 1))
	read -ra argv <<< "$c"
	if valgrind -q --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all \
		--error-exitcode=99 "$bin/${argv[0]}" "${argv[@]:1}" > /run/vg.out 2>&1; then
		echo "ok $i valgrind $c" | tee -a "$tap"
	else
		sed 's/^/# /' /run/vg.out | tail -20 | tee -a "$tap"
		echo "not ok $i valgrind $c" | tee -a "$tap"
		rc=1
	fi
done
rmmod kml_filter kml_ring kml_probe kml_probe_target kml_sensor kml_stats
exit $rc
