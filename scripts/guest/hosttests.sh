#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the test guest: host unit tests the host itself cannot run.
# Some machines' kernels have no IA32 emulation, so the -m32 host tests
# (32-bit layouts and arithmetic of the record file reader and the
# netlink library) run here, where the test kernel has it. Each program's
# TAP goes to $KMODLAB_OUT/hosttests/NAME.tap and its status to
# NAME.status; make check counts them.
#   scripts/guest/hosttests.sh PROGRAM...
set -u
dir=${KMODLAB_OUT:-/tmp}/hosttests
mkdir -p "$dir"
rc=0
for t in "$@"; do
	name=${t##*/}
	"$t" > "$dir/$name.tap" 2>&1
	st=$?
	echo "$st" > "$dir/$name.status"
	((st == 0)) || rc=1
done
exit $rc
