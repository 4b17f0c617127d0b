#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build (once per machine) and locate the kmodlab test kernel.
#
#   scripts/kernel.sh build   build it unless the cached build is current
#   scripts/kernel.sh kdir    print the build directory (KDIR for modules)
#   scripts/kernel.sh src     print the unpacked source tree
#   scripts/kernel.sh fragment  print the Kconfig fragment as it applies to KVER
#   scripts/kernel.sh unpack  unpack the source only (for kselftest_harness.h)
#   scripts/kernel.sh export F   the built tree as an archive, for a classroom
#   scripts/kernel.sh import F   use an exported tree instead of building
#
# KVER (6.12, 6.1, 7.3) picks Debian's linux-source-$KVER (7.3 comes from
# Debian 13's backports, see deps.sh); PROFILE (default,
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
default) frags+=("$here/kconfig/btf.config") ;;
debug)	frags+=("$here/kconfig/debug.config") ;;
kcsan)	frags+=("$here/kconfig/kcsan.config") ;;
*)	echo "kernel.sh: unknown PROFILE '$PROFILE' (default, debug, kcsan)" >&2; exit 2 ;;
esac

pkgver() {
	dpkg-query -W -f='${Version}' "linux-source-$KVER" 2>/dev/null || echo none
}

# The fragments as they apply to KVER. This is the one place where Kconfig
# differs by kernel version: a line "# kver < 7.0" (or <=, >, >=, ==)
# applies to the option line right after it, which is left out on other
# kernels. Written for options that appear or vanish across versions
# (CONFIG_PROC_SYSCTL is gone in 7.x: sysctl comes with /proc there).
fragment() {
	awk -v kver="$KVER" '
		function num(v,  a) { split(v, a, "."); return a[1] * 1000 + a[2] }
		/^# kver (<|<=|>|>=|==) [0-9]+\.[0-9]+$/ {
			k = num(kver); v = num($4)
			keep = ($3 == "<" && k < v) || ($3 == "<=" && k <= v) ||
			       ($3 == ">" && k > v) || ($3 == ">=" && k >= v) ||
			       ($3 == "==" && k == v)
			guard = 1; next
		}
		/^# kver/ { print "kernel.sh: bad guard: " $0 > "/dev/stderr"; exit 1 }
		guard && /^CONFIG_/ { guard = 0; if (!keep) next }
		{ print }' "${frags[@]}"
}

key() {
	{ pkgver; fragment; } | sha256sum | cut -c1-12
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

# `make check-all` builds kernels side by side and in the background
# while tests run; a run that needs a kernel being built waits here, then
# finds it built. The source tree of a KVER is shared by its profiles'
# builds (a shared lock) and unpacked under an exclusive one; each
# KVER-PROFILE builds one at a time.
lock() {
	mkdir -p "$cache"
	exec {lockfd}> "$cache/.kernel-$KVER.lock"
	flock -s "$lockfd"
	if [[ ! -e $srcdir/.kmodlab-unpacked-$(pkgver) ]]; then
		flock -x "$lockfd"
		unpack
		flock -s "$lockfd"
	fi
}

build() {
	"$here/deps.sh" kernel
	lock
	exec {buildfd}> "$cache/.kernel-$KVER-$PROFILE.lock"
	flock -x "$buildfd"
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
	fragment > "$out/kmodlab.fragment"
	"$srcdir/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
		"$out/kmodlab.fragment" >/dev/null
	make -s -C "$srcdir" O="$out" olddefconfig
	# A dependency Kconfig could not satisfy silently drops an option:
	# refuse to build a kernel that lacks something the suite relies on.
	# A later fragment overrides an earlier one, as in merge_config.sh.
	local bad=0 line opt val
	local -A want=()
	while IFS= read -r line; do
		[[ $line =~ ^(CONFIG_[A-Z0-9_]+)=(.*)$ ]] || continue
		want[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
	done < "$out/kmodlab.fragment"
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
	# scripts_gdb: vmlinux-gdb.py beside vmlinux, for `make gdb`
	make -s -C "$out" -j"$(nproc)" bzImage modules \
		$(grep -qx CONFIG_GDB_SCRIPTS=y "$out/.config" && echo scripts_gdb)
	touch "$out/.kmodlab-built"
	echo "kernel.sh: built in $((SECONDS - t0)) s" >&2
}

# A room of students need not each spend the build: the instructor exports
# the built tree once, each student imports it. The source is the
# student's own linux-source package (same version, or the key differs);
# the two paths that name the source tree are rewritten for this machine.
export_kernel() { # $1 = archive to write (.tar.gz)
	local out name
	out=$(kdir)
	name=${out##*/}
	[[ -e $out/.kmodlab-built ]] || { echo "kernel.sh: build it first (make kernel)" >&2; exit 1; }
	# object files are not needed to build external modules or boot
	tar -C "$cache/build" --exclude='*.o' --exclude='.*.o.cmd' -czf "$1" "$name"
	echo "kernel.sh: wrote $1 ($(du -h "$1" | cut -f1)); students run: make kernel-import F=$1" >&2
}

import_kernel() { # $1 = archive from export_kernel
	local name out
	"$here/deps.sh" kernel
	lock
	name=$(tar -tzf "$1" | awk -F/ 'NR == 1 { print $1 }')	# reads it all: no SIGPIPE
	if [[ $name != "$(basename "$(kdir)")" ]]; then
		echo "kernel.sh: $1 holds $name, but this machine needs $(basename "$(kdir)")" >&2
		echo "  (a different KVER/PROFILE, linux-source-$KVER version or kconfig fragment)" >&2
		exit 1
	fi
	mkdir -p "$cache/build"
	tar -C "$cache/build" -xzf "$1"
	out=$(kdir)
	ln -sfn "$srcdir" "$out/source"
	printf '# Automatically generated by %s/Makefile: don'"'"'t edit\ninclude %s/Makefile\n' \
		"$srcdir" "$srcdir" > "$out/Makefile"
	echo "kernel.sh: imported $name into $cache/build" >&2
}

case ${1:-} in
build)	build ;;
export)	export_kernel "${2:?usage: kernel.sh export FILE.tar.gz}" ;;
import)	import_kernel "${2:?usage: kernel.sh import FILE.tar.gz}" ;;
unpack)	"$here/deps.sh" kernel; lock ;;
kdir)	kdir ;;
fragment) fragment ;;
src)	echo "$srcdir" ;;
*)	echo "usage: $0 build|unpack|kdir|src|fragment|export F|import F" >&2; exit 2 ;;
esac
