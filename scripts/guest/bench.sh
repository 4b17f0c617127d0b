#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`, guest side: load the modules and run every benchmark.
# KMODLAB_KO_DIR is the modules' build (the test kernel's, or the stock
# kernel's from scripts/bench.sh STOCK=). A benchmark that fails does not
# stop the others; the status says one did.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
ko=${KMODLAB_KO_DIR:-$repo/build/kmod/${KVER:-6.12}-${PROFILE:-default}}/modules
status=0
run() {
	"$@" || { echo "${1##*/} failed"; status=1; }
	echo
}
echo "kernel $(uname -r); under TCG only the ratios below mean anything"
echo
insmod "$ko/kml_stats/kml_stats.ko" || exit 1
if [[ ! -d /sys/class/hwmon ]]; then	# Debian's cloud kernels
	printf '%s\n\n' "kml_sensor: no hwmon in this kernel, so no ioctl/hwmon comparison"
elif insmod "$ko/kml_sensor/kml_sensor.ko" channels=8; then
	run "$repo/build/bench/kml_sensor_bench"
fi
if insmod "$ko/kml_probe/kml_probe_target.ko" && insmod "$ko/kml_probe/kml_probe.ko"; then
	KMODLAB_BPF=$repo/build/bpf/kml-bpf run "$repo/build/bench/kml_probe_bench"
else
	echo "kml_probe did not load: its benchmarks not run"; status=1
fi
if insmod "$ko/kml_ring/kml_ring.ko"; then
	run "$repo/build/bench/kml_ring_bench"
else
	echo "kml_ring did not load: its benchmarks not run"; status=1
fi
# kml-probe record against perf record (needs kml_probe and kml_ring)
run "$repo/build/bench/kml_record_bench" "$repo/build/bin"
run "$repo/build/bench/kml_filter_bench" "$ko/kml_filter/kml_filter.ko"
rmmod kml_sensor 2>/dev/null
rmmod kml_probe kml_probe_target kml_ring kml_stats
exit $status
