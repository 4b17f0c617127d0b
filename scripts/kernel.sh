#!/bin/bash
# Build (once per machine) and locate the kmodlab test kernel.
#
#   scripts/kernel.sh build   build it unless the cached build is current
#   scripts/kernel.sh kdir    print the build directory (KDIR for modules)
#   scripts/kernel.sh src     print the unpacked source tree
#   scripts/kernel.sh unpack  unpack the source only (for kselftest_harness.h)
#
# KVER (6.12, 6.1) picks Debian's linux-source-$KVER; PROFILE (default,
# debug) picks the fragments. The build lives in the cache, keyed by the
# source package version and the fragments' contents, so editing a
# fragment or upgrading the package gives a new build and nothing else does.
set -euo pipefail

KVER=${KVER:-6.12}
PROFILE=${PROFILE:-default}
here=$(cd "$(dirname "$0")" && pwd)
cache=${KMODLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kmodlab}
tarball=/usr/src/linux-source-$KVER.tar.xz

frags=("$here/kconfig/kmodlab.config")
case $PROFILE in
default) ;;
debug)	frags+=("$here/kconfig/debug.config") ;;
kcsan)	frags+=("$here/kconfig/kcsan.config") ;;
*)	echo "kernel.sh: unknown PROFILE '$PROFILE' (default, debug, kcsan)" >&2; exit 2 ;;
esac

pkgver() {
	dpkg-query -W -f='${Version}' "linux-source-$KVER" 2>/dev/null || echo none
}

key() {
	{ pkgver; cat "${frags[@]}"; } | sha256sum | cut -c1-12
}

srcdir="$cache/src/linux-source-$KVER"
kdir() { echo "$cache/build/$KVER-$PROFILE-$(key)"; }

unpack() {
	local stamp="$srcdir/.kmodlab-unpacked-$(pkgver)"
	[[ -e $stamp ]] && return
	echo "kernel.sh: unpacking $tarball into $cache/src" >&2
	rm -rf "$srcdir"
	mkdir -p "$cache/src"
	tar -C "$cache/src" -xf "$tarball"
	touch "$stamp"
}

build() {
	"$here/deps.sh" kernel
	unpack
	local out
	out=$(kdir)
	if [[ -e $out/.kmodlab-built ]]; then
		echo "kernel.sh: $out is current" >&2
		return
	fi
	echo "kernel.sh: building linux $KVER ($PROFILE) in $out" >&2
	local t0=$SECONDS
	rm -rf "$out"
	mkdir -p "$out"
	make -s -C "$srcdir" O="$out" tinyconfig
	"$srcdir/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
		"${frags[@]}" >/dev/null
	make -s -C "$srcdir" O="$out" olddefconfig
	# A dependency Kconfig could not satisfy silently drops an option:
	# refuse to build a kernel that lacks something the suite relies on.
	# A later fragment overrides an earlier one, as in merge_config.sh.
	local bad=0 line opt val
	local -A want=()
	while IFS= read -r line; do
		[[ $line =~ ^(CONFIG_[A-Z0-9_]+)=(.*)$ ]] || continue
		want[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
	done < <(cat "${frags[@]}")
	for opt in "${!want[@]}"; do
		val=${want[$opt]}
		if [[ $val == n ]]; then
			grep -qx "$opt=y" "$out/.config" || continue
		else
			grep -qx "$opt=$val" "$out/.config" && continue
		fi
		echo "kernel.sh: $opt=$val did not survive olddefconfig" >&2
		bad=1
	done
	((bad == 0)) || exit 1
	# bzImage for the guest; `modules` writes Module.symvers, without
	# which gcov-profiled external modules see __gcov_* as undefined.
	make -s -C "$out" -j"$(nproc)" bzImage modules
	touch "$out/.kmodlab-built"
	echo "kernel.sh: built in $((SECONDS - t0)) s" >&2
}

case ${1:-} in
build)	build ;;
unpack)	"$here/deps.sh" kernel; unpack ;;
kdir)	kdir ;;
src)	echo "$srcdir" ;;
*)	echo "usage: $0 build|unpack|kdir|src" >&2; exit 2 ;;
esac
