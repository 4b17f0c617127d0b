#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of where the selftests' kselftest_harness.h comes from: the
# source tree KDIR= names (a kernel of one's own, built in place or with
# O=, whose build tree links to its source), or KSRC=, never Debian's
# linux-source when one of those has it. TAP output; run by `make check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=selftests/host/tap.bash
. "$here/tap.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ksrc() { # make variables...: the KSRC the Makefile settles on
	# shellcheck disable=SC2016 # $(KSRC) is make's
	make -s -C "$repo" --no-print-directory \
		--eval='build/.print-ksrc: ; @echo $(KSRC)' build/.print-ksrc "$@" 2>/dev/null
}
mkdir -p "$tmp/linux/tools/testing/selftests" "$tmp/obj" "$tmp/other/tools/testing/selftests" "$tmp/headers"
# a harness that selects tests, as 6.12's does
sel='	while ((opt = getopt(argc, argv, "hlF:f:V:v:t:T:r:")) != -1) {'
echo "$sel" > "$tmp/linux/tools/testing/selftests/kselftest_harness.h"
echo "$sel" > "$tmp/other/tools/testing/selftests/kselftest_harness.h"
ln -s "$tmp/linux" "$tmp/obj/source"
check "KDIR= a source tree: its harness" test "$(ksrc KDIR="$tmp/linux")" = "$tmp/linux"
check "KDIR= an O= build tree: its source's harness" test "$(ksrc KDIR="$tmp/obj")" = "$tmp/obj/source"
check "KSRC= wins over KDIR=" test "$(ksrc KDIR="$tmp/linux" KSRC="$tmp/other")" = "$tmp/other"
# a headers-only tree (a distribution's linux-headers) has no harness:
# then Debian's linux-source, as before
check "KDIR= a headers tree: not taken" test "$(ksrc KDIR="$tmp/headers")" != "$tmp/headers"
# 6.1's harness has no getopt: -l, -r and -T would run every test
mkdir -p "$tmp/old/tools/testing/selftests"
echo 'static void __run_test(void) {}' > "$tmp/old/tools/testing/selftests/kselftest_harness.h"
check "KDIR= a tree whose harness cannot select tests: not taken" \
	test "$(ksrc KDIR="$tmp/old")" != "$tmp/old"
echo "1..$n"
