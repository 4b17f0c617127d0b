#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# In a stock Debian kernel's guest: use the packages scripts/deb-install.sh
# installed (on the host, DKMS building the modules against this kernel's
# headers), as a user would.
#   scripts/guest/deb-check.sh PKG_DIR [LOWER]
#
# The guest's / is the host's, read-only. An overlay (tmpfs over it) makes
# a writable copy of the system the packages were installed into (LOWER,
# as deb-install.sh had it: / by default), and a second one of this
# kernel's /lib/modules; the install's changes (PKG_DIR/up, PKG_DIR/mup)
# are copied into them, and the tests run in a chroot there: modprobe
# loads the modules by name (depmod's order: kml_stats first), the
# installed clients talk to them (the host removes them afterwards).
# Writes TAP to $KMODLAB_OUT/deb.tap.
set -uo pipefail
pkg=$(cd "${1:?usage: deb-check.sh PKG_DIR [LOWER]}" && pwd)
# For a Debian 13 kernel LOWER is the Debian 13 chroot the install ran in
# (scripts/trixie-root.sh's layers, seen here at their host paths): its
# changes are that system's (its dpkg database, DKMS's tree over its
# headers) and laid over this Debian 12 / they would make a mix of two
# releases that no user has. So they go over the same Debian 13 tree:
# modprobe and man are Debian 13's, the clients run on its libraries.
lower=${2:-/}
tap=${KMODLAB_OUT:-/tmp}/deb.tap
abi=$(uname -r)
n=0 failed=0
: > "$tap"
t0=$SECONDS
ok() { # $1 = status, rest = what
	local st=$1
	shift
	n=$((n + 1))
	if ((st == 0)); then
		echo "ok $n - $* # $((SECONDS - t0)) s" | tee -a "$tap"
	else
		echo "not ok $n - $* # $((SECONDS - t0)) s" | tee -a "$tap"
		failed=1
	fi
	t0=$SECONDS
}
log=/run/deb-install.log
# run in the installed system; its output goes to the log (and on failure,
# to the console)
in_root() {
	chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@" >> $log 2>&1
	local rc=$?
	((rc)) && { echo "--- $* exited $rc:"; tail -25 $log; }
	return $rc
}

root=/run/sys
modprobe overlay
mkdir -p /run/ovl/{up,work,mup,mwork} $root
mount -t overlay overlay -o "lowerdir=$lower,upperdir=/run/ovl/up,workdir=/run/ovl/work" $root &&
	mount -t overlay overlay \
		-o lowerdir=/lib/modules,upperdir=/run/ovl/mup,workdir=/run/ovl/mwork \
		$root/lib/modules &&
	mount --rbind /dev $root/dev && mount -t proc proc $root/proc &&
	mount -t sysfs sysfs $root/sys && mount -t tmpfs tmpfs $root/tmp &&
	mount -t tmpfs tmpfs $root/run
ok $? "a writable copy of the system to install into"
# The install's changes, but not its whiteouts (character devices 0/0:
# files dpkg replaced), which only an overlay's own upper layer may hold.
copy_in() { # $1 = changes, $2 = where
	(cd "$1" && find . -mindepth 1 ! -type c -print0 | cpio -pdmu0 --quiet "$2")
}
copy_in "$pkg/up" "$root" && copy_in "$pkg/mup" "$root/lib/modules"
ok $? "the installed system over the guest's"
mods=$(find "$root/lib/modules/$abi/updates/dkms" -name 'kml_*.ko*' -printf '%f\n' | sort | tr '\n' ' ')
echo "# installed: $mods"
[[ ${mods//.xz/} == "kml_filter.ko kml_probe.ko kml_probe_target.ko kml_ring.ko kml_sensor.ko kml_stats.ko " ]]
ok $? "the six modules, no test-only module"

# modprobe knows kml_sensor needs kml_stats (depmod, run by DKMS)
in_root modprobe kml_sensor && in_root modprobe kml_probe_target && in_root modprobe kml_probe &&
	in_root modprobe kml_ring &&
	in_root modprobe kml_filter
ok $? "modprobe kml_sensor kml_probe_target kml_probe kml_ring kml_filter (kml_stats pulled in)"
grep -qw kml_stats /proc/modules
ok $? "kml_stats loaded as a dependency"
for m in kml_stats kml_sensor kml_probe kml_ring kml_filter; do
	f=$(chroot $root modinfo -n $m 2>&1)
	[[ $f == /lib/modules/$abi/updates/dkms/$m.ko* && $(< /sys/module/$m/taint) == *O* ]] ||
		{ echo "# $m: $f, taint $(cat /sys/module/$m/taint 2>&1)"; false; } || break
done
ok $? "the loaded modules are DKMS's (updates/dkms, out-of-tree taint)"

in_root kml-stats --version && grep -q "^kml-stats (kmodlab) " $log
ok $? "kml-stats --version"
in_root kml-sensor read && in_root kml-stats --json && grep -q '"set":"kml_sensor"' $log
ok $? "kml-sensor read, kml-stats --json: the installed clients talk to the modules"
in_root kml-probe attach kml_probe_target && in_root kml-probe call 10 1 &&
	in_root kml-probe list && in_root kml-probe detach kml_probe_target
ok $? "kml-probe attach, call, list, detach"
in_root kml-filter list && in_root kml-ring stat
ok $? "kml-filter list, kml-ring stat"
in_root man -w kml-probe && in_root man -w 4 kmodlab &&
	[[ -e $root/usr/share/bash-completion/completions/kml-filter &&
	   -e $root/lib/udev/rules.d/60-kmodlab.rules && -e $root/usr/include/linux/kml_probe.h ]]
ok $? "man pages, completion, udev rule and uapi headers installed"

in_root modprobe -r kml_filter kml_ring kml_probe kml_probe_target kml_sensor kml_stats &&
	! grep -q '^kml_' /proc/modules
ok $? "modprobe -r all"
echo "1..$n" >> "$tap"
exit $failed
