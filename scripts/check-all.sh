#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make check-all` (what CI runs) and `make check-full` (check-all plus
# what does not fit CI's time budget: the 6.1 and 7.3 test kernels,
# per-test coverage, Debian 12's 6.12 and Debian 13's own 6.12 stock
# kernels; run it before resolving an issue).
#
# Each kernel gets what only it can show; the kernel-independent parts
# (static checks, host tests, fuzzing, the VM runner's tests, the labs,
# valgrind, 32-bit) run once, on 6.12. The parts run in two lanes side by
# side: a TCG guest leaves a core idle whenever it waits (sleeps in the
# tests, one-thread guests, boots), and so do the one-threaded host steps
# (fuzzing, lcov), so two lanes finish well before one would (see README,
# docs/measured.md). Kernels a later part needs build in the background.
#
#   scripts/check-all.sh [full]
#
# Prints each part's whole output as it ends, then a table of the parts
# (kernel, what ran, result, seconds), then one line adding them up:
# "N passed, N failed, N skipped". The table also goes to
# build/check-all/matrix.md, from which `make readme-matrix` writes the
# README's kernel matrix. KMODLAB_LANES=1 runs the parts one after another;
# KMODLAB_CHECK_ALL_ONLY="ID ..." runs only those parts.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.." || exit 1
mode=${1:-ci}
out=${KMODLAB_CHECK_ALL_OUT:-build/check-all}
lanes=${KMODLAB_LANES:-2}

# id|kernel|how it is built|what runs|command
parts=(
	"6.12|6.12 (Debian's linux-source-6.12)|test kernel, gcov|host checks, runner, selftests, 32-bit, valgrind, coverage|env KVER=6.12 PROFILE=default $here/check.sh"
	"labs|6.12 (Debian's linux-source-6.12)|test kernel|workshop labs: every step of every lab, the solutions, grade-all|env KVER=6.12 PROFILE=default KMODLAB_CHECK_PARTS=labs KMODLAB_LABS=steps KMODLAB_CHECK_LOGS=build/check-labs $here/check.sh"
	"lab-mistakes|6.12 (Debian's linux-source-6.12)|test kernel|workshop labs: every catalogued mistake loses its step|env KVER=6.12 PROFILE=default KMODLAB_CHECK_PARTS=labs KMODLAB_LABS=mistakes KMODLAB_CHECK_LOGS=build/check-lab-mistakes $here/check.sh"
	"debug|6.12 debug (KASAN, lockdep, kmemleak, UBSAN)|test kernel|selftests, any splat fails|env KVER=6.12 PROFILE=debug KMODLAB_CHECK_PARTS=guest KMODLAB_VM_TIMEOUT=4800 $here/check.sh"
	"stock-6.1|Debian 12 cloud 6.1|modules against its headers|build (W=1 -Werror), make install|env STOCK=6.1 KMODLAB_STOCK_GUESTS=0 $here/stock.sh"
	"stock-deb13-bpo|Debian 13 backports cloud 7.x|stock image, DKMS in a Debian 13 chroot|selftests, packages (DKMS)|env STOCK=deb13-bpo $here/stock.sh"
)
full_parts=(
	"6.1|6.1 (Debian's linux-source-6.1)|test kernel, gcov|selftests, coverage, labs|env KVER=6.1 PROFILE=default KMODLAB_CHECK_PARTS=guest,coverage,labs $here/check.sh"
	"7.3-per-test|7.3 (Debian 13 backports' linux-source-7.3)|test kernel, gcov|selftests, coverage captured per test|env KVER=7.3 PROFILE=default COVERAGE=per-test KMODLAB_CHECK_PARTS=guest,coverage $here/check.sh"
	"stock-6.1-guests|Debian 12 cloud 6.1|stock image, modules against its headers|selftests, packages (DKMS)|env STOCK=6.1 $here/stock.sh"
	"stock-6.12|Debian 12 cloud 6.12|stock image, modules against its headers|selftests, packages (DKMS)|env STOCK=6.12 $here/stock.sh"
	"7.3|7.3 (Debian 13 backports' linux-source-7.3)|test kernel, gcov|selftests, coverage|env KVER=7.3 PROFILE=default KMODLAB_CHECK_PARTS=guest,coverage $here/check.sh"
	"stock-deb13|Debian 13 cloud 6.12|stock image, DKMS in a Debian 13 chroot|selftests, packages (DKMS)|env STOCK=deb13 $here/stock.sh"
	"workshop|6.12 (Debian's linux-source-6.12)|test kernels, carried in a workshop bundle|a fresh Debian 12 seat set up offline from make workshop-bundle; lab hello made, built and graded there|env KVER=6.12 $here/workshop.sh check"
)
# The parts, in the order the lanes take them: each lane, when free,
# takes the next part not yet taken, so the lanes stay busy however long
# a part turns out to be. CI builds two kernels, 6.12 and its debug
# profile, and boots two stock ones: Debian 12's 6.1 and the newest of
# Debian 13's backports (7.3 today), which is both "a Debian 13 kernel"
# and "7.x", with the modules built the way a Debian 13 user builds them.
# The 7.3 test kernel (gcov coverage on 7.x) and Debian 13's own 6.12
# are in check-full: a third kernel build does not fit the cold budget,
# and 6.12 is the series CI tests most already. For Debian 12's 6.1, the
# oldest series, CI builds the modules against its headers (the first
# thing that breaks on an old kernel) and check-full boots it: its
# guests (about 11 minutes) do not fit CI's 45 (docs/measured.md). The
# order balances a warm run, where every kernel is cached (each part's
# seconds are in the table every run prints, measured: debug about 1450,
# Debian 13 1130, 6.12 950, lab steps 700, lab mistakes 500, the 6.1
# build 100): debug and Debian 13 start at once, Debian 13's lane, free
# first, takes the lab steps, debug's the 6.12 part, and the lab mistakes
# and the 6.1 build go to the first lane free after that.
# With an empty cache both test kernels build at once, the debug one by
# its part and the default one in the background, beside the Debian 13
# guest, which needs neither.
queue=(debug stock-deb13-bpo labs 6.12 lab-mistakes stock-6.1)
# Kernels built in the background for a later part. Not niced: with an
# empty cache the debug kernel is the critical path (niced beside two
# lanes of guests it was still compiling after 52 min); a part that
# reaches its kernel first builds it itself (kernel.sh's lock).
bg_kernels=("6.12 default" "6.12 debug")
case $mode in
ci) ;;
full)	parts+=("${full_parts[@]}")
	queue+=(7.3 stock-deb13 6.1 stock-6.12 stock-6.1-guests 7.3-per-test workshop)
	bg_kernels+=("7.3 default" "6.1 default") ;;
*)	echo "usage: $0 [full]" >&2; exit 2 ;;
esac
((lanes >= 1)) || lanes=1
# KMODLAB_CHECK_ALL_ONLY="ID ...": only those parts of the mode's queue,
# in its order (check-full's own parts after a check-all that passed)
all_queue=("${queue[@]}")
if [[ -n ${KMODLAB_CHECK_ALL_ONLY:-} ]]; then
	only=()
	for id in ${KMODLAB_CHECK_ALL_ONLY}; do
		[[ " ${queue[*]} " == *" $id "* ]] ||
			{ echo "check-all: no part '$id' in the $mode queue: ${queue[*]}" >&2; exit 2; }
	done
	for id in "${queue[@]}"; do
		[[ " ${KMODLAB_CHECK_ALL_ONLY} " == *" $id "* ]] && only+=("$id")
	done
	queue=("${only[@]}")
fi

declare -A kernel how what cmd
for p in "${parts[@]}"; do
	IFS='|' read -r id k h w c <<< "$p"
	kernel[$id]=$k how[$id]=$h what[$id]=$w cmd[$id]=$c
done

# KMODLAB_CHECK_ALL_PLAN=1: print the plan and stop (the host tests read it)
if [[ ${KMODLAB_CHECK_ALL_PLAN:-} == 1 ]]; then
	echo "lanes: $lanes"
	echo "queue: ${queue[*]}"
	for p in "${parts[@]}"; do
		[[ " ${all_queue[*]} " == *" ${p%%|*} "* ]] ||
			{ echo "check-all: part '${p%%|*}' is in no queue" >&2; exit 1; }
	done
	for id in "${queue[@]}"; do
		[[ -n ${cmd[$id]:-} ]] || { echo "check-all: no part '$id'" >&2; exit 1; }
		echo "part: $id|${kernel[$id]}|${cmd[$id]}"
	done
	exit 0
fi

# KMODLAB_CHECK_ALL_FAKE (the host tests): nothing is installed or built,
# and each part is a stub: with 1, one that notes it ran and passes one
# test; else the program it names, run as "PROGRAM ID OUTDIR". What is
# tested is the lanes sharing out the queue, the table and the exit code.
fake=${KMODLAB_CHECK_ALL_FAKE:-}
if [[ -n $fake ]]; then
	for id in "${queue[@]}"; do
		if [[ $fake == 1 ]]; then
			cmd[$id]="echo $id >> '$out/ran'; sleep 0.\$((RANDOM % 4)); echo '1 passed, 0 failed, 0 skipped'"
		else
			cmd[$id]="'$fake' $id '$out'"
		fi
	done
	bg_kernels=()
fi
rm -rf "$out"
mkdir -p "$out"
t_all=$SECONDS
# Interrupted (Ctrl-C, or CI's time limit): take down what this script
# started, the lanes' guests and builds too, rather than leave them
# running: by parent, not by process group (vm-run's timeout puts QEMU in
# a group of its own, and ours may be the caller's).
# shellcheck disable=SC2317 # (called from the trap)
kill_tree() {	# stopped first, so that a lane cannot start its next part
	local c
	kill -STOP "$1" 2> /dev/null
	for c in $(pgrep -P "$1"); do kill_tree "$c"; done
	kill -TERM "$1" 2> /dev/null
	kill -CONT "$1" 2> /dev/null
}
trap 'trap - INT TERM; for c in $(pgrep -P $$); do kill_tree "$c"; done; exit 130' INT TERM
# Packages and the 6.12 tree first, alone: both lanes need them, and two
# apt-gets at once would only wait for each other.
if [[ -z $fake ]]; then
"$here/deps.sh" host kernel vm check trace bpf stock deb pkg=debootstrap >&2 || exit 1
if [[ $mode == full ]]; then
	for kv in 7.3 6.1; do KVER=$kv "$here/deps.sh" kernel >&2 || exit 1; done
fi
# What does not depend on the kernel is built once, before the lanes, so
# two lanes never write the same file (a part's own make finds it done).
KVER=6.12 "$here/kernel.sh" unpack
make -s userspace selftests selftests32 hosttests fuzz > "$out/prebuild.log" 2>&1 ||
	echo "check-all: the kernel-independent build failed; the parts say why" >&2
fi
(
	for kv in "${bg_kernels[@]}"; do
		KVER=${kv% *} PROFILE=${kv#* } "$here/kernel.sh" build
	done
) > "$out/kernels.log" 2>&1 &
bg=$!

# Runs one part: its output to $out/ID.log, printed whole when it ends
# (under a lock, so two lanes never interleave), its counts to $out/ID.res.
run_part() {
	local id=$1 t0=$SECONDS rc line p=0 f=0 s=0
	bash -c "${cmd[$id]}" > "$out/$id.log" 2>&1 < /dev/null
	rc=$?
	line=$(tail -n 1 "$out/$id.log")
	if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
		p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} s=${BASH_REMATCH[3]}
		((rc == 0 || f > 0)) || f=1
	else
		f=1
		echo "FAIL: $id ended without a summary line" >> "$out/$id.log"
	fi
	echo "$p $f $s $((SECONDS - t0))" > "$out/$id.res"
	(
		flock 9
		echo "##### ${kernel[$id]}: ${what[$id]} ($((SECONDS - t0)) s)"
		cat "$out/$id.log"
	) 9> "$out/.print.lock"
}
# A lane: takes the queue's next part (its index in $out/next, under a
# lock) until none is left.
echo 0 > "$out/next"
run_lane() {
	local i
	while :; do
		i=$( (
			flock 9
			read -r i < "$out/next"
			echo $((i + 1)) > "$out/next"
			echo "$i"
		) 9> "$out/.next.lock")
		((i < ${#queue[@]})) || return 0
		run_part "${queue[i]}"
	done
}

# All in the background: a trap runs during `wait`, not until a part in
# the foreground would have ended.
lane_pids=()
for ((l = 0; l < lanes; l++)); do
	run_lane &
	lane_pids+=($!)
done
wait "${lane_pids[@]}"
wait "$bg"

pass=0 fail=0 skip=0
{
	echo "| kernel | built as | what ran | result | seconds |"
	echo "|---|---|---|---|---|"
	for id in "${queue[@]}"; do
		read -r p f s secs < "$out/$id.res" 2>/dev/null || { p=0 f=1 s=0 secs=0; }
		pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
		echo "| ${kernel[$id]} | ${how[$id]} | ${what[$id]} | $p passed, $f failed, $s skipped | $secs |"
	done
} > "$out/matrix.md"
{
	echo
	echo "make check-$([[ $mode == full ]] && echo full || echo all), $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo none): $((SECONDS - t_all)) s in all, $lanes lanes"
} >> "$out/matrix.md"
echo
echo "##### parts (kernels built in the background: $out/kernels.log)"
cat "$out/matrix.md"
echo
echo "$pass passed, $fail failed, $skip skipped"
exit $((fail ? 1 : 0))
