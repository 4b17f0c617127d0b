#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make deb`: Debian packages with Debian's own tooling (debhelper,
# dh-dkms), checked by lintian.
#   kmodlab-dkms  the modules' sources; DKMS builds them for each kernel
#                 with headers installed (dkms.conf is the recipe)
#   kmodlab       clients, man pages, completion, udev rule
#   kmodlab-dev   the uapi headers (<linux/kml_*.h>)
# The build runs in a copy of what git tracks (as the working tree has
# it: no stray file of the tree ends up in a package) under build/deb/; the
# packages land in build/deb/. Ends with lintian's verdict: any warning
# or error fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"
"$here/deps.sh" host deb

version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
deb_version=$(dpkg-parsechangelog -S Version)
# dkms.conf names the release the modules and clients report; the
# package must carry the same one (it also names /usr/src/kmodlab-VERSION)
if [[ $version != "$deb_version" ]]; then
	echo "deb.sh: debian/changelog is at $deb_version but dkms.conf at $version:" \
	     "add a changelog entry (dch -v $version)" >&2
	exit 1
fi
out=$repo/build/deb
src=$out/kmodlab-$version
rm -rf "$out"
mkdir -p "$src"
git ls-files -z --cached |
	while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
	cpio -pdm0 --quiet "$src"
echo "deb.sh: building in $src (log: $out/build.log)"
if ! (cd "$src" && dpkg-buildpackage --no-sign -b) > "$out/build.log" 2>&1; then
	tail -30 "$out/build.log" >&2
	echo "deb.sh: dpkg-buildpackage failed (see $out/build.log)" >&2
	exit 1
fi
rm -rf "$src"
changes=$(ls "$out"/kmodlab_"$version"_*.changes)
ls -l "$out"/*.deb
echo "deb.sh: lintian $(lintian --version | cut -d' ' -f2) on ${changes##*/}"
lintian --allow-root --fail-on error,warning --display-info "$changes"
echo "deb.sh: lintian clean"
