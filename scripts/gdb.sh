#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make gdb`: gdb on the test guest's kernel, through the stub that
# `make vm GDB=1` (scripts/vm-run.sh --gdb) opened on a unix socket.
#
#   scripts/gdb.sh [GDB ARGS...]      e.g. -batch -ex 'lx-symbols DIR' ...
#
# It loads the test kernel's vmlinux (built with debug info) and the
# kernel's own gdb scripts beside it (CONFIG_GDB_SCRIPTS: vmlinux-gdb.py
# and the lx-* commands), so `lx-symbols DIR` finds the modules' symbols
# at the addresses the guest loaded them at, now and at every later
# insmod. Stopping gdb (quit, detach) lets the guest run on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
sock=${KMODLAB_GDB_SOCK:-$repo/build/vm/gdb.sock}

"$here/deps.sh" pkg=gdb
kdir=$("$here/kernel.sh" kdir)
src=$("$here/kernel.sh" src)
if [[ ! -e $kdir/vmlinux-gdb.py ]]; then
	echo "make gdb: $kdir has no vmlinux-gdb.py: that kernel was built without CONFIG_GDB_SCRIPTS" >&2
	exit 1
fi
if [[ ! -S $sock ]]; then
	echo "make gdb: no guest is listening on $sock: start one with 'make vm GDB=1' in another terminal" >&2
	exit 1
fi
# gdb runs a tree's python scripts only from paths it was told are safe
exec gdb -q -iex "add-auto-load-safe-path $kdir" -iex "add-auto-load-safe-path $src" \
	-iex "set pagination off" -ex "target remote $sock" "$@" "$kdir/vmlinux"
