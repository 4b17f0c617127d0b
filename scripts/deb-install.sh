#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make check-stock`, packages: install what `make deb` built on a system
# that runs Debian's stock kernel, as its administrator would, and use it.
#   scripts/deb-install.sh STOCK_DIR ABI PKG_DIR [LOWER [HEADERS]]
# STOCK_DIR and ABI are scripts/stock.sh's unpacked kernel image and its
# release; PKG_DIR receives the installed system's changes. LOWER is the
# system installed into, as an overlay lowerdir: / (this host, the
# default), or the Debian 13 system of scripts/trixie-root.sh for a
# Debian 13 kernel, whose headers this host cannot build with. HEADERS is
# Debian 12's headers unpacked (scripts/stock.sh): bound over LOWER's
# /usr/src and /usr/lib, and its lib/modules/ABI/build link laid over
# LOWER's, so that DKMS finds them as if installed (a second lower layer
# inside / would overlap it, which overlayfs refuses with ELOOP). The
# packages are taken from KMODLAB_DEB_DIR (default build/deb).
#
# Part 1, here on the host: a writable overlay of that system (its changes
# go to PKG_DIR/up) whose /lib/modules also holds the stock kernel's own
# modules (PKG_DIR/mup), so the install and depmod see what a machine
# running that kernel has. In a chroot there, `dpkg -i` installs the
# three packages, and kmodlab-dkms's postinst has DKMS build and install the
# modules for every kernel whose headers are installed, the stock one
# among them.
# DKMS builds at host speed: the same build in the guest takes 14 min of
# one-thread TCG.
# Part 2, in the stock kernel's guest (scripts/guest/deb-check.sh): the
# same changes over the same system (the guest's / is this host's, where
# LOWER's directories also are), then modprobe and the clients.
# Part 3, here again: `dpkg -r` in the same overlay. Prints "N passed, N
# failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
stock=${1:?usage: deb-install.sh STOCK_DIR ABI PKG_DIR [LOWER [HEADERS]]} abi=${2:?} pkg=${3:?}
lower=${4:-/} hdrs=${5:-}
# PKG_DIR is emptied: never the root, never a relative surprise
pkg=$(realpath -m "$pkg")
[[ $pkg != / && -d $stock/lib/modules/$abi ]] || { echo "deb-install.sh: bad arguments" >&2; exit 2; }
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "PASS: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() {
	echo "$pass passed, $fail failed"
	exit $((fail ? 1 : 0))
}

# Runs the bash code $1 in a chroot of the overlay, in a mount namespace
# of its own (so no mount outlives it): in_root CMD... runs CMD there.
# The lower system's /lib/modules is this host's, or the chroot's as the
# overlay just mounted shows it (a lowerdir list names no directory
# inside its layers).
overlay() {
	# shellcheck disable=SC2016
	unshare -m bash -euo pipefail -c '
		pkg=$1 stock=$2 lower=$3 hdrs=$4 root=$1/root
		mods=/lib/modules
		mount -t overlay overlay -o "lowerdir=$lower,upperdir=$pkg/up,workdir=$pkg/work" "$root"
		[[ $lower == / ]] || mods=$root/lib/modules
		if [[ -n $hdrs ]]; then
			for d in "$hdrs"/usr/src/* "$hdrs"/usr/lib/*; do
				mkdir -p "$root/${d#"$hdrs"/}"
				mount --bind "$d" "$root/${d#"$hdrs"/}"
			done
			mods=$hdrs/lib/modules:$mods
		fi
		mount -t overlay overlay \
			-o "lowerdir=$stock/lib/modules:$mods,upperdir=$pkg/mup,workdir=$pkg/mwork" \
			"$root/lib/modules"
		mount --rbind /dev "$root/dev"
		mount --rbind /sys "$root/sys"
		mount -t proc proc "$root/proc"
		mount -t tmpfs tmpfs "$root/tmp"
		mount -t tmpfs tmpfs "$root/run"
		in_root() {
			chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
				HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
		}
		shift 4
		eval "$1"
	' deb-install "$pkg" "$stock" "$lower" "$hdrs" "$@"
}

rm -rf "$pkg"
mkdir -p "$pkg"/{up,work,mup,mwork,root}
# The lower layer is this system's root filesystem alone: a /usr or /var
# mounted apart would be missing from it.
for d in /usr /var /lib; do
	[[ $lower != / || $(findmnt -n -o TARGET --target "$d") == / ]] ||
		{ bad "$d is a mount of its own: the overlay of / would miss it"; finish; }
done
# The packages go in by /tmp (a tmpfs, so not among the changes): the
# Debian 13 chroot does not have this repository.
# (man-db would rebuild its whole index: not what this is about)
# shellcheck disable=SC2016
if overlay 'rm -f "$root/var/lib/man-db/auto-update"
	    cp "$2"/kmodlab-dkms_*_all.deb "$2"/kmodlab-dev_*_all.deb \
		"$2"/kmodlab_*_"$(dpkg --print-architecture)".deb "$root/tmp/"
	    in_root sh -c "dpkg -i /tmp/*.deb"
	    in_root dkms status kmodlab' "${KMODLAB_DEB_DIR:-$repo/build/deb}" > "$pkg/install.log" 2>&1 &&
   grep -q "^kmodlab/.*, $abi, .*: installed" "$pkg/install.log"; then
	ok "dpkg -i kmodlab-dkms kmodlab-dev kmodlab; DKMS built and installed the modules for $abi"
else
	tail -30 "$pkg/install.log"
	bad "dpkg -i kmodlab-dkms kmodlab-dev kmodlab and DKMS for $abi (see $pkg/install.log)"
	finish
fi

out=$repo/build/vm/stock-$abi-deb
# One-thread TCG: loading and unloading the modules flips this kernel's
# jump labels (see scripts/stock.sh).
"$here/vm-run.sh" --stock "$stock" --tcg-single --timeout "${KMODLAB_VM_TIMEOUT:-1500}" \
	--out "$out" -- scripts/guest/deb-check.sh "$pkg" "$lower"
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
if ((rc == 0)); then
	ok "packages on $abi: used in its guest; kernel log clean"
else
	bad "packages on $abi: vm-run exited $rc (see $out)"
fi

# Removing them (here: DKMS's removal does not depend on the kernel that
# runs, and its depmod over the stock kernel's 3000 modules takes minutes
# of TCG) takes the modules, their sources and DKMS's tree, and the clients.
# A directory gone with them holds nothing (the Debian 13 chroot has no
# /usr/include/linux but kmodlab-dev's).
# shellcheck disable=SC2016
if overlay 'in_root dpkg -r kmodlab kmodlab-dev kmodlab-dkms
	    if in_root dkms status kmodlab | grep .; then exit 1; fi
	    dirs=()
	    for d in "lib/modules/$2" usr/src var/lib/dkms usr/bin usr/include/linux; do
		[[ -e $root/$d ]] && dirs+=("$root/$d")
	    done
	    left=$(find "${dirs[@]}" -name "kml*" 2>&1)
	    [[ -z $left ]] || { echo "left: $left"; exit 1; }' "$abi" \
	> "$pkg/remove.log" 2>&1; then
	ok "dpkg -r kmodlab kmodlab-dev kmodlab-dkms: no module, source, DKMS tree, header or client left"
else
	cat "$pkg/remove.log"
	bad "dpkg -r kmodlab kmodlab-dev kmodlab-dkms (see $pkg/remove.log)"
fi
finish
