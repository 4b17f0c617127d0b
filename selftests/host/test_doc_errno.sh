#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of scripts/doc-errno.sh: the error names kmodlab(4) and
# docs/modules.md give for a device are its uapi header's. TAP output;
# run by `make check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=selftests/host/tap.bash
. "$here/tap.bash"
tool=$repo/scripts/doc-errno.sh
man=$repo/man/kmodlab.4 md=$repo/docs/modules.md

check "kmodlab(4) and docs/modules.md agree with uapi/" "$tool"
# the page names an error the header does not document (the README once
# said -ESRCH for what kml_probe's header and module say is -ENOENT)
sed 's/^\.B \\%EEXIST$/.B \\%ECHILD/' "$man" > "$tmp/p.4"
out=$("$tool" "$tmp/p.4" "$md")
check "an error of kmodlab(4) the header lacks is named" test $? -eq 1 -a "$out" == \
	"$tmp/p.4: kml_probe: ECHILD is not in <linux/kml_probe.h>"
# in docs/modules.md, under its module's heading only
{ cat "$md"; printf '\n## kml_ring\n\nA full ring is `-EOVERFLOW`.\n'; } > "$tmp/m.md"
out=$("$tool" "$man" "$tmp/m.md")
check "an error of docs/modules.md the header lacks is named" test $? -eq 1 -a "$out" == \
	"$tmp/m.md: kml_ring: EOVERFLOW is not in <linux/kml_ring.h>"
# a header that stops documenting an error the documents give
mkdir -p "$tmp/uapi"
cp "$repo"/uapi/linux/*.h "$tmp/uapi/"
sed -i 's/-EAGAIN on an O_NONBLOCK file/nothing on an O_NONBLOCK file/' "$tmp/uapi/kml_sensor.h"
out=$("$tool" "$man" "$md" "$tmp/uapi")
check "a header that drops an error the documents give is caught" test $? -eq 1 -a -n "$out"
# words that only look like errno names, and the errors every ioctl has
printf '.SH DESCRIPTION\n.SS \\%%kml_ring\nEND EOF EFAULT ENOTTY are fine; so is -ENOSPC.\n' > "$tmp/w.4"
printf '# x\n' > "$tmp/w.md"
check "non-errno words and the generic errors are not checked" "$tool" "$tmp/w.4" "$tmp/w.md"
printf '.TH X 4\n.SH NAME\nx\n' > "$tmp/none.4"
"$tool" "$tmp/none.4" "$tmp/w.md" > /dev/null
check "documents with no error name at all are refused" test $? -eq 1
echo "1..$n"
