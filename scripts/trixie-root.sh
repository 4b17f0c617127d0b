#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A Debian 13 (trixie) system for scripts/stock.sh's Debian 13 kernels:
# their linux-headers and linux-kbuild need Debian 13's glibc, so nothing
# can be built against them on this Debian 12 host itself.
#
#   scripts/trixie-root.sh lower ABI
#       print the overlay lowerdir ("HDR:BASE") of a Debian 13 system with
#       linux-headers-ABI installed, as its administrator would have it
#   scripts/trixie-root.sh perf SERIES
#       print the path of a command that runs Debian's linux-perf of SERIES
#       (6.12: trixie's; 7.3: trixie-backports'), building its layer once;
#       fails, saying why, when Debian 13 has no linux-perf of SERIES
#   scripts/trixie-root.sh modules ABI KO_DIR
#       what a Debian 13 user of that kernel gets: kmodlab-dkms (from
#       KMODLAB_DEB_DIR, default build/deb) installed in a throw-away
#       overlay of that system, so DKMS builds the modules there; then the
#       test-only modules, which DKMS never builds, by the Makefile in the
#       same chroot (KMODLAB_TESTS=1, the repository bind-mounted at its
#       own path). KO_DIR receives both, uncompressed, in the layout the
#       selftests load (modules/<dir>/<name>.ko)
#
# Cached under ${KMODLAB_CACHE}/stock/trixie-KEY/ (KEY: a hash of the
# recipe below, so changing it builds a new system):
#   root/      debootstrap --variant=minbase, then dkms, gcc, make (and
#              man-db, xz-utils, openssl: what scripts/guest/deb-check.sh
#              and DKMS use, openssl for DKMS's module signing key, as on
#              most systems; linux-libc-dev, which kmodlab-dev depends on
#              and `dpkg -i` does not fetch); its apt sources include
#              trixie-backports
#   hdr-ABI/   the changes `apt-get install linux-headers-ABI` made over
#              root/ (an overlay's upper directory, a layer of its own: one
#              kernel's headers never make DKMS build for another)
#   perf-SERIES/  likewise the changes `apt-get install linux-perf` of that
#              series made over root/, plus kmodlab-perf, the command that
#              runs it (outside any path of the Debian system: in a chroot
#              of the layer it shadows nothing)
# Each is built in a temporary directory under a lock and renamed when
# complete; once there it is never written again, so concurrent runs
# share them without a lock.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
mirror=${KMODLAB_DEBIAN_MIRROR:-http://deb.debian.org}
pkgs="dkms gcc make man-db xz-utils openssl linux-libc-dev"
key=$(echo "trixie minbase $mirror $pkgs" | md5sum | cut -c1-8)
top=${KMODLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kmodlab}/stock/trixie-$key
base=$top/root
shopt -s nullglob

# in_overlay LOWER DIR CODE [ARG...]: runs the bash code CODE (ARGs are
# its $1...) in a chroot ($root) of an overlay of LOWER whose upper and
# work directories are in DIR, in a mount namespace of its own so no mount
# outlives it. CODE calls in_root CMD...; the host's resolv.conf and the
# repository (at its own path) are visible in the chroot.
in_overlay() {
	# shellcheck disable=SC2016
	unshare -m bash -euo pipefail -c '
		lower=$1 dir=$2 repo=$3 code=$4 root=$2/root
		shift 4
		mkdir -p "$dir"/{up,work,root}
		mount -t overlay overlay -o "lowerdir=$lower,upperdir=$dir/up,workdir=$dir/work" "$root"
		mount --rbind /dev "$root/dev"
		mount -t proc proc "$root/proc"
		mount --rbind /sys "$root/sys"
		mount -t tmpfs tmpfs "$root/tmp"
		mount -t tmpfs tmpfs "$root/run"
		mount --bind /etc/resolv.conf "$root/etc/resolv.conf"
		mkdir -p "$root$repo"
		mount --bind "$repo" "$root$repo"
		in_root() {
			chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
				HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
		}
		eval "$code"
	' trixie-root "$1" "$2" "$repo" "$3" "${@:4}"
}

build_base() {
	local tmp
	tmp=$(mktemp -d "$top/.root.XXXXXX")
	chmod 755 "$tmp"	# the new system's /
	echo "trixie-root.sh: debootstrap of Debian 13 into $top (once)" >&2
	unshare -m debootstrap --variant=minbase trixie "$tmp" "$mirror/debian" \
		> "$top/debootstrap.log" 2>&1 ||
		{ tail -20 "$top/debootstrap.log" >&2; rm -rf "$tmp"; return 1; }
	cat > "$tmp/etc/apt/sources.list" <<-EOF
	deb $mirror/debian trixie main
	deb $mirror/debian trixie-updates main
	deb $mirror/debian trixie-backports main
	deb $mirror/debian-security trixie-security main
	EOF
	# Without Recommends: dkms's would add linux-headers-amd64, and so a
	# second kernel for DKMS to build for.
	# shellcheck disable=SC2016
	if ! unshare -m bash -euo pipefail -c '
		mount --rbind /dev "$1/dev"
		mount -t proc proc "$1/proc"
		mount --bind /etc/resolv.conf "$1/etc/resolv.conf"
		chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			DEBIAN_FRONTEND=noninteractive sh -ec "apt-get -q update
			apt-get -qy install --no-install-recommends $2
			apt-get clean"' base "$tmp" "$pkgs" > "$top/base.log" 2>&1; then
		tail -20 "$top/base.log" >&2
		rm -rf "$tmp"
		return 1
	fi
	mv "$tmp" "$base" || return 1
}

# The headers as the administrator installs them: apt in the chroot, from
# trixie or, for a backported kernel, trixie-backports (-t: its
# linux-kbuild and other parts then come from there too). The lists the
# install read are dropped (whiteouts over root/'s): they are stale soon.
build_hdr() { # $1 = ABI
	local tmp
	tmp=$(mktemp -d "$top/.hdr-$1.XXXXXX")
	# shellcheck disable=SC2016
	if ! in_overlay "$base" "$tmp" '
		in_root apt-get -q update
		v=$(in_root apt-cache show --no-all-versions "linux-headers-$1" | sed -n "s/^Version: //p")
		t=()
		[[ $v == *~bpo* ]] && t=(-t trixie-backports)
		in_root apt-get -qy install --no-install-recommends "${t[@]}" "linux-headers-$1"
		in_root apt-get clean
		rm -rf "$root"/var/lib/apt/lists/*' "$1" > "$top/hdr-$1.log" 2>&1; then
		tail -20 "$top/hdr-$1.log" >&2
		rm -rf "$tmp"
		return 1
	fi
	rm -rf "$tmp/work" "$tmp/root"
	mv "$tmp/up" "$top/hdr-$1" || return 1
	rmdir "$tmp"
}

# Debian 13's perf needs Debian 13's glibc, so on this Debian 12 host and
# in its guests (whose root is this host's /) it runs under root/'s own
# dynamic loader, told to look in the layer's and root/'s library
# directories. Not a chroot: the test kernel has no overlayfs to merge the
# layer with root/, a chroot needs root and mounts (/proc, /sys, the files
# perf reads), and a chrooted perf would not see the guest's files at
# their paths; the loader needs none of that and runs as any user. What
# perf starts (perf record's workload) is exec'd as usual, with this
# system's loader and libraries: the library path is the loader's
# argument, not LD_LIBRARY_PATH, so it is not inherited.
build_perf() { # $1 = SERIES (MAJOR.MINOR)
	local tmp dirs
	tmp=$(mktemp -d "$top/.perf-$1.XXXXXX")
	# shellcheck disable=SC2016
	if ! in_overlay "$base" "$tmp" '
		in_root apt-get -q update
		# the newest version of the series, from trixie or its backports
		v=$(in_root apt-cache madison linux-perf | awk -F" *[|] *" -v s="$1." \
			"index(\$2, s) == 1 { print \$2; exit }")
		[[ -n $v ]] || { echo "trixie-root.sh: Debian 13 has no linux-perf $1"; exit 3; }
		t=()
		[[ $v == *~bpo* ]] && t=(-t trixie-backports)
		in_root apt-get -qy install --no-install-recommends "${t[@]}" "linux-perf=$v"
		in_root apt-get clean
		# the directories of the libraries perf links, as /usr/lib/...
		in_root ldd /usr/bin/perf > "$dir/ldd"
		rm -rf "$root"/var/lib/apt/lists/*' "$1" > "$top/perf-$1.log" 2>&1 ||
	   grep 'not found' "$tmp/ldd" >> "$top/perf-$1.log"; then
		tail -20 "$top/perf-$1.log" >&2
		rm -rf "$tmp"
		# last, the line a caller shows
		echo "trixie-root.sh: no perf-$1 layer: $(grep -m1 -E 'no linux-perf|^E: |not found' \
			"$top/perf-$1.log" || echo "see $top/perf-$1.log")" >&2
		return 1
	fi
	# /lib is a link to usr/lib in Debian 13: the layer has only usr/lib
	dirs=$(awk '$2 == "=>" && $3 ~ /^\// { print $3 }' "$tmp/ldd" | sed 's|^/lib/|/usr/lib/|' |
		xargs -n1 dirname | sort -u |
		awk -v l="$top/perf-$1" -v b="$base" '{ printf "%s%s%s:%s%s", sep, l, $0, b, $0; sep = ":" }')
	cat > "$tmp/up/kmodlab-perf" <<-EOF
	#!/bin/sh
	# Debian 13's perf $1 (see scripts/trixie-root.sh): its loader, its libraries
	exec $base/usr/lib64/ld-linux-x86-64.so.2 --library-path $dirs \\
		--argv0 perf $top/perf-$1/usr/bin/perf "\$@"
	EOF
	chmod 755 "$tmp/up/kmodlab-perf"
	rm -rf "$tmp/work" "$tmp/root" "$tmp/ldd"
	mv "$tmp/up" "$top/perf-$1" || return 1
	rmdir "$tmp"
	# it runs here, and is the series asked for; else it goes
	if ! "$top/perf-$1/kmodlab-perf" --version | grep -q "^perf version $1\."; then
		"$top/perf-$1/kmodlab-perf" --version >&2
		echo "trixie-root.sh: $top/perf-$1/kmodlab-perf is not a working perf $1" >&2
		rm -rf "$top/perf-$1"
		return 1
	fi
}

# with_layer DIR BUILD ARG: under the lock, the base system and then DIR
# (by BUILD ARG), each built unless it is there
with_layer() {
	mkdir -p "$top"
	exec {lockfd}> "$top/.lock"
	flock "$lockfd"
	# a run killed while building left its temporary directory
	rm -rf "$top"/.root.* "$top"/.hdr-* "$top"/.perf-*
	[[ -d $base ]] || build_base
	[[ -d $1 ]] || "$2" "$3"
	flock -u "$lockfd"
}

perf() { # $1 = SERIES: builds what is missing, prints the command
	[[ $1 =~ ^[0-9]+\.[0-9]+$ ]] || { echo "trixie-root.sh: perf SERIES is MAJOR.MINOR, not '$1'" >&2; return 2; }
	with_layer "$top/perf-$1" build_perf "$1"
	echo "$top/perf-$1/kmodlab-perf"
}

lower() { # $1 = ABI: builds what is missing, prints the lowerdir
	with_layer "$top/hdr-$1" build_hdr "$1"
	echo "$top/hdr-$1:$base"
}

# DKMS compresses the modules as the kernel's config says; finit_module()
# as the selftests call it wants them plain.
unpack_ko() { # $1 = module file (.ko, .ko.xz, .ko.zst), $2 = destination .ko
	mkdir -p "${2%/*}"
	case $1 in
	*.xz)	xz -dc "$1" > "$2" ;;
	*.zst)	zstd -qdc "$1" > "$2" ;;
	*)	cp "$1" "$2" ;;
	esac
}

modules() { # $1 = ABI, $2 = KO_DIR
	local abi=$1 ko=$2 lowerdir dir=$repo/build/stock-dkms-$1 deb rel m f
	lowerdir=$(lower "$abi")
	rm -rf "$dir" "$ko"
	mkdir -p "$dir/debs"
	deb=$(ls "${KMODLAB_DEB_DIR:-$repo/build/deb}"/kmodlab-dkms_*_all.deb)
	cp "$deb" "$dir/debs/"
	# shellcheck disable=SC2016
	in_overlay "$lowerdir" "$dir" '
		abi=$1
		in_root dpkg -i "$dir/debs/$2"
		in_root dkms status kmodlab
		mkdir -p "$dir/dkms"
		cp -a "$root/lib/modules/$abi/updates/dkms/." "$dir/dkms/"
		# KSRC: the selftests harness, which a module build does not need
		in_root make -C "$repo" KDIR="/usr/src/linux-headers-$abi" KMODLAB_TESTS=1 \
			KSRC=/nonexistent modules
		cat "$root/usr/src/linux-headers-$abi/include/config/kernel.release" > "$dir/release"' \
		"$abi" "${deb##*/}" || return 1
	rm -rf "$dir"/{up,work,root}
	rel=$(< "$dir/release")
	# DKMS's six, where dkms.conf's BUILT_MODULE_LOCATION has them
	for f in "$dir"/dkms/kml_*.ko*; do
		m=${f##*/}
		m=${m%%.ko*}
		case $m in
		kml_probe_target) unpack_ko "$f" "$ko/modules/kml_probe/$m.ko" ;;
		*) unpack_ko "$f" "$ko/modules/$m/$m.ko" ;;
		esac
	done
	(($(find "$ko" -name '*.ko' | wc -l) == 6)) ||
		{ echo "trixie-root.sh: DKMS did not install the six modules for $abi" >&2; return 1; }
	# and the test-only ones, from the Makefile's build
	for f in "$repo/build/kmod/$rel"/modules/{tests/*,kml_hello/kml_hello,kml_debug/kml_debug}.ko; do
		unpack_ko "$f" "$ko/${f#"$repo/build/kmod/$rel/"}"
	done
	[[ -e $ko/modules/kml_hello/kml_hello.ko && -e $ko/modules/kml_debug/kml_debug.ko &&
	   -e $ko/modules/tests/kml_stats_apitest.ko ]]
}

case ${1:-} in
lower)	lower "${2:?usage: trixie-root.sh lower ABI}" ;;
modules) modules "${2:?usage: trixie-root.sh modules ABI KO_DIR}" "${3:?}" ;;
perf)	perf "${2:?usage: trixie-root.sh perf SERIES}" ;;
*)	echo "usage: $0 lower ABI | perf SERIES | modules ABI KO_DIR" >&2; exit 2 ;;
esac
