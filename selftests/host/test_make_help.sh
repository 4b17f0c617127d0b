#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of `make help`: every target the Makefile accepts (its GOALS)
# is named there as "make TARGET", so that nobody has to read the
# Makefile to find one. TAP output; run by `make check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=selftests/host/tap.bash
. "$here/tap.bash"

help=$(make -s -C "$repo" help 2>&1)
goals=$(sed -n '/^GOALS :=/,/[^\\]$/p' "$repo/Makefile" | sed 's/^GOALS :=//; s/\\$//' | tr -s ' \t' '\n' | grep .)
check "make help prints" test -n "$help"
check "the Makefile has its GOALS" test "$(wc -l <<< "$goals")" -gt 20
for g in $goals; do
	check "make help names make $g" grep -qE "(^|[ (/])make $g([ ,)]|$)" <<< "$help"
done
echo "1..$n"
