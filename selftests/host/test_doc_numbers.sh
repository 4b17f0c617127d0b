#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of scripts/doc-numbers.py: a number the documents quote is
# the one docs/measured.md's table gives, every key quoted has a row, and
# every row is quoted. TAP output; run by `make check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=selftests/host/tap.bash
. "$here/tap.bash"
tool=$repo/scripts/doc-numbers.py

check "this tree's documents quote docs/measured.md" "$tool"
cat > "$tmp/m.md" <<'MD'
# Measured

## The numbers the documents quote

| key | value | how it was measured |
|---|---|---|
| `grade-x` | about 20 s | time make grade LAB=x |
| `build-y` | 9 to 20 s | lab-check's build lines |

## Other

| `not-a-row` | 1 | here |
MD
printf 'A grade takes <!--n:grade-x-->about 20 s<!--/n-->, a build <!--n:build-y-->9 to 20 s<!--/n-->.\n' > "$tmp/ok.md"
check "quotes that agree pass" "$tool" "$tmp/m.md" "$tmp/ok.md"
printf 'A grade takes <!--n:grade-x-->about 30 s<!--/n-->, a build <!--n:build-y-->9 to 20 s<!--/n-->.\n' > "$tmp/drift.md"
out=$("$tool" "$tmp/m.md" "$tmp/drift.md")
check "a quote that drifted from its row is named" test $? -eq 1 -a "$out" == \
	"$tmp/drift.md:1: 'grade-x' is \"about 30 s\" here, \"about 20 s\" in $tmp/m.md"
printf '<!--n:grade-x-->about 20 s<!--/n--> <!--n:build-y-->9 to 20 s<!--/n--> <!--n:not-a-row-->1<!--/n-->\n' > "$tmp/unknown.md"
out=$("$tool" "$tmp/m.md" "$tmp/unknown.md")
check "a key with no row (or a row outside the table) is named" test $? -eq 1 -a "$out" == \
	"$tmp/unknown.md:1: quotes 'not-a-row', which $tmp/m.md has no row for"
printf 'A grade takes <!--n:grade-x-->about 20 s<!--/n-->.\n' > "$tmp/half.md"
out=$("$tool" "$tmp/m.md" "$tmp/half.md")
check "a row nobody quotes is named" test $? -eq 1 -a "$out" == \
	"$tmp/m.md:8: 'build-y' is quoted by no document"
sed 's/| time make grade LAB=x |/|  |/' "$tmp/m.md" > "$tmp/nohow.md"
out=$("$tool" "$tmp/nohow.md" "$tmp/ok.md")
check "a row that says not how it was measured is named" test $? -eq 1 -a "$out" == \
	"$tmp/nohow.md:7: 'grade-x' says not how it was measured"
printf '# Measured\n' > "$tmp/empty.md"
"$tool" "$tmp/empty.md" "$tmp/ok.md" > /dev/null
check "a measured.md without the table is refused" test $? -eq 1
echo "1..$n"
