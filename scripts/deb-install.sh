#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make check-stock`, packages: install what `make deb` built on a system
# that runs Debian's stock kernel, as its administrator would, and use it.
#   scripts/deb-install.sh STOCK_DIR ABI PKG_DIR
# STOCK_DIR and ABI are scripts/stock.sh's unpacked kernel image and its
# release; PKG_DIR receives the installed system's changes.
#
# Part 1, here on the host: a writable overlay of this system (its changes
# go to PKG_DIR/up) whose /lib/modules also holds the stock kernel's own
# modules (PKG_DIR/mup), so the install and depmod see what a machine
# running that kernel has. In a chroot there, `dpkg -i` installs both
# packages, and the kernel headers' postinst hook (/etc/kernel/
# header_postinst.d/dkms, what apt runs when linux-headers-ABI arrives)
# has DKMS build and install the modules against the stock headers.
# DKMS builds at host speed: the same build in the guest takes 14 min of
# one-thread TCG.
# Part 2, in the stock kernel's guest (scripts/guest/deb-check.sh): the
# same changes over the guest's system, then modprobe, the clients, and
# `dpkg -r`. Prints "N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
stock=$1 abi=$2 pkg=$3
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "PASS: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() {
	echo "$pass passed, $fail failed"
	exit $((fail ? 1 : 0))
}

rm -rf "$pkg"
mkdir -p "$pkg"/{up,work,mup,mwork,root}
# shellcheck disable=SC2016
if unshare -m bash -euo pipefail -c '
	pkg=$1 stock=$2 abi=$3 debs=$4 root=$1/root
	mount -t overlay overlay -o "lowerdir=/,upperdir=$pkg/up,workdir=$pkg/work" "$root"
	mount -t overlay overlay \
		-o "lowerdir=$stock/lib/modules:/lib/modules,upperdir=$pkg/mup,workdir=$pkg/mwork" \
		"$root/lib/modules"
	mount --rbind /dev "$root/dev"
	mount --rbind /sys "$root/sys"
	mount -t proc proc "$root/proc"
	mount -t tmpfs tmpfs "$root/tmp"
	mount -t tmpfs tmpfs "$root/run"
	# man-db would rebuild its whole index: not what this is about
	rm -f "$root/var/lib/man-db/auto-update"
	in_root() {
		chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
	}
	in_root dpkg -i "$debs"/kmodlab-dkms_*_all.deb \
		"$debs"/kmodlab_*_"$(dpkg --print-architecture)".deb
	in_root /etc/kernel/header_postinst.d/dkms "$abi"
	in_root dkms status kmodlab
' deb-install "$pkg" "$stock" "$abi" "$repo/build/deb" > "$pkg/install.log" 2>&1 &&
   grep -q "^kmodlab/.*, $abi, .*: installed" "$pkg/install.log"; then
	ok "dpkg -i kmodlab-dkms kmodlab; DKMS built and installed the modules for $abi"
else
	tail -30 "$pkg/install.log"
	bad "dpkg -i kmodlab-dkms kmodlab and DKMS for $abi (see $pkg/install.log)"
	finish
fi
rmdir "$pkg/root"

out=$repo/build/vm/stock-$abi-deb
# One-thread TCG: loading and unloading the modules flips this kernel's
# jump labels (see scripts/stock.sh).
"$here/vm-run.sh" --stock "$stock" --tcg-single --timeout "${KMODLAB_VM_TIMEOUT:-1500}" \
	--out "$out" -- scripts/guest/deb-check.sh "$pkg"
rc=$?
if [[ -s $out/deb.tap ]]; then
	p=$(grep -cE '^ok [0-9]+ ' "$out/deb.tap")
	f=$(grep -cE '^not ok [0-9]+ ' "$out/deb.tap")
	pass=$((pass + p)) fail=$((fail + f))
	grep -E '^not ok ' "$out/deb.tap" | sed 's/^/FAIL: packages: /'
	((p + f)) || bad "the packages' guest printed no results"
else
	bad "the packages' guest produced no TAP output (see $out)"
fi
((rc == 0)) && ok "packages on $abi: installed, used, removed; kernel log clean" ||
	bad "packages on $abi: vm-run exited $rc (see $out)"
finish
