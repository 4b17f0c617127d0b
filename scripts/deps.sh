#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install the Debian/Ubuntu packages a kmodlab target needs.
#   scripts/deps.sh host|kernel|vm|check|stock|trace|bpf|deb|pkg=NAME   (groups add up)
# As root: apt-get installs what is missing. As anyone else: print the
# exact command to run and fail, rather than half-working later.
set -euo pipefail

KVER=${KVER:-6.12}
pkgs=()
for group in "$@"; do
	case $group in
	host)	pkgs+=(make gcc libc6-dev) ;;
	# dwarves: pahole, which writes the default profile's BTF
	kernel)	pkgs+=("linux-source-$KVER" xz-utils flex bison bc libelf-dev dwarves
		       libssl-dev cpio kmod perl python3) ;;
	vm)	pkgs+=(qemu-system-x86 iproute2 nftables) ;;
	# linux-perf: test_kml_perf_data has perf read kml-probe's perf.data (it SKIPs those without)
	check)	pkgs+=(lcov sparse valgrind clang libclang-rt-dev lm-sensors cppcheck man-db groff-base
		       gcc-multilib linux-perf) ;;
	# dkms: check-stock installs the kmodlab-dkms package on this host
	stock)	pkgs+=(busybox-static cpio kmod dkms) ;;
	# the kernel's own tools on the modules' tracepoints (selftests' trace.*)
	trace)	pkgs+=(linux-perf bpftrace trace-cmd) ;;
	# labs/bpf: BPF programs in C (clang), their skeletons (bpftool), the
	# loader's library (libbpf-dev, which brings libelf and zlib)
	bpf)	pkgs+=(clang bpftool libbpf-dev) ;;
	# make deb: Debian's packaging tools and their checker (dh-dkms
	# writes the maintainer scripts; building needs no dkms)
	deb)	pkgs+=(dpkg-dev debhelper dh-dkms lintian) ;;
	pkg=*)	pkgs+=("${group#pkg=}") ;;
	*)	echo "deps.sh: unknown group '$group'" >&2; exit 2 ;;
	esac
done

# One dpkg-query for all: this runs before every build and guest.
declare -A have=()
while read -r st p; do
	[[ $st == ii* ]] && have[${p%%:*}]=1
done < <(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${pkgs[@]}" 2>/dev/null)
missing=()
for p in "${pkgs[@]}"; do
	[[ -n ${have[$p]:-} ]] || missing+=("$p")
done
((${#missing[@]})) || exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "kmodlab needs these packages: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Another apt/dpkg (unattended upgrades, or make check-all's background
# kernel builds installing their source) may hold the lock: wait for it.
apt=(apt-get -o DPkg::Lock::Timeout=1200)
# A kernel source Debian 12 does not have (linux-source-7.3 is in Debian
# 13's backports): that one package is downloaded from Debian 13 and
# installed alone. It needs only binutils and xz-utils, so
# nothing else on the host changes, and the host's apt sources stay
# Debian 12's (a pinned trixie entry would offer Debian 13 upgrades to
# every `apt-get upgrade` that ignores the pin's intent).
candidate() { apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v none; }
updated=0
for i in "${!missing[@]}"; do
	p=${missing[i]}
	[[ $p == linux-source-* ]] || continue
	[[ -n $(candidate "$p") ]] && continue
	# a fresh machine's lists may be empty: ask Debian 12 first
	((updated)) || { "${apt[@]}" update >&2; updated=1; }
	[[ -n $(candidate "$p") ]] && continue
	here=$(cd "$(dirname "$0")" && pwd)
	dl=$(mktemp -d)
	chmod 755 "$dl"
	# apt-get on the file (not dpkg -i): it waits for the lock, and takes
	# the package's dependencies from Debian 12
	# lists up to a day old may name a point release the archive has
	# replaced since: on a failed download, read them again and retry
	{ (cd "$dl" && "$here/apt-trixie.sh" apt-get -q download "$p" >&2) ||
	  (cd "$dl" && KMODLAB_TRIXIE_REFRESH=1 "$here/apt-trixie.sh" apt-get -q download "$p" >&2); } &&
		"${apt[@]}" install -y --no-install-recommends "$dl"/*.deb >&2 ||
		{ rm -rf "$dl"; echo "deps.sh: cannot fetch $p from Debian 13" >&2; exit 1; }
	rm -rf "$dl"
	unset 'missing[i]'
done
((${#missing[@]})) || exit 0
if ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >&2; then
	"${apt[@]}" update >&2
	"${apt[@]}" install -y --no-install-recommends "${missing[@]}" >&2
fi
