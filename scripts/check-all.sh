#!/bin/bash
# `make check-all` (what CI runs): `make check` on both LTS test kernels,
# 6.12 then 6.1, each building its cached kernel if needed. Prints each
# run in full, then one line adding them up: "N passed, N failed, N skipped".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
pass=0 fail=0 skip=0 rc=0
for kver in 6.12 6.1; do
	echo "##### make check KVER=$kver"
	log=$(mktemp)
	KVER=$kver PROFILE=default "$here/check.sh" 2>&1 | tee "$log"
	((PIPESTATUS[0] == 0)) || rc=1
	line=$(tail -n 1 "$log")
	rm -f "$log"
	if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
		pass=$((pass + BASH_REMATCH[1]))
		fail=$((fail + BASH_REMATCH[2]))
		skip=$((skip + BASH_REMATCH[3]))
	else
		echo "FAIL: make check KVER=$kver ended without a summary line"
		fail=$((fail + 1))
		rc=1
	fi
done
echo
echo "$pass passed, $fail failed, $skip skipped"
exit $rc
