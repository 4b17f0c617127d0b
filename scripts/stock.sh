#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make check-stock`: the guest selftests on Debian's own kernel, not ours.
#
#   STOCK=6.1|6.12|deb13|deb13-bpo scripts/stock.sh     (default 6.1)
#
# Takes the newest linux-image-*-cloud-amd64 of the series from apt
# (scripts/stock-pick.sh says which), builds the modules against its
# linux-headers package (as a user's machine would), boots the
# unmodified image in QEMU with a small busybox
# initramfs (scripts/guest/stock-init: the cloud kernels have no 9p and
# build virtio as modules, so the host's / comes over virtiofs) and runs
# the same selftests as `make check`. No gcov there, so no coverage; the
# modules are unsigned, so loading them taints the kernel, nothing more.
# 6.1 and 6.12 are Debian 12's (6.12 from bookworm-backports): their
# headers are unpacked in the cache, not installed. deb13 is Debian 13's own 6.12 and deb13-bpo
# the newest of trixie-backports: their headers need Debian 13's glibc, so
# the modules the selftests load are the ones DKMS builds from the
# kmodlab-dkms package in a Debian 13 chroot (scripts/trixie-root.sh).
# Ends with "N passed, N failed, N skipped".
# Debian 12's kernels only: KMODLAB_STOCK_PACKAGES=0 skips `make deb` and
# the packages' install and use; KMODLAB_STOCK_GUESTS=0 skips the guests
# too, leaving the build against the kernel's headers and `make install`
# (make check-all builds for Debian 12's 6.1 and tests the packages on
# Debian 13's kernel; check-full runs all of it on both).
# KMODLAB_STOCK_TESTS=SPEC runs only that selftest spec (as
# scripts/guest/selftests.sh takes it, e.g. "kml_probe_test:-r
# record.client_perf_data_is_read_by_perf") in the guest, and no package
# test: the fast loop on a stock kernel.
# perf.data is read in the guest by the perf Debian ships for the kernel's
# series (scripts/perf-for.sh), prepared here before the guests boot.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo" || exit 1
series=${STOCK:-6.1}
cache=${KMODLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kmodlab}/stock
pass=0 fail=0 skip=0
ok()  { pass=$((pass + 1)); echo "PASS: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() {
	echo "$pass passed, $fail failed, $skip skipped"
	exit $((fail ? 1 : 0))
}
count_tap() { # $1 = TAP file, $2 = label
	local p f s
	p=$(grep -cE '^ok [0-9]+ ' "$1")
	s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$1")
	f=$(grep -cE '^not ok [0-9]+ ' "$1")
	pass=$((pass + p - s)) skip=$((skip + s)) fail=$((fail + f))
	grep -E '^not ok [0-9]+ ' "$1" | sed "s/^/FAIL: $2: /"
	echo "$2: $((p - s)) passed, $f failed, $s skipped"
	((p + f > 0))
}

case $series in
6.1|6.12)	deb13=0 ;;
deb13|deb13-bpo) deb13=1 ;;
*)		bad "STOCK=$series: 6.1, 6.12, deb13 or deb13-bpo"; finish ;;
esac
packages=${KMODLAB_STOCK_PACKAGES:-1} guests=${KMODLAB_STOCK_GUESTS:-1}
[[ $packages == [01] && $guests == [01] ]] ||
	{ bad "KMODLAB_STOCK_PACKAGES and KMODLAB_STOCK_GUESTS are 0 or 1"; finish; }
# Debian 13's modules are the ones its packages build
((deb13)) && packages=1 guests=1
# and the packages are used in a guest
((guests)) || packages=0
((packages)) || echo "stock.sh: no packages (KMODLAB_STOCK_PACKAGES=0)"
((guests)) || echo "stock.sh: no guests (KMODLAB_STOCK_GUESTS=0): the build and make install only"
deps=(host vm stock trace)
((deb13)) && deps+=(pkg=debootstrap)
"$here/deps.sh" "${deps[@]}" || { bad "install dependencies"; finish; }
# Debian 13's packages come from its own lists (scripts/apt-trixie.sh),
# never from this host's apt sources.
apt_get=(apt-get) apt_cache=(apt-cache)
((deb13)) && apt_get=("$here/apt-trixie.sh" apt-get) apt_cache=("$here/apt-trixie.sh" apt-cache)
mapfile -t images < <("${apt_cache[@]}" search --names-only '^linux-image-[0-9].*-cloud-amd64$' |
	awk '{print $1}')
# each image and its candidate version, for stock-pick.sh
abi=$( ((${#images[@]})) && "${apt_cache[@]}" show --no-all-versions "${images[@]}" 2>/dev/null |
	awk '/^Package: / { p = $2 } /^Version: / { print p, $2 }' | "$here/stock-pick.sh" "$series")
if [[ -z $abi ]]; then
	bad "no linux-image-*-cloud-amd64 of series $series in apt"
	finish
fi
echo "stock kernel: $abi"

# The image, unpacked (never installed: this machine's boot is not ours).
dir=$cache/$abi
if [[ ! -s $dir/initrd.gz ]]; then
	rm -rf "$dir"
	mkdir -p "$dir/deb" "$dir/lib/modules"
	# and the packages of the same ABI it depends on: from 7.x Debian
	# splits the image into linux-binary-ABI (the kernel, beside the
	# modules) and linux-modules-ABI
	mapfile -t parts < <("${apt_cache[@]}" show --no-all-versions "linux-image-$abi" |
		sed -n 's/^Depends: //p' | tr ',|' '\n' |
		awk -v abi="-$abi" '$1 ~ /^linux-/ && substr($1, length($1) - length(abi) + 1) == abi { print $1 }')
	(cd "$dir/deb" && "${apt_get[@]}" download "linux-image-$abi" "${parts[@]}") > /dev/null 2>&1 ||
		{ bad "apt-get download linux-image-$abi ${parts[*]}"; finish; }
	for f in "$dir"/deb/*.deb; do dpkg-deb -x "$f" "$dir/x"; done
	cp "$dir/x/boot/vmlinuz-$abi" "$dir/vmlinuz" 2>/dev/null ||
		mv "$dir/x/usr/lib/modules/$abi/vmlinuz" "$dir/vmlinuz"
	mv "$dir"/x/{usr/,}lib/modules/"$abi" "$dir/lib/modules/" 2>/dev/null
	rm -rf "$dir/x" "$dir/deb"
	depmod -b "$dir" "$abi"
	ird=$(mktemp -d)
	mkdir -p "$ird"/{bin,dev,proc,sys,newroot,lib/modules}
	cp /bin/busybox "$ird/bin/busybox"
	cp "$here/guest/stock-init" "$ird/init"
	# (none on Debian 13's cloud kernels: virtio and virtiofs are built in)
	: > "$ird/modules.order"
	# what the virtio PCI transport and virtiofs need, in load order
	modprobe -a -d "$dir" -S "$abi" --show-depends virtio_pci virtiofs |
		awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while IFS= read -r ko; do
		name=${ko##*/}
		case $ko in
		*.xz)	name=${name%.xz}; xz -dc "$ko" > "$ird/lib/modules/$name" ;;
		*.zst)	name=${name%.zst}; zstd -qdc "$ko" > "$ird/lib/modules/$name" ;;
		*)	cp "$ko" "$ird/lib/modules/$name" ;;
		esac
		echo "$name" >> "$ird/modules.order"
	done
	(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -9) > "$dir/initrd.gz"
	rm -rf "$ird"
fi

# what this host has of Debian's kernel packages: a run changes none
host_kernel_pkgs() { dpkg-query -W -f '${Package} ${Status}\n' 'linux-image-*' 'linux-headers-*' 2>/dev/null | sort; }
host_before=$(host_kernel_pkgs)
# Debian 12's headers, unpacked beside the image and never installed:
# 6.12's depend on its image, which apt would put in this host's /boot.
# They are the flavour's tree, the common one it includes and the kbuild
# tools, with the one absolute path (the flavour's Makefile's include)
# made to point here.
# The package test (scripts/deb-install.sh) lays the same tree over this
# host's / for DKMS, which finds it by /lib/modules/ABI/build.
kdir=/usr/src/linux-headers-$abi hdr=
unpack_headers() {
	local f parts
	rm -rf "$hdr"
	mkdir -p "$hdr/deb"
	mapfile -t parts < <("${apt_cache[@]}" show --no-all-versions "linux-headers-$abi" |
		sed -n 's/^Depends: //p' | tr ',|' '\n' | awk '$1 ~ /^linux-(headers|kbuild)-/ { print $1 }')
	[[ ${#parts[@]} -ge 2 ]] || { echo "linux-headers-$abi: no -common and linux-kbuild in its Depends"; return 1; }
	(cd "$hdr/deb" && "${apt_get[@]}" download "linux-headers-$abi" "${parts[@]}") > /dev/null 2>&1 ||
		{ echo "apt-get download linux-headers-$abi ${parts[*]} failed"; return 1; }
	for f in "$hdr"/deb/*.deb; do
		dpkg-deb -x "$f" "$hdr" || { echo "dpkg-deb -x $f failed"; return 1; }
	done
	rm -rf "$hdr/deb"
	local inc
	inc=$(sed -n 's|^include /usr/src/\(.*\)$|\1|p' "$kdir/Makefile")
	[[ -n $inc && -f $hdr/usr/src/$inc && -d $kdir/scripts/ ]] ||
		{ echo "$kdir: not the flavour tree, its -common tree and kbuild's scripts"; return 1; }
	# (the rest of the Makefile, if any: grep -v finds none in Debian's)
	printf 'include %s/usr/src/%s\n' "$hdr" "$inc" > "$kdir/Makefile.new" &&
		{ grep -v '^include /usr/src/' "$kdir/Makefile" >> "$kdir/Makefile.new" || true; } &&
		mv "$kdir/Makefile.new" "$kdir/Makefile" &&
		touch "$kdir/.kmodlab-unpacked"	# last: a tree without it is unpacked again
}
if ((!deb13)); then
	hdr=$cache/hdr-$abi
	kdir=$hdr/usr/src/linux-headers-$abi
	# another run (check-all's other lane) may be unpacking the same
	exec {hlock}> "$cache/.hdr-$abi.lock"
	flock "$hlock"
	if [[ ! -e $kdir/.kmodlab-unpacked ]] && ! why=$(unpack_headers 2>&1); then
		rm -rf "$hdr"
		bad "unpack linux-headers-$abi into $hdr: $why"
		finish
	fi
	flock -u "$hlock"
fi
# the Makefile names a KDIR build after the tree's release (6.1's is its
# upstream version, 6.1.192, not the package's ABI name)
kbuild=$repo/build/kmod/$(cat "$kdir/include/config/kernel.release" 2>/dev/null)
# Debian 13: the modules DKMS built and the test-only ones, assembled
((deb13)) && kbuild=$repo/build/kmod/$abi-dkms
if [[ ${1:-} == prepare ]]; then	# image and initramfs only
	if ((deb13)) && [[ -n ${2:-} ]]; then
		echo "stock.sh: make bench builds on this host, which cannot build for $abi" >&2
		exit 2
	fi
	# and, for scripts/bench.sh, where they and the modules' build are
	[[ -n ${2:-} ]] && printf 'abi=%q\ndir=%q\nkdir=%q\nkbuild=%q\n' \
		"$abi" "$dir" "$kdir" "$kbuild" > "$2"
	exit 0
fi
# (logs are build/stock-SERIES-*.log: make check-all runs two series at once)
mkdir -p "$repo/build"
# `make deb` (lintian-clean), once: Debian 13 needs kmodlab-dkms first.
# Another stock run (make check-all's other lane) may make them too,
# starting by emptying build/deb: one at a time, and each run uses a copy.
debs=unbuilt
export KMODLAB_DEB_DIR=$repo/build/stock-$series-debs
# The packages do not depend on the kernel: a run finding build/deb made
# from the same sources (the content of what git tracks, which deb.sh
# packs) reuses them, so make check-all's stock kernels build them once
# (and count that once).
make_deb() {
	[[ $debs == unbuilt ]] || return 0
	# shellcheck disable=SC2016
	if flock "$repo/build/.deb.lock" bash -c '
		key=$(git ls-files -z --cached | while IFS= read -r -d "" f; do
			[[ -f $f ]] && printf "%s\0" "$f"; done | xargs -0 sha1sum | sha1sum)
		if [[ $(cat build/deb/.sources 2>/dev/null) == "$key" ]]; then
			echo "stock.sh: build/deb is of these sources: reused"
		else
			make -s deb && echo "$key" > build/deb/.sources
		fi && rm -rf "$1" && mkdir "$1" && cp build/deb/*.deb "$1/"' \
		make-deb "$KMODLAB_DEB_DIR" > "$repo/build/stock-$series-deb.log" 2>&1; then
		if grep -q ': reused$' "$repo/build/stock-$series-deb.log"; then
			echo "make deb: reusing build/deb, built and checked from these sources by an earlier run"
		else
			ok "make deb: kmodlab-dkms, kmodlab and kmodlab-dev built, lintian clean"
		fi
		debs=ok
	else
		tail -20 "$repo/build/stock-$series-deb.log"
		bad "make deb (see build/stock-$series-deb.log)"
		debs=failed
	fi
}
if ((deb13)); then
	# No `make install DESTDIR=` check here: it builds the clients too,
	# into build/bin, and Debian 13's compiler and glibc would make ones
	# that neither this host nor its guest can run.
	make_deb
	[[ $debs == ok ]] || finish
	if "$here/trixie-root.sh" modules "$abi" "$kbuild" > "$repo/build/stock-$series-build.log" 2>&1 &&
	   make -s userspace selftests >> "$repo/build/stock-$series-build.log" 2>&1; then
		ok "Debian 13: DKMS built the modules from kmodlab-dkms for $abi; test-only modules built there (W=1 -Werror)"
	else
		tail -20 "$repo/build/stock-$series-build.log"
		bad "Debian 13 chroot build for $abi (see build/stock-$series-build.log)"
		finish
	fi
elif make -s KDIR="$kdir" KMODLAB_TESTS=1 modules > "$repo/build/stock-$series-build.log" 2>&1 &&
   make -s userspace selftests >> "$repo/build/stock-$series-build.log" 2>&1; then
	ok "modules built against linux-headers-$abi (W=1 -Werror)"
else
	tail -20 "$repo/build/stock-$series-build.log"
	bad "build against linux-headers-$abi"
	finish
fi
if [[ $(host_kernel_pkgs) == "$host_before" ]]; then
	ok "this host's kernel packages are as they were (headers unpacked in the cache, no image in /boot)"
else
	diff <(echo "$host_before") <(host_kernel_pkgs)
	bad "the build changed this host's linux-image/linux-headers packages"
fi
if ((!deb13)); then
	# `make install` as a packager runs it (DESTDIR) against these headers,
	# which carry no signing key: the modules land compressed under
	# updates/kmodlab, one line says they are unsigned and why that matters,
	# and nothing else is said (no OpenSSL error per module, no depmod noise).
	inst=$(mktemp -d)
	if make -s install KDIR="$kdir" DESTDIR="$inst" PREFIX=/usr > "$repo/build/stock-$series-install.log" 2>&1 &&
	   (($(find "$inst/lib/modules/$abi/updates/kmodlab" -name 'kml_*.ko*' | wc -l) == 6)) &&
	   [[ -x $inst/usr/bin/kml-probe && -f $inst/usr/include/linux/kml_probe.h ]] &&
	   (($(grep -c 'UNSIGNED' "$repo/build/stock-$series-install.log") == 1)) &&
	   ! grep -qiE 'SSL error|sign-file|System.map|depmod: WARNING' "$repo/build/stock-$series-install.log" &&
	   [[ ! -e $inst/lib/modules/$abi/modules.dep ]]; then
		ok "make install DESTDIR= against linux-headers-$abi: 6 modules, one line on signing, no depmod"
	else
		cat "$repo/build/stock-$series-install.log"
		bad "make install DESTDIR= against linux-headers-$abi"
	fi
	rm -rf "$inst"
fi

# Tests that patch kernel text while another vCPU runs it: kprobes (on
# every kernel) and, on these kernels only, static keys (CONFIG_JUMP_LABEL,
# off in the test kernel): netfilter's, flipped whenever kml_filter loads
# or unloads, and every tracepoint's, flipped when an event is enabled or
# disabled (the `trace` fixtures). Multi-threaded TCG does not emulate
# cross-modifying code (on the stock 6.1 kernel the rmmod race test stalled
# RCU with the receiving vCPU stuck on ip_local_deliver's NF_HOOK jump
# label), so they run in a single-threaded TCG guest, where the same tests
# are clean.
ptext=probe_text	# kml_probe_test's fixture of text-patching tests
# kml_filter tests that unload it, or turn conntrack on (its hooks at
# PRE_ROUTING and POST_ROUTING flip keys no other hook has flipped)
frace=(filter.rmmod_under_traffic filter.ct_workstation_policy
       filter.ct_only_while_a_rule_needs_it nl.rmmod_while_requests_arrive
       nl.replace_room_and_rmmod nl.ct_rules_and_teardown
       nl.log_ring_held_and_let_go)
fexcl=$(printf -- '-T %s ' "${frace[@]#*.}")
fonly=$(printf -- '-r %s ' "${frace[@]}")
traced=(kml_stats_test kml_sensor_test kml_ring_test kml_filter_test kml_probe_test)
# The guest mounts the image's modules on this host's /lib/modules
# (scripts/guest/stock-init), which a host that never installed a
# kernel's headers lacks: Debian 13's are in the chroot.
mkdir -p /lib/modules
run_guest() { # $1 = name, $2 = extra vm-run option or "", rest = selftest specs
	local name=$1 opt=$2 rc out=$repo/build/vm/stock-$series-$1
	shift 2
	# shellcheck disable=SC2086
	"$here/vm-run.sh" --stock "$dir" --timeout "${KMODLAB_VM_TIMEOUT:-1500}" \
		--out "$out" $opt -- env KMODLAB_KO_DIR="$kbuild" \
		scripts/guest/selftests.sh "$@"
	rc=$?
	if [[ -s $out/selftests.tap ]]; then
		count_tap "$out/selftests.tap" "stock $abi $name" ||
			bad "stock $name printed no results"
	else
		bad "stock $name produced no TAP output"
	fi
	if ((rc == 0)); then
		ok "stock $abi $name: passed, kernel log clean, powered off"
	else
		bad "stock $abi $name: vm-run exited $rc (see $out)"
	fi
}
# The Debian packages (`make deb`, lintian-clean) installed with dpkg,
# DKMS building the modules against this kernel's headers, then used and
# removed on this kernel in a guest (scripts/deb-install.sh): on this
# host's system, or for Debian 13 on the chroot's.
only=${KMODLAB_STOCK_TESTS:-}
[[ -n $only ]] && packages=0
((packages)) && make_deb
lower=/
if ((packages && deb13)) && ! lower=$("$here/trixie-root.sh" lower "$abi"); then
	bad "packages: no Debian 13 system to install into"
	lower=
fi
if ((packages)) && [[ $debs == ok && -n $lower ]]; then
	# (Debian 12's: with the headers unpacked above, as if installed)
	"$here/deb-install.sh" "$dir" "$abi" "$repo/build/stock-$series-pkg" "$lower" "$hdr" \
		> "$repo/build/stock-$series-deb-install.log" 2>&1
	grep -E '^(PASS|FAIL): ' "$repo/build/stock-$series-deb-install.log"
	read -r p _ f _ < <(tail -n 1 "$repo/build/stock-$series-deb-install.log")
	[[ $p =~ ^[0-9]+$ && $f =~ ^[0-9]+$ ]] || { p=0 f=0; bad "packages: no result line"; }
	pass=$((pass + p)) fail=$((fail + f))
fi

((guests)) || finish
kseries=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<< "$abi")
if KMODLAB_PERF=$("$here/perf-for.sh" "$kseries" 2> "$repo/build/stock-$series-perf.log"); then
	export KMODLAB_PERF
	ok "perf of $kseries for perf.data: $KMODLAB_PERF ($("$KMODLAB_PERF" --version 2>&1))"
else
	unset KMODLAB_PERF
	bad "perf of $kseries: $(tail -n 1 "$repo/build/stock-$series-perf.log")"
fi
if [[ -n $only ]]; then
	run_guest selftests "" "$only"
	finish
fi
run_guest selftests "" kml_hello_test kml_debug_test "kml_stats_test:-F trace" \
	"kml_sensor_test:-F trace" "kml_ring_test:-F trace" \
	"kml_filter_test:${fexcl}-F trace" "kml_probe_test:-F $ptext -F trace"
run_guest tcg-single --tcg-single "kml_probe_test:-f $ptext" "kml_filter_test:${fonly% }" \
	"${traced[@]/%/:-f trace}"
finish
