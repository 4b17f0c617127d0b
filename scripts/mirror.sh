#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Mirror the kernel-side sources into a build directory as symlinks, so
# Kbuild (which writes objects next to its sources) leaves the tree clean.
#   scripts/mirror.sh SRC_ROOT BUILD_DIR
set -euo pipefail
src=$1 dst=$2
mkdir -p "$dst"
# Drop links whose source is gone, so a removed file stops being built.
find "$dst" -xtype l -delete
ln -sfn "$src/Kbuild" "$dst/Kbuild"
cd "$src"
find modules uapi -type f \( -name '*.c' -o -name '*.h' -o -name Kbuild \) |
while IFS= read -r f; do
	# no exec for the links that exist: this runs before every build
	[[ -L $dst/$f ]] && continue
	mkdir -p "$dst/${f%/*}"
	ln -s "$src/$f" "$dst/$f"
done
