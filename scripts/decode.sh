#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make decode < oops.txt`: an oops or any kernel call trace, with every
# function+offset/length turned into its source file and line (inlined
# callers too), by the kernel's scripts/decode_stacktrace.sh with the test
# kernel's vmlinux and the modules' debug info.
#
#   scripts/decode.sh [--ko-dir DIR] < LOG
#
# DIR: where the modules of the trace were built (a lab's student tree);
# default the repository's build for KVER/PROFILE. Lines that are not a
# trace pass through unchanged, so a whole console log can be fed in.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
ko=$repo/build/kmod/${KVER:-6.12}-${PROFILE:-default}
while (($#)); do
	case $1 in
	--ko-dir) [[ -n ${2:-} ]] || { echo "decode.sh: --ko-dir needs a directory" >&2; exit 2; }
		ko=$(cd "$2" && pwd) || exit 2; shift 2 ;;
	*) echo "usage: scripts/decode.sh [--ko-dir DIR] < LOG" >&2; exit 2 ;;
	esac
done
# addr2line, readelf and nm: binutils
"$here/deps.sh" pkg=binutils
kdir=$("$here/kernel.sh" kdir)
src=$("$here/kernel.sh" src)
if [[ ! -e $kdir/vmlinux ]]; then
	echo "make decode: no test kernel at $kdir: run 'make kernel' first" >&2
	exit 1
fi
if ! grep -qx 'CONFIG_DEBUG_INFO=y' "$kdir/.config"; then
	echo "make decode: $kdir was built without debug info: nothing to decode with" >&2
	exit 1
fi
if [[ -t 0 ]]; then
	echo "make decode: paste the oops, then Ctrl-D (or: make decode < FILE)" >&2
fi
exec "$src/scripts/decode_stacktrace.sh" "$kdir/vmlinux" "$src" "$ko"
