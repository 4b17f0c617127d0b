#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: benchmarks in one guest run, reported as ratios. Not a test:
# nothing here passes or fails on a number.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
"$here/deps.sh" host kernel vm
"$here/kernel.sh" build
make -s all bench-build
"$here/vm-run.sh" --timeout 900 --out build/vm/bench -- scripts/guest/bench.sh |
	grep -v '^\[ *[0-9.]*\]' | tee build/bench.txt
