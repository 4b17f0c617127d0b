#!/bin/bash
# Turn the .gcda files the VM runner copied back into an lcov report.
#   scripts/coverage.sh KBUILD_DIR OUT_DIR MIN_PERCENT
# Writes OUT_DIR/kmodlab.info and the HTML report OUT_DIR/html/index.html,
# prints a table of line and function coverage per module, and one line
# per module: "COVERAGE-OK ..." or "COVERAGE-LOW ..." (below MIN_PERCENT
# of lines, or no data at all: a module that only compiles is not tested).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
kbuild=$(cd "$1" && pwd) out=$2 min=$3
rm -rf "$out"
mkdir -p "$out"

lcov -q --capture --directory "$kbuild/modules" --output-file "$out/raw.info" \
	--ignore-errors gcov \
	--rc lcov_branch_coverage=1 2> >(grep -v 'redefined at' >&2)
if [[ -s $out/raw.info ]]; then
	# The build compiled symlinks in a mirror; report the real sources.
	sed "s|^SF:$kbuild/|SF:$repo/|" "$out/raw.info" > "$out/mapped.info"
	lcov -q --extract "$out/mapped.info" "$repo/modules/*" \
		--output-file "$out/kmodlab.info" --rc lcov_branch_coverage=1
	genhtml -q --rc genhtml_branch_coverage=1 -o "$out/html" \
		"$out/kmodlab.info" > /dev/null &&
		echo "coverage report: $out/html/index.html"
fi

printf '%-12s %8s %12s %8s %12s\n' MODULE LINES HIT FUNCS HIT
rc=0
for dir in "$repo"/modules/*/; do
	mod=$(basename "$dir")
	[[ $mod == include || $mod == tests ]] && continue
	read -r lf lh fnf fnh < <(awk -v d="SF:$repo/modules/$mod/" '
		/^SF:/ { on = index($0, d) == 1 }
		on && /^LF:/ { lf += substr($0, 4) }
		on && /^LH:/ { lh += substr($0, 4) }
		on && /^FNF:/ { fnf += substr($0, 5) }
		on && /^FNH:/ { fnh += substr($0, 5) }
		END { print lf + 0, lh + 0, fnf + 0, fnh + 0 }' \
		"$out/kmodlab.info" 2>/dev/null || echo 0 0 0 0)
	if ((lf == 0)); then
		printf '%-12s %8s\n' "$mod" "no data"
		echo "COVERAGE-LOW $mod: no coverage data (not exercised in the guest)"
		rc=1
		continue
	fi
	lp=$(awk -v a="$lh" -v b="$lf" 'BEGIN { printf "%.1f", 100 * a / b }')
	fp=$(awk -v a="$fnh" -v b="$fnf" 'BEGIN { printf "%.1f", b ? 100 * a / b : 100 }')
	printf '%-12s %8s %11s%% %8s %11s%%\n' "$mod" "$lh/$lf" "$lp" "$fnh/$fnf" "$fp"
	if awk -v p="$lp" -v m="$min" 'BEGIN { exit !(p >= m) }'; then
		echo "COVERAGE-OK $mod: $lp% of lines (>= $min%), $fp% of functions"
	else
		echo "COVERAGE-LOW $mod: $lp% of lines (< $min%), $fp% of functions"
		rc=1
	fi
done
exit $rc
