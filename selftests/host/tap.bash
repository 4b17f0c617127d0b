# SPDX-License-Identifier: GPL-2.0
# Sourced by the host tests written in bash: one TAP line per check.
# check NAME COMMAND...: "ok N NAME" when COMMAND succeeds, else "not ok".
# End the script with: echo "1..$n"
n=0
check() {
	local name=$1
	shift
	n=$((n + 1))
	if "$@"; then echo "ok $n $name"; else echo "not ok $n $name"; fi
}
