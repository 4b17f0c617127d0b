#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make check-all` (what CI runs): the whole `make check` on the 6.12 test
# kernel; then only the kernel-dependent parts (guest selftests, coverage)
# on the 6.1 test kernel and on the 6.12 debug kernel (KASAN, lockdep,
# kmemleak, UBSAN, atomic-sleep: any splat fails the run); then the guest
# selftests on Debian's own cloud kernels, 6.1 and 6.12 (`make
# check-stock`). Each test kernel is built once and cached. Prints each
# run in full, then one line adding them up: "N passed, N failed, N skipped".
# The 6.12 run captures coverage per test (COVERAGE=per-test), so CI
# checks that mode too; everywhere else it is per program.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
pass=0 fail=0 skip=0 rc=0
runs=(
	"make check KVER=6.12 COVERAGE=per-test|env KVER=6.12 PROFILE=default COVERAGE=per-test $here/check.sh"
	"make check KVER=6.1 (guest)|env KVER=6.1 PROFILE=default KMODLAB_CHECK_PARTS=guest,coverage,labs $here/check.sh"
	"make check PROFILE=debug (guest)|env KVER=6.12 PROFILE=debug KMODLAB_CHECK_PARTS=guest KMODLAB_VM_TIMEOUT=3000 $here/check.sh"
	"make check-stock STOCK=6.1|env STOCK=6.1 $here/stock.sh"
	"make check-stock STOCK=6.12|env STOCK=6.12 $here/stock.sh"
)
mkdir -p build
# The 6.1 and debug kernels build in the background (niced) while the
# first run's tests leave the CPUs idle between guests; each later run
# waits for its kernel in kernel.sh. With a warm cache this does nothing.
(
	KVER=6.1 PROFILE=default nice -n 19 "$here/kernel.sh" build
	KVER=6.12 PROFILE=debug nice -n 19 "$here/kernel.sh" build
) > build/check-all-kernels.log 2>&1 &
for run in "${runs[@]}"; do
	name=${run%%|*}
	echo "##### $name"
	log=$(mktemp)
	${run#*|} 2>&1 | tee "$log"
	((PIPESTATUS[0] == 0)) || rc=1
	line=$(tail -n 1 "$log")
	rm -f "$log"
	if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
		pass=$((pass + BASH_REMATCH[1]))
		fail=$((fail + BASH_REMATCH[2]))
		skip=$((skip + BASH_REMATCH[3]))
	else
		echo "FAIL: $name ended without a summary line"
		fail=$((fail + 1))
		rc=1
	fi
done
echo
echo "$pass passed, $fail failed, $skip skipped"
exit $rc
