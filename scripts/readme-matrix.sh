#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make readme-matrix`: writes the table of the last `make check-all` (or
# check-full), build/check-all/matrix.md, into README.md between its two
# kernel-matrix markers, so the matrix is what a run printed, not typed.
#   scripts/readme-matrix.sh [MATRIX [README]]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
matrix=${1:-$here/../build/check-all/matrix.md}
readme=${2:-$here/../README.md}
begin='<!-- kernel-matrix: begin (make readme-matrix writes this from the last make check-all) -->'
end='<!-- kernel-matrix: end -->'
[[ -s $matrix ]] || { echo "readme-matrix: no $matrix: run make check-all first" >&2; exit 1; }
grep -q '^| kernel |' "$matrix" || { echo "readme-matrix: $matrix holds no table" >&2; exit 1; }
(($(grep -cxF "$begin" "$readme") == 1 && $(grep -cxF "$end" "$readme") == 1)) ||
	{ echo "readme-matrix: $readme needs one of each marker line:" >&2; printf '  %s\n' "$begin" "$end" >&2; exit 1; }
tmp=$(mktemp "$readme.XXXXXX")
awk -v begin="$begin" -v end="$end" -v matrix="$matrix" '
	$0 == begin { print; while ((getline l < matrix) > 0) print l; skip = 1; next }
	$0 == end { skip = 0 }
	!skip' "$readme" > "$tmp"
mv "$tmp" "$readme"
echo "readme-matrix: $readme now has the table of $matrix" >&2
