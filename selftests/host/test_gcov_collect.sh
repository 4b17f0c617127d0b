#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of scripts/kml-gcov-collect's command line: the clients'
# conventions (--help on stdout with 0, -V, a usage error one line and
# status 2, a runtime error status 1, output it cannot write an error).
# TAP output; run by `make check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=selftests/host/tap.bash
. "$here/tap.bash"
c=$repo/scripts/kml-gcov-collect

out=$("$c" --help 2> /dev/null)
check "--help: status 0" test $? -eq 0
check "--help: the usage on stdout, from its first line" \
	test "$(head -n 1 <<< "$out")" == "kml-gcov-collect: gather the kmodlab modules' coverage counters on the"
check "--help: names every command" bash -c 'for w in reset capture archive run; do
	grep -q "kml-gcov-collect $w" <<< "$1" || exit 1; done' _ "$out"
check "--help: no SPDX line, no note for the sourcing script" bash -c '! grep -qE "SPDX|scripts/guest" <<< "$1"' _ "$out"
check "-h is --help" test "$("$c" -h)" == "$out"
want=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$repo/dkms.conf")
check "-V: kmodlab's version (dkms.conf)" test "$("$c" -V)" == "kml-gcov-collect (kmodlab) $want"
for args in "--bogus" "-x" "" "frob" "reset extra" "capture" "archive d" "run f true" "-m"; do
	# shellcheck disable=SC2086
	err=$("$c" $args 2>&1 > /dev/null)
	rc=$?
	check "usage error '$args': status 2, one line naming --help" \
		bash -c '(($1 == 2)) && [[ $(wc -l <<< "$2") == 1 && $2 == kml-gcov-collect:*--help* ]]' _ "$rc" "$err"
done
err=$(KMODLAB_GCOV_DEBUGFS=/nonexistent "$c" reset 2>&1)
check "runtime error (no counters): status 1, one line" \
	bash -c '(($1 == 1)) && [[ $(wc -l <<< "$2") == 1 && $2 == kml-gcov-collect:* ]]' _ "$?" "$err"
for opt in --help -V; do
	err=$("$c" "$opt" 2>&1 > /dev/full)
	check "$opt to /dev/full: status 1, 'cannot write the output'" \
		bash -c '(($1 == 1)) && [[ $2 == "kml-gcov-collect: cannot write the output" ]]' _ "$?" "$err"
done
echo "1..$n"
