#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# PID 1 of the kmodlab test guest (see scripts/vm-run.sh).
#
# The root filesystem is the host's, read-only over 9p, so everything the
# host has (bash, coreutils, kmod, the project's fresh build) runs here
# unchanged. This script mounts what a system needs, runs the command the
# host left in the writable "kmlout" share, hands back its exit status,
# kernel log and gcov counters, and powers off. It must never exit: PID 1
# exiting is a panic.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export TERM=${TERM:-linux} LANG=C.UTF-8
repo=${kmodlab_repo:?kmodlab_repo= missing from the kernel command line}
mode=${kmodlab_mode:-run}
out=/mnt

# Every exec here loads its binary and libraries over 9p, which costs
# a good part of a second under TCG: so one mount(8) for all filesystems,
# from a table written to /run, and shell builtins where they do.
mount -t proc proc /proc
mount -t tmpfs tmpfs /run
fstab="sysfs /sys sysfs defaults 0 0
debugfs /sys/kernel/debug debugfs defaults 0 0
devtmpfs /dev devtmpfs defaults 0 0
devpts /dev/pts devpts X-mount.mkdir 0 0
tmpfs /dev/shm tmpfs X-mount.mkdir 0 0
tmpfs /run/home tmpfs X-mount.mkdir 0 0"
# Writable scratch space, but never over the directory we run from.
for d in /tmp /var/tmp; do
	case $repo/ in "$d"/*) continue ;; esac
	fstab+=$'\n'"tmpfs $d tmpfs defaults 0 0"
done
# mount -a skips what is already mounted (/dev on the stock kernels'
# initramfs). libmount cannot parse a table from a pipe: hence the file.
echo "$fstab" > /run/fstab
mount -a -T /run/fstab
export HOME=/run/home TMPDIR=/run
# 9p on the test kernel; virtiofs on the stock kernels (scripts/stock.sh)
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 kmlout "$out" 2>/dev/null ||
	mount -t virtiofs kmlout "$out"
ip link set lo up 2>/dev/null
echo kmodlab-guest > /proc/sys/kernel/hostname
export KMODLAB_OUT=$out KMODLAB_GUEST=1

cd "$repo" || echo "init: cannot enter $repo" >&2
export KVER=${kmodlab_kver:-6.12} PROFILE=${kmodlab_profile:-default}
# The same environment for the shell, piped `make vm` scripts and COMMAND
# (which may set its own KMODLAB_KO_DIR): the clients on PATH, the modules.
ko=${kmodlab_ko_dir:-$repo/build/kmod/$KVER-$PROFILE}
export PATH=$repo/build/bin:$PATH KMODLAB_KO_DIR=$ko KMODLAB_BIN=$repo/build/bin KMODLAB_REPO=$repo
# kmodlab_gcov_only=P,... keeps the counters whose path contains a P.
export KMODLAB_GCOV=${kmodlab_gcov:-1} KMODLAB_GCOV_ONLY=${kmodlab_gcov_only:-/modules/kml_,/modules/tests/}
# Each run counts from zero (a user's machine may hold counters of an
# earlier run; here it is a fresh boot, and the reset is one write).
[[ $KMODLAB_GCOV == 1 && -w /sys/kernel/debug/gcov/reset ]] && echo 1 > /sys/kernel/debug/gcov/reset
if [[ $mode == shell ]]; then
	echo
	echo "kmodlab guest: Linux $(uname -r) (KVER=$KVER PROFILE=$PROFILE)"
	echo "Load a module (kml_stats first: the others use it), e.g.:"
	for m in kml_hello/kml_hello kml_debug/kml_debug kml_stats/kml_stats kml_sensor/kml_sensor \
		 kml_probe/kml_probe_target kml_probe/kml_probe kml_ring/kml_ring \
		 kml_filter/kml_filter; do
		[[ -e $ko/modules/$m.ko ]] && echo "  insmod $ko/modules/$m.ko"
	done
	echo "Clients (kml-stats, kml-sensor, ...) are on PATH; dmesg shows the kernel log."
	echo "Changed a module? Rebuild on the host (make modules, in another"
	echo "terminal), then here: rmmod kml_x; insmod <the same path>."
	echo "Leave: exit (or Ctrl-D; Ctrl-A X kills the guest at once)."
	setsid -c bash -i </dev/ttyS0 >/dev/ttyS0 2>&1
	rc=$?
else
	bash "$out/cmd"
	rc=$?
fi

# Leaks are only reported after a scan; give kmemleak a chance to find them.
if [[ -w /sys/kernel/debug/kmemleak ]]; then
	echo "init: kmemleak scan"	# it can take minutes: say why we are quiet
	echo scan > /sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak > "$out/kmemleak.txt"
fi
# Coverage counters, with the same collector a user runs on their own
# test machine (scripts/kml-gcov-collect), unless COMMAND captured its own
# (scripts/guest/selftests.sh names one capture per program or test).
[[ ${kmodlab_gcov:-1} == 1 && -d /sys/kernel/debug/gcov && ! -e $out/gcov ]] &&
	"$repo/scripts/kml-gcov-collect" -m "$KMODLAB_GCOV_ONLY" capture "$out/gcov" all
dmesg > "$out/dmesg.txt"
# The share has no write cache (9p cache=none, virtiofs cache=none):
# every write has reached the host when it returns, so no sync.
echo "$rc" > "$out/status"
echo o > /proc/sysrq-trigger
# SysRq powers off from a workqueue: a broken module that left a worker
# spinning (a lab's catalogued mistake, say) can keep it from ever
# running, and the guest would sit out vm-run's whole time-out. Then
# reboot(2) in this task, which stops the other CPUs itself (and QEMU's
# -no-reboot ends the run).
sleep 10
echo "init: power-off did not happen; rebooting (the run ends)" >&2
: > "$out/poweroff-fallback"
python3 -c 'import ctypes; ctypes.CDLL(None).reboot(0x01234567)'
while :; do sleep 3600; done
