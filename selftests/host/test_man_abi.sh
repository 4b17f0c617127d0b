#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of scripts/man-abi.sh: kmodlab(4)'s ABI versions and ioctl
# numbers are the uapi headers'. TAP output; run by `make check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=selftests/host/tap.bash
. "$here/tap.bash"
tool=$repo/scripts/man-abi.sh

check "kmodlab(4) agrees with uapi/" "$tool"
# a page that says another version, another range, a header that is not there
sed 's/^ABI version 2, ioctl numbers 0x10 to 0x17:$/ABI version 3, ioctl numbers 0x10 to 0x17:/' \
	"$repo/man/kmodlab.4" > "$tmp/v.4"
out=$("$tool" "$tmp/v.4")
check "a wrong ABI version is named" test $? -eq 1 -a "$out" == \
	"$tmp/v.4: <linux/kml_probe.h> is ABI version 3 there, 2 in the header"
sed 's/^ABI version 2, ioctl numbers 0x20 to 0x24:$/ABI version 2, ioctl numbers 0x20 to 0x25:/' \
	"$repo/man/kmodlab.4" > "$tmp/r.4"
out=$("$tool" "$tmp/r.4")
check "a wrong ioctl range is named" test $? -eq 1 -a "$out" == \
	"$tmp/r.4: <linux/kml_ring.h> has ioctl numbers 0x20 to 0x25 there, 0x20 to 0x24 in the header"
sed 's@<linux/kml_ring.h>@<linux/kml_rung.h>@' "$repo/man/kmodlab.4" > "$tmp/h.4"
out=$("$tool" "$tmp/h.4")
check "a header uapi/ lacks is named" test $? -eq 1 -a "$out" == \
	"$tmp/h.4: names <linux/kml_rung.h>, which uapi/ does not have"
printf '.TH X 4\n.SH NAME\nx\n' > "$tmp/none.4"
"$tool" "$tmp/none.4" > /dev/null
check "a page with no ABI line at all is refused" test $? -eq 1
# and a header whose version moves is caught through the page
mkdir -p "$tmp/uapi"
cp "$repo"/uapi/linux/*.h "$tmp/uapi/"
sed -i 's/^#define KML_SENSOR_ABI_VERSION\t\t2/#define KML_SENSOR_ABI_VERSION\t\t3/' "$tmp/uapi/kml_sensor.h"
"$tool" "$repo/man/kmodlab.4" "$tmp/uapi" > /dev/null
check "a header whose ABI version moved without the page is caught" test $? -eq 1
echo "1..$n"
