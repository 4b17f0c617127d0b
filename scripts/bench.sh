#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: benchmarks in one guest run, reported as ratios. Not a test:
# nothing here passes or fails on a number.
#
#   make bench               the test kernel (KVER, PROFILE)
#   make bench STOCK=6.12    Debian's stock cloud kernel of that series
#                            (scripts/stock.sh prepares it), in a
#                            single-threaded TCG guest: the peers' probes
#                            and tracepoints patch kernel text there
#                            (static keys), which multi-threaded TCG does
#                            not emulate faithfully
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
strip_kernel_log() { grep -v '^\[ *[0-9.]*\]'; }
# The peer perf record is the perf Debian ships for the kernel's series
# (scripts/perf-for.sh); without it, the host's (the bench names which).
perf_for() { # $1 = series
	if KMODLAB_PERF=$("$here/perf-for.sh" "$1"); then
		export KMODLAB_PERF
	else
		unset KMODLAB_PERF
		echo "bench.sh: no perf of $1: the host's records" >&2
	fi
}
if [[ -z ${STOCK:-} ]]; then
	"$here/deps.sh" host kernel vm trace bpf
	"$here/kernel.sh" build
	make -s all bench-build
	# labs/bpf's loader, a peer of kml_probe (it needs the default
	# profile's kernel: BTF)
	PROFILE=default "$here/kernel.sh" build
	make -s bpf
	# the modules measured are built without gcov's counters (which
	# make check's have): a branch counted is an instruction more than
	# the peers' code runs
	make -s KMODLAB_GCOV=0 modules
	perf_for "${KVER:-6.12}"
	"$here/vm-run.sh" --timeout 900 --out build/vm/bench -- \
		env KMODLAB_KO_DIR="$PWD/build/kmod/${KVER:-6.12}-${PROFILE:-default}-nogcov" \
		scripts/guest/bench.sh |
		strip_kernel_log | tee build/bench.txt
	exit "${PIPESTATUS[0]}"
fi
mkdir -p build
paths=build/stock-$STOCK.paths
STOCK=$STOCK "$here/stock.sh" prepare "$paths" >&2
dir='' kdir='' kbuild=''	# set by the file stock.sh wrote
# shellcheck source=/dev/null
source "$paths"
make -s KDIR="$kdir" modules
make -s bench-build
perf_for "$STOCK"
"$here/vm-run.sh" --stock "$dir" --tcg-single --timeout 1800 --out "build/vm/bench-stock-$STOCK" \
	-- env KMODLAB_KO_DIR="$kbuild" scripts/guest/bench.sh |
	strip_kernel_log | tee "build/bench-stock-$STOCK.txt"
exit "${PIPESTATUS[0]}"
