#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kmodlab(4) against the uapi headers: each device's "ABI version N,
# ioctl numbers 0xA to 0xB" must be its header's KML_*_ABI_VERSION and the
# lowest and highest ioctl number it defines. Prints one line per
# disagreement and exits 1 if there is any; `make lint` runs it.
#
#   scripts/man-abi.sh [MAN_PAGE [UAPI_DIR]]
set -u
here=$(cd "$(dirname "$0")" && pwd)
man=${1:-$here/../man/kmodlab.4}
uapi=${2:-$here/../uapi/linux}
bad=0 seen=0
while IFS='|' read -r hdr version lo hi; do
	seen=$((seen + 1))
	h=$uapi/$hdr
	if [[ ! -f $h ]]; then
		echo "$man: names <linux/$hdr>, which uapi/ does not have"
		bad=1
		continue
	fi
	want=$(sed -nE 's/^#define KML_[A-Z]+_ABI_VERSION[[:space:]]+([0-9]+).*/\1/p' "$h")
	read -r wlo whi < <(sed -nE 's/^#define KML_[A-Z_]+_IOC_[A-Z_]+[[:space:]]+_IO[RW]*\([A-Z_]+, (0x[0-9a-fA-F]+).*/\1/p' "$h" |
		while read -r x; do echo $((x)); done | sort -n | sed -n '1p;$p' | tr '\n' ' ')
	if [[ $version != "$want" ]]; then
		echo "$man: <linux/$hdr> is ABI version $version there, $want in the header"
		bad=1
	fi
	if ((lo != ${wlo:--1} || hi != ${whi:--1})); then
		printf '%s: <linux/%s> has ioctl numbers 0x%02x to 0x%02x there, 0x%02x to 0x%02x in the header\n' \
			"$man" "$hdr" "$lo" "$hi" "$wlo" "$whi"
		bad=1
	fi
done < <(awk '
	/^\.IR? \\%<linux\/kml_[a-z]+\.h>/ { match($0, /kml_[a-z]+\.h/); hdr = substr($0, RSTART, RLENGTH); next }
	hdr != "" && /^ABI version [0-9]+, ioctl numbers 0x[0-9a-fA-F]+ to 0x[0-9a-fA-F]+:/ {
		print hdr "|" $3 + 0 "|" $6 "|" substr($8, 1, length($8) - 1); hdr = ""; next }
	{ hdr = "" }' "$man")
if ((seen == 0)); then
	echo "$man: no \"ABI version N, ioctl numbers\" line after a uapi header"
	bad=1
fi
exit $bad
