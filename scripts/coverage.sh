#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The coverage report of the kmodlab modules, from counters collected by
# scripts/kml-gcov-collect (in our guests, or on your own test machine).
#
#   scripts/coverage.sh [options] FROM...     (make coverage FROM=...)
#
# FROM is an archive written by `kml-gcov-collect run|archive`, or a
# directory of captures (`kml-gcov-collect capture DIR NAME`). Each
# capture is named after the test (or program) that ran while it was
# counted; the report shows, for every line, which of them ran it.
#
#   --out DIR       where the report goes (default build/coverage)
#   --min N         lines gate, percent (default 0: report only)
#   --branch-min N  branches gate, percent (default 0)
#   --all           every module must have data (make check)
#
# Writes DIR/kmodlab.info (one test name per capture) and the HTML in
# DIR/html/index.html, prints a table per module and one line per module,
# "COVERAGE-OK ..." or "COVERAGE-LOW ...", and with several captures the
# per-test report (DIR/only-one-test.txt lists lines only one test runs).
# Exits non-zero when a gate fails, or when LCOV_EXCL_BR_LINE markers hide
# over 5% of a module's branches (each must say why; other markers are
# refused).
#
# Counters never go into the build tree: each capture is read where it
# was unpacked, next to links to the build's .gcno files, so no report can
# mix counters of two runs (or stale .gcda files of an earlier one).
# GCOV=gcov-N picks the gcov of the compiler that built the modules.
set -uo pipefail
# Physical paths (-P): lcovtool.py realpath resolves the captures' source
# paths, and the extract below must match them in a symlinked checkout.
here=$(cd "$(dirname "$0")" && pwd -P)
repo=$(cd "$here/.." && pwd -P)
out=$repo/build/coverage lmin=0 bmin=0 all=
from=()
while (($#)); do
	case $1 in
	--out)		out=$2; shift 2 ;;
	--min)		lmin=$2; shift 2 ;;
	--branch-min)	bmin=$2; shift 2 ;;
	--all)		all=--all; shift ;;
	-*)		echo "coverage.sh: unknown option $1" >&2; exit 2 ;;
	*)		from+=("$1"); shift ;;
	esac
done
if ((${#from[@]} == 0)); then
	echo "coverage.sh: no counters given: make coverage FROM=<archive or directory from kml-gcov-collect>" >&2
	exit 2
fi
gcov=${GCOV:-gcov}
command -v lcov > /dev/null || "$here/deps.sh" pkg=lcov || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# OUT= is replaced whole: only a directory this script wrote (it leaves
# .kml-coverage in it; older versions left only kmodlab.info) or an empty
# one, never a user's directory.
if [[ -e $out && ! -e $out/.kml-coverage && ! -e $out/kmodlab.info ]] &&
   [[ -n $(ls -A "$out" 2>/dev/null) || ! -d $out ]]; then
	echo "coverage.sh: $out exists and is not a coverage report: give an empty or new directory" >&2
	exit 2
fi
rm -rf "$out"
mkdir -p "$out" && touch "$out/.kml-coverage" || exit 2

# Unpack archives, copy directories (the input is never written to:
# the .gcno links and lcov's output go into the copy); find the captures
# (directories holding .kml-capture).
caps=()
i=0
for f in "${from[@]}"; do
	i=$((i + 1))
	mkdir -p "$work/in$i"
	if [[ -f $f ]]; then
		tar -C "$work/in$i" -xzf "$f" || { echo "coverage.sh: cannot unpack $f" >&2; exit 2; }
	elif [[ -d $f ]]; then
		cp -r "$f/." "$work/in$i/" || { echo "coverage.sh: cannot copy $f" >&2; exit 2; }
		find "$work/in$i" \( -name '*.info' -o -name '*.gcno' \) -delete
	else
		echo "coverage.sh: no such archive or directory: $f" >&2
		exit 2
	fi
	f=$work/in$i
	while IFS= read -r c; do
		caps+=("$(cd "${c%/.kml-capture}" && pwd)")
	done < <(find "$f" -name .kml-capture | sort)
done
if ((${#caps[@]} == 0)); then
	echo "coverage.sh: no captures in ${from[*]} (written by kml-gcov-collect?)" >&2
	exit 2
fi

# Each counter file's .gcno must be at the path the counters name: the
# build machine's directory, which the module recorded when it was built.
missing=
for c in "${caps[@]}"; do
	while IFS= read -r g; do
		rel=${g#"$c"}
		if [[ -e ${rel%.gcda}.gcno ]]; then
			ln -sf "${rel%.gcda}.gcno" "${g%.gcda}.gcno"
		else
			missing=${rel%.gcda}.gcno
		fi
	done < <(find "$c" -name '*.gcda')
done
if [[ -n $missing ]]; then
	echo "coverage.sh: no $missing: these counters come from modules built elsewhere." >&2
	echo "  Report on the machine (and in the directory) that built them, from the same build." >&2
	exit 2
fi

# Each source file's counters are tried once with gcov (lcov's own
# errors are ignored below, so they must be caught here): a gcov of
# another gcc than the one that built the modules cannot read their notes
# ("version"), and a module rebuilt since the run has new notes ("stamp
# mismatch"); either would silently drop files from the report.
if ! command -v "$gcov" > /dev/null; then
	echo "coverage.sh: no $gcov: install the gcov of the gcc that built the modules (make coverage GCOV=gcov-12 FROM=...)" >&2
	exit 2
fi
declare -A tried=()
for c in "${caps[@]}"; do
	while IFS= read -r g; do
		rel=${g#"$c"}
		[[ -n ${tried[$rel]:-} ]] && continue
		tried[$rel]=1
		msg=$(cd "$work" && "$gcov" -n -o "${g%/*}" "$g" 2>&1 >/dev/null)
		if [[ $msg == *version* ]]; then
			cc=$(sed -n 's/^compiler=//p' "$c/.kml-capture")
			echo "coverage.sh: $gcov cannot read these counters: $msg" >&2
			echo "  $gcov is: $("$gcov" --version 2>/dev/null | head -1)" >&2
			echo "  the kernel they ran on was built by: $cc" >&2
			echo "  Use the gcov of the gcc that built the modules, e.g. make coverage GCOV=gcov-12 FROM=..." >&2
			exit 2
		elif [[ $msg == *stamp* ]]; then
			echo "coverage.sh: ${rel%.gcda}.gcno was rebuilt after these counters were taken: $msg" >&2
			echo "  Report before rebuilding the modules, or run the tests again." >&2
			exit 2
		fi
	done < <(find "$c" -name '*.gcda')
done

# One lcov capture per capture, named after it, written beside it in the
# work directory; one job per CPU.
for c in "${caps[@]}"; do
	printf '%s\0' "$c"
done | xargs -0 -P "$(nproc)" -I{} bash -c '
	c=$1 gcov=$2 name=$(sed -n "s/^name=//p" "$1/.kml-capture")
	[[ -n $(find "$c" -name "*.gcda" -print -quit) ]] || exit 0
	lcov -q --capture --gcov-tool "$gcov" -t "$name" --directory "$c" \
		--output-file "$c.info" --rc lcov_branch_coverage=1 \
		--ignore-errors gcov 2> >(grep -v "redefined at" >&2)' _ {} "$gcov"
if ((PIPESTATUS[1])); then
	echo "coverage.sh: lcov failed on a capture (above)" >&2
	exit 1
fi
infos=()
for c in "${caps[@]}"; do
	[[ -s $c.info ]] && infos+=(-a "$c.info")
done
if ((${#infos[@]} == 0)); then
	echo "coverage.sh: the captures hold no counters of kmodlab modules" >&2
	exit 1
fi
lcov -q "${infos[@]}" --output-file "$work/merged.info" --rc lcov_branch_coverage=1 &&
"$here/lcovtool.py" realpath "$work/merged.info" "$work/real.info" &&
lcov -q --extract "$work/real.info" "$repo/modules/*" --output-file "$out/kmodlab.info" \
	--rc lcov_branch_coverage=1 || exit 1
details=()
((${#caps[@]} > 1)) && details=(--show-details)
genhtml -q --rc genhtml_branch_coverage=1 "${details[@]}" -o "$out/html" \
	"$out/kmodlab.info" > /dev/null &&
	echo "coverage report: $out/html/index.html (${#caps[@]} captures)"

rc=0
"$here/lcovtool.py" table "$out/kmodlab.info" "$repo/modules" "$lmin" "$bmin" $all || rc=1

# A branch no test can reach (compiler-made, debug-only) may be hidden with
# "LCOV_EXCL_BR_LINE: why" on its line. They are counted from one more
# capture that ignores the markers, listed with their reasons, and held
# to 5% of each module's branches: a gate must not be met by hiding.
if ! marks=$("$here/lcovtool.py" markers "$repo/modules"); then
	rc=1
elif [[ -z $marks ]]; then
	echo "excluded branches: none (no LCOV_EXCL_BR_LINE markers in modules/)"
else
	# every capture is under $work, unpacked or copied
	lcov -q --capture --gcov-tool "$gcov" --directory "$work" --output-file "$work/all.info" \
		--rc lcov_branch_coverage=1 --rc lcov_excl_br_line=KMODLAB_IGNORES_NO_MARKER \
		--ignore-errors gcov 2> >(grep -v "redefined at" >&2)
	if [[ ! -s $work/all.info ]]; then
		echo "coverage.sh: the capture without markers is empty: the excluded branches cannot be counted" >&2
		rc=1
	else
		"$here/lcovtool.py" realpath "$work/all.info" "$work/all-real.info" &&
		"$here/lcovtool.py" excluded "$work/all-real.info" "$repo/modules" 5 || rc=1
	fi
fi
if ((${#caps[@]} > 1)); then
	"$here/lcovtool.py" tests "$out/kmodlab.info" --lines "$out/only-one-test.txt"
	echo "lines only one test runs: $out/only-one-test.txt"
	"$here/lcovtool.py" annotate "$out/kmodlab.info" "$repo/modules" "$out/by-test"
fi
exit $rc
