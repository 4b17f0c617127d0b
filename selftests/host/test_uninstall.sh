#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of make uninstall-userspace: it removes exactly what make
# install-userspace put under DESTDIR, and leaves what else is there.
# TAP output; run by `make check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=selftests/host/tap.bash
. "$here/tap.bash"

d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/usr/bin"
echo keep > "$d/usr/bin/someone-elses"
check "make install-userspace under DESTDIR" \
	make -s -C "$repo" install-userspace DESTDIR="$d" PREFIX=/usr
installed=$(cd "$d" && find . ! -type d | grep -vx './usr/bin/someone-elses' | sort)
check "it installed the clients, headers, man pages, rule and completion" \
	test "$(wc -l <<< "$installed")" -ge 20
check "make uninstall-userspace under DESTDIR" \
	make -s -C "$repo" uninstall-userspace DESTDIR="$d" PREFIX=/usr
left=$(cd "$d" && find . ! -type d | sort)
check "nothing it installed is left" test "$left" == ./usr/bin/someone-elses
echo "1..$n"
