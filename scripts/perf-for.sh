#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The perf of a kernel series: what reads perf.data in the guest tests
# (kml_probe_test's record.client_perf_data_is_read_by_perf) and records
# in make bench, so each kernel is checked against the perf Debian ships
# for it, not whatever this host has.
#
#   scripts/perf-for.sh SERIES        (MAJOR.MINOR, e.g. 6.12 or 7.3)
#
# Prints the path of that perf: this host's when it is of SERIES (Debian
# 12's linux-perf is 6.1's), else Debian 13's of SERIES (trixie's 6.12,
# trixie-backports' newer ones), which runs from a layer over a Debian 13
# system in the cache (scripts/trixie-root.sh perf: built once, as root).
# Exits 1 saying why when there is none; 2 on a malformed SERIES.
# KMODLAB_TRIXIE_ROOT replaces scripts/trixie-root.sh (the host tests' stub).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
series=${1:-}
if [[ ! $series =~ ^[0-9]+\.[0-9]+$ ]]; then
	echo "usage: $0 SERIES (MAJOR.MINOR, e.g. 6.12), not '$series'" >&2
	exit 2
fi
host=$(perf --version 2>/dev/null | sed -n 's/^perf version \([0-9]*\.[0-9]*\)[.-].*/\1/p') || true
if [[ $host == "$series" ]]; then
	command -v perf
	exit 0
fi
if ! out=$("${KMODLAB_TRIXIE_ROOT:-$here/trixie-root.sh}" perf "$series" 2>&1 | tail -n 1) ||
   [[ ! -x $out ]]; then
	echo "perf-for.sh: no perf $series: this host's is ${host:-not installed}, and" \
		"Debian 13's did not come: $out" >&2
	exit 1
fi
echo "$out"
