#!/bin/bash
# `make check-all` (what CI runs): `make check` on both LTS test kernels,
# 6.12 then 6.1 (each builds its cached kernel if needed), then the guest
# selftests on Debian's own cloud kernels, 6.1 and 6.12 (`make
# check-stock`). Prints each run in full, then one line adding them up:
# "N passed, N failed, N skipped".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
pass=0 fail=0 skip=0 rc=0
runs=(
	"make check KVER=6.12|env KVER=6.12 PROFILE=default $here/check.sh"
	"make check KVER=6.1|env KVER=6.1 PROFILE=default $here/check.sh"
	"make check-stock STOCK=6.1|env STOCK=6.1 $here/stock.sh"
	"make check-stock STOCK=6.12|env STOCK=6.12 $here/stock.sh"
)
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
