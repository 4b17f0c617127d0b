#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The error names the documents give for a device are the ones its uapi
# header documents: every errno named in a module's part of kmodlab(4)
# (.SS kml_x) and of docs/modules.md (## kml_x) must appear in
# uapi/linux/kml_x.h's text, the ABI's single source. The errors any
# ioctl or file operation can give (EFAULT, ENOTTY, ENOMEM, EINTR) are
# not each repeated there. Prints one line per error the header lacks and
# exits 1 if there is any; `make lint` runs it.
#
#   scripts/doc-errno.sh [MAN_PAGE [MODULES_MD [UAPI_DIR]]]
set -u
here=$(cd "$(dirname "$0")" && pwd)
man=${1:-$here/../man/kmodlab.4}
md=${2:-$here/../docs/modules.md}
uapi=${3:-$here/../uapi/linux}
generic=" EFAULT ENOTTY ENOMEM EINTR "
# errno names as the C library knows them: no word that merely looks like one
names=" $(printf '#include <errno.h>\n' | cpp -dM | sed -nE 's/^#define (E[A-Z0-9]+) .*/\1/p' | tr '\n' ' ') "
bad=0 seen=0
# "file|module|errno" for each errno a module's part names
while IFS='|' read -r file mod err; do
	[[ $names == *" $err "* && $generic != *" $err "* ]] || continue
	h=$uapi/$mod.h
	[[ -f $h ]] || continue		# kml_hello has no device
	seen=$((seen + 1))
	if ! grep -qw -- "-\?$err" "$h"; then
		echo "$file: $mod: $err is not in <linux/$mod.h>"
		bad=1
	fi
done < <({
	awk -v f="$man" '
		/^\.S[HS] / { mod = ""; if ($1 == ".SS" && $2 ~ /^\\%kml_[a-z]+$/) mod = substr($2, 3); next }
		mod != "" { s = $0; while (match(s, /E[A-Z][A-Z0-9]+/)) {
			print f "|" mod "|" substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH) } }' "$man"
	awk -v f="$md" '
		/^## / { mod = ($2 ~ /^kml_[a-z]+$/) ? $2 : ""; next }
		mod != "" { s = $0; while (match(s, /E[A-Z][A-Z0-9]+/)) {
			print f "|" mod "|" substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH) } }' "$md"
	} | sort -u)
if ((seen == 0)); then
	echo "$man, $md: no error name in any module's part"
	bad=1
fi
exit $bad
