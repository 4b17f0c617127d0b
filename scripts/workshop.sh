#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A workshop room that works offline.
#
#   scripts/workshop.sh bundle [FILE.tar]   (make workshop-bundle [F=...])
#   scripts/workshop.sh install [DIR]       (make workshop-install [F=DIR])
#   scripts/workshop.sh seat-test FILE.tar  (a fresh Debian 12 seat, offline)
#   scripts/workshop.sh check               (both, as a part of make check-full)
#
# bundle, on the instructor's machine (online, kernels built or not):
# one archive holding a kmodlab tree (this commit's files, git archive)
# with a workshop/ directory in it: the test kernels built (default and
# debug, kernel-export archives), and every Debian package a seat needs
# for the labs that a minimal Debian 12 lacks, with their dependencies,
# downloaded with apt. What it holds and their checksums are in
# workshop/MANIFEST.
#
# install, on a seat (as root, with no network): from the tree the bundle
# unpacks to, `make workshop-install`. It refuses a seat that is not the
# bundle's Debian release and architecture; installs from the bundle's
# files only (apt never downloads) the packages the seat lacks, and
# those it has in an older version (the release's own updates, which the
# newer packages may depend on); keeps a package the seat has in a newer
# version, and says so; installs linux-source-KVER in the exact version
# the kernels were built from (or they would not match it); imports the
# kernels; and checks every file against the manifest first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
export KVER=${KVER:-6.12}
die() { echo "workshop: $*" >&2; exit 1; }
stage= seat_top=

# What a seat installs: the deps.sh groups the labs use (bpf: lab bpf's
# clang, bpftool and libbpf), and gdb for lab debug (a seat needs no
# check/stock/deb tools).
seat_packages() {
	bash -c 'deps=$1; shift; source <(sed -n "/^pkgs=()/,/^done/p" "$deps")
		 printf "%s\n" "${pkgs[@]}"' _ "$here/deps.sh" host kernel vm bpf pkg=gdb pkg=python3
}

# A Debian 12 seat as a room has them, made from Debian's archive once
# and cached (debootstrap minbase: Priority required, and apt, with the
# release's updates and security archives in its sources): the bundle's
# packages are what it downloads, and seat-test installs one offline.
seat_base() {
	local mirror tmp
	mirror=${KMODLAB_DEBIAN_MIRROR:-http://deb.debian.org}
	seat_top=${KMODLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kmodlab}/stock/bookworm-seat-$(echo "$mirror" | md5sum | cut -c1-8)
	[[ -d $seat_top/root ]] && return
	((EUID == 0)) || die "a Debian 12 seat for the bundle: run it as root (debootstrap, chroot)"
	"$here/deps.sh" pkg=debootstrap
	mkdir -p "$seat_top"
	tmp=$(mktemp -d "$seat_top/.root.XXXXXX")
	chmod 755 "$tmp"
	echo "workshop: debootstrap of a Debian 12 seat into $seat_top (once)" >&2
	unshare -m debootstrap --variant=minbase bookworm "$tmp" "$mirror/debian" \
		> "$seat_top/debootstrap.log" 2>&1 ||
		{ tail -20 "$seat_top/debootstrap.log" >&2; rm -rf "$tmp"; die "debootstrap failed"; }
	cat > "$tmp/etc/apt/sources.list" <<-EOF
	deb $mirror/debian bookworm main
	deb $mirror/debian bookworm-updates main
	deb $mirror/debian-security bookworm-security main
	EOF
	mv "$tmp" "$seat_top/root"
}

bundle() {
	local file=${1:-$repo/kmodlab-workshop.tar} top wk p
	[[ $file == /* ]] || file=$PWD/$file
	[[ -d $repo/.git ]] || die "bundle: $repo is not a git checkout"
	git -C "$repo" diff --quiet HEAD ||
		echo "workshop: note: uncommitted changes are not in the bundle (it holds HEAD)" >&2
	mkdir -p "$repo/build"
	stage=$(mktemp -d "$repo/build/.workshop.XXXXXX")
	trap 'rm -rf "${stage:-}"' EXIT
	top=$stage/kmodlab
	wk=$top/workshop
	mkdir -p "$top" "$wk/debs" "$wk/kernels"
	git -C "$repo" archive HEAD | tar -C "$top" -x
	for p in default debug; do
		echo "workshop: kernel $KVER $p" >&2
		PROFILE=$p "$here/kernel.sh" build
		PROFILE=$p "$here/kernel.sh" export "$wk/kernels/kmodlab-kernel-$KVER-$p.tar.gz"
	done
	echo "workshop: the packages a fresh seat downloads (apt, in a Debian 12 seat of the cache)" >&2
	seat_base
	# shellcheck disable=SC2016
	unshare -m bash -euo pipefail -c '
		base=$1 dir=$2 debs=$3 root=$2/root
		shift 3
		mkdir -p "$dir"/{up,work,root}
		mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/up,workdir=$dir/work" "$root"
		mkdir -p "$root$debs"
		mount --rbind /dev "$root/dev"
		mount -t proc proc "$root/proc"
		mount --bind /etc/resolv.conf "$root/etc/resolv.conf"
		mount --bind "$debs" "$root$debs"
		# what the seat lacks, as its apt downloads it; and the image'"'"'s own
		# packages at today'"'"'s versions: a seat installed from an older
		# point release needs them (libc6-dev wants its exact libc6)
		chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			DEBIAN_FRONTEND=noninteractive bash -euo pipefail -c '"'"'
			debs=$1
			shift
			apt-get -q update
			apt-get -qy install --download-only --no-install-recommends \
				-o Dir::Cache::archives="$debs" "$@"
			cd "$debs"
			apt-get -q download $(dpkg-query -W -f="\${Package}\n")'"'"' _ "$debs" "$@"
	' bundle "$seat_top/root" "$stage/seat" "$wk/debs" $(seat_packages) \
		"linux-source-$KVER=$(dpkg-query -W -f='${Version}' "linux-source-$KVER")" \
		> "$stage/download.log" 2>&1 ||
		{ tail -15 "$stage/download.log" >&2; die "bundle: apt in the seat could not download the packages"; }
	rm -rf "$wk/debs/partial" "$wk/debs/lock"
	want=("$wk"/debs/*.deb)
	{
		# the seats' release is the image's, which is the host's
		. "$seat_top/root/etc/os-release"
		echo "release $VERSION_CODENAME $(dpkg --print-architecture)"
		echo "kernel $KVER linux-source-$KVER=$(dpkg-query -W -f='${Version}' "linux-source-$KVER")"
		echo "commit $(git -C "$repo" rev-parse HEAD)"
		(cd "$wk" && sha256sum debs/*.deb kernels/*.tar.gz | sed 's/^/sha256 /')
	} > "$wk/MANIFEST"
	tar -C "$stage" -cf "$file" kmodlab
	echo "workshop: wrote $file ($(du -h "$file" | cut -f1): ${#want[@]} packages, kernels $KVER default and debug)" >&2
	echo "  on each seat, offline: tar -xf $(basename "$file") && sudo kmodlab/scripts/workshop.sh install" >&2
}

install_seat() {
	local wk=${1:-$repo/workshop} rel arch src want have deb name ver st lists a
	local -a add=() kept=() upgraded=()
	[[ $wk == /* ]] || wk=$PWD/$wk
	[[ -r $wk/MANIFEST ]] || die "install: no $wk/MANIFEST: F= is the workshop/ directory of an unpacked bundle"
	((EUID == 0)) || die "install: run it as root (it installs packages)"
	read -r _ rel arch < <(grep '^release ' "$wk/MANIFEST")
	. /etc/os-release
	[[ $rel == "${VERSION_CODENAME:-}" && $arch == "$(dpkg --print-architecture)" ]] ||
		die "install: the bundle is for Debian $rel $arch, this seat is ${VERSION_CODENAME:-unknown} $(dpkg --print-architecture): make a bundle on a machine like the seats"
	echo "workshop: checking the bundle's files" >&2
	(cd "$wk" && sed -n 's/^sha256 //p' MANIFEST | sha256sum --quiet -c -) ||
		die "install: the bundle's files do not match its MANIFEST (a bad copy?)"
	read -r _ kver src < <(grep '^kernel ' "$wk/MANIFEST")
	[[ $kver == "$KVER" ]] || export KVER=$kver
	for deb in "$wk"/debs/*.deb; do
		name=$(dpkg-deb -f "$deb" Package)
		ver=$(dpkg-deb -f "$deb" Version)
		# this architecture's package (a multiarch seat may have others)
		a=$(dpkg-deb -f "$deb" Architecture)
		[[ $a == all ]] && a= || a=:$a
		st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$name$a" 2>/dev/null || true)
		have=$(dpkg-query -W -f='${Version}' "$name$a" 2>/dev/null || true)
		if [[ $st != [ih]i* ]]; then
			add+=("$deb")
		elif [[ $have == "$ver" ]]; then
			continue
		elif [[ $name == "${src%%=*}" ]]; then
			add+=("$deb")	# the kernels' source: its version, always
		elif dpkg --compare-versions "$have" lt "$ver"; then
			add+=("$deb")
			upgraded+=("$name $have -> $ver")
		else
			kept+=("$name $have (the bundle has $ver)")
		fi
	done
	((${#upgraded[@]} == 0)) ||
		printf 'workshop: updated from the bundle: %s\n' "${upgraded[@]}" >&2
	((${#kept[@]} == 0)) ||
		printf 'workshop: kept as installed, newer than the bundle: %s\n' "${kept[@]}" >&2
	if ((${#add[@]})); then
		echo "workshop: installing ${#add[@]} packages from the bundle (no download)" >&2
		# apt resolves their order and dependencies from these files and
		# what is installed, and from nothing else: no sources and no
		# package lists, so a package missing from the bundle is an error,
		# never a download (--no-download would refuse the files too)
		lists=$(mktemp -d)
		mkdir -p "$lists/partial"
		# --no-remove: installing must never take a package off the seat;
		# a seat's own edits of configuration files are kept, not asked about
		if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			--no-remove --allow-downgrades -o DPkg::Lock::Timeout=600 \
			-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
			-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$lists/none" \
			-o Dir::State::Lists="$lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
			"${add[@]}" < /dev/null > "$wk/install.log" 2>&1; then
			rm -rf "$lists"
			tail -15 "$wk/install.log" >&2
			die "install: the packages did not install offline (see $wk/install.log): the seat differs from the machine the bundle was made on"
		fi
		rm -rf "$lists"
	fi
	want=${src#*=}
	have=$(dpkg-query -W -f='${Version}' "${src%%=*}")
	[[ $have == "$want" ]] || die "install: ${src%%=*} is $have, the kernels need $want"
	# into the cache of whoever will run the labs: the user who ran sudo
	for p in default debug; do
		if [[ -n ${SUDO_USER:-} && $SUDO_USER != root ]]; then
			runuser -u "$SUDO_USER" -- env KVER="$KVER" PROFILE=$p \
				"$here/kernel.sh" import "$wk/kernels/kmodlab-kernel-$KVER-$p.tar.gz"
		else
			PROFILE=$p "$here/kernel.sh" import "$wk/kernels/kmodlab-kernel-$KVER-$p.tar.gz"
		fi
	done
	echo "workshop: this seat is ready${SUDO_USER:+ for $SUDO_USER}: make lab-list, make lab LAB=hello" >&2
}

# A seat as a room has them, made from Debian's archive once and cached
# (debootstrap minbase: Priority required, and apt), then in an overlay
# of it with no network at all (unshare -n): the bundle unpacked, the
# install, and a student's first loop, lab hello made, built and graded
# in QEMU. PASS:/FAIL: lines and the seconds each took.
seat_test() {
	local bundle=$1 top base tmp t0 rc=0
	[[ -r $bundle ]] || die "seat-test: no bundle $bundle (make workshop-bundle)"
	bundle=$(cd "$(dirname "$bundle")" && pwd)/$(basename "$bundle")
	((EUID == 0)) || die "seat-test: run it as root (debootstrap, chroot)"
	seat_base
	top=$seat_top
	base=$top/root
	rm -rf "$top"/.run.*	# the last test's seat (about 1.5 GB)
	tmp=$(mktemp -d "$top/.run.XXXXXX")
	t0=$SECONDS
	# shellcheck disable=SC2016
	unshare -m -n bash -euo pipefail -c '
		base=$1 dir=$2 bundle=$3 root=$2/root
		mkdir -p "$dir"/{up,work,root}
		mount -t overlay overlay -o "lowerdir=$base,upperdir=$dir/up,workdir=$dir/work" "$root"
		mount --rbind /dev "$root/dev"
		mount -t proc proc "$root/proc"
		mount --rbind /sys "$root/sys"
		mount -t tmpfs tmpfs "$root/tmp"
		mount -t tmpfs tmpfs "$root/run"
		seat() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			HOME=/root LANG=C.UTF-8 TERM=dumb bash -euo pipefail -c "$1"; }
		n=0
		step() { # $1 = what, $2 = commands in the seat
			local t=$SECONDS log=$dir/step$((++n)).log
			if seat "$2" > "$log" 2>&1; then
				echo "PASS: workshop seat, offline: $1 ($((SECONDS - t)) s)"
			else
				tail -15 "$log"
				echo "FAIL: workshop seat, offline: $1 (see $log)"
				exit 1
			fi
		}
		ip link show | grep -q "state UP" && { echo "FAIL: the seat has a network"; exit 1; }
		# As in the room: a student account with the bundle in its home,
		# the install by sudo (SUDO_USER names the student), the labs run
		# by the student.
		chroot "$root" useradd -m -s /bin/bash student
		tar -C "$root/home/student" -xf "$bundle"
		chroot "$root" chown -R student: /home/student/kmodlab
		student() { chroot "$root" runuser -u student -- /usr/bin/env -i \
			PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/student LANG=C.UTF-8 TERM=dumb \
			bash -euo pipefail -c "cd /home/student/kmodlab && $1"; }
		sstep() { # $1 = what, $2 = commands the student runs
			local t=$SECONDS log=$dir/step$((++n)).log
			if student "$2" > "$log" 2>&1; then
				echo "PASS: workshop seat, offline, as the student: $1 ($((SECONDS - t)) s)"
			else
				tail -15 "$log"
				echo "FAIL: workshop seat, offline, as the student: $1 (see $log)"
				exit 1
			fi
		}
		step "sudo scripts/workshop.sh install (SUDO_USER=student) sets the seat up" \
			"cd /home/student/kmodlab && SUDO_USER=student scripts/workshop.sh install"
		step "the kernels are in the cache of the student, owned by the student" \
			"ls -d /home/student/.cache/kmodlab/build/*-default-* /home/student/.cache/kmodlab/build/*-debug-* &&
			 test -z \"\$(find /home/student/.cache/kmodlab ! -user student | head -3)\""
		sstep "make lab LAB=hello, then make -C work/hello builds" \
			"make lab LAB=hello && make -C work/hello"
		sstep "make grade LAB=hello grades the fresh tree in the guest" \
			"{ make grade LAB=hello || true; } > /home/student/grade.txt 2>&1 && grep -E \"^Total: \[[0-6]/7\]\" /home/student/grade.txt"
		sstep "the solution gets full marks (STEP=5)" \
			"make lab LAB=hello STEP=5 DIR=/home/student/sol && make grade LAB=hello DIR=/home/student/sol | grep -E \"^Total: \[7/7\]\""
	' seat "$base" "$tmp" "$bundle" || rc=$?
	echo "workshop: seat test in $((SECONDS - t0)) s (logs in $tmp)" >&2
	return "$rc"
}

# make check-full's part: a bundle of this tree, then a seat set up from
# it, counted as check-all counts.
check() {
	local log=$repo/build/workshop/check.log p f
	mkdir -p "$repo/build/workshop"
	{
		if bundle "$repo/build/workshop/kmodlab-workshop.tar"; then
			echo "PASS: make workshop-bundle ($(du -h "$repo/build/workshop/kmodlab-workshop.tar" | cut -f1))"
			seat_test "$repo/build/workshop/kmodlab-workshop.tar"
		else
			echo "FAIL: make workshop-bundle"
		fi
	} 2>&1 | tee "$log"
	p=$(grep -c '^PASS: ' "$log") f=$(grep -c '^FAIL: ' "$log")
	((p + f)) || f=1
	echo "$p passed, $f failed, 0 skipped"
	((f == 0))
}

case ${1:-} in
check)	check ;;
bundle)	bundle "${2:-}" ;;
install) install_seat "${2:-}" ;;
seat-test) seat_test "${2:?usage: scripts/workshop.sh seat-test FILE.tar}" ;;
*)	echo "usage: scripts/workshop.sh bundle [FILE.tar] | install [DIR] | seat-test FILE.tar" >&2; exit 2 ;;
esac
