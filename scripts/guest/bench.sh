#!/bin/bash
# `make bench`, guest side: load the modules and run every benchmark.
# KMODLAB_KO_DIR is the modules' build (the test kernel's, or the stock
# kernel's from scripts/bench.sh STOCK=).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
ko=${KMODLAB_KO_DIR:-$repo/build/kmod/${KVER:-6.12}-${PROFILE:-default}}/modules
echo "kernel $(uname -r); under TCG only the ratios below mean anything"
echo
insmod "$ko/kml_stats/kml_stats.ko"
insmod "$ko/kml_sensor/kml_sensor.ko" channels=8
"$repo/build/bench/kml_sensor_bench"
echo
insmod "$ko/kml_probe/kml_probe_target.ko"
insmod "$ko/kml_probe/kml_probe.ko"
"$repo/build/bench/kml_probe_bench"
echo
insmod "$ko/kml_ring/kml_ring.ko"
"$repo/build/bench/kml_ring_bench"
echo
"$repo/build/bench/kml_filter_bench" "$ko/kml_filter/kml_filter.ko"
rmmod kml_ring kml_probe kml_probe_target kml_sensor kml_stats
