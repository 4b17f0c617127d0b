#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make check`: every kmodlab test, on the host and in the test guest.
#
# Installs what it needs (as root), builds the test kernel if the cache
# lacks it, builds everything, then runs: static checks, host unit tests,
# the fuzz targets, the VM runner's own tests, the selftests in the guest,
# and the coverage report. The last line is "N passed, N failed, N skipped".
#
# KMODLAB_CHECK_PARTS picks parts, comma-separated (default: all), so `make
# check-all` runs what does not depend on the kernel only once:
#   host      static checks, host unit tests, fuzzing, the client on a fixture
#   runner    the VM runner's own tests
#   guest     the selftests in the guest (64-bit)
#   compat32  the same selftests built with -m32, through IA32 emulation
#   valgrind  every client under valgrind in the guest
#   coverage  the gcov report of the guest runs (needs guest)
#   labs      every step of every workshop lab is real (scripts/lab.py check;
#             not by default: `make lab-check`, and make check-all's own part)
# PROFILE=kcsan runs only the guest part unless told otherwise.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"
export KVER=${KVER:-6.12} PROFILE=${PROFILE:-default}
build=$repo/build
# Results of another kernel or profile than 6.12's default get names of
# their own, so `make check-all` can run two kernels side by side.
sfx=
[[ $KVER-$PROFILE == 6.12-default ]] || sfx=-$KVER-$PROFILE
# (check-full runs 7.3 twice at once, once with per-test coverage)
[[ ${COVERAGE:-} == per-test ]] && sfx+=-per-test
logs=${KMODLAB_CHECK_LOGS:-$build/check$sfx}
[[ $logs == /* ]] || logs=$repo/$logs
fuzz_secs=${KMODLAB_FUZZ_SECS:-20}
cov_min=90		# lines and branches, every module
# COVERAGE=per-test: the guest captures the counters after each test
# rather than after each program (more guest and report time; make
# check-full runs it on 7.3)
coverage_mode=${COVERAGE:-per-program}
case $coverage_mode in
per-program|per-test) ;;
*) echo "check.sh: COVERAGE=$coverage_mode: per-program (default) or per-test" >&2; exit 2 ;;
esac
pass=0 fail=0 skip=0
failed=()
t_start=$SECONDS
# The labs' check is a part of its own in make check-all (and `make
# lab-check`): the workshop's checks grow with its catalogue of wrong
# answers, and make check stays the everyday command (README, "Targets").
parts=${KMODLAB_CHECK_PARTS:-host,runner,guest,compat32,valgrind,coverage}
# The KCSAN kernel has no gcov (see kconfig/kcsan.config): its point is
# the selftests' races.
[[ $PROFILE == kcsan && -z ${KMODLAB_CHECK_PARTS:-} ]] && parts=guest
parts=" ${parts//,/ } "
want() { [[ $parts == *" $1 "* ]]; }

ok()   { pass=$((pass + 1)); echo "PASS: $*"; }
bad()  { fail=$((fail + 1)); failed+=("$*"); echo "FAIL: $*"; }
section() { echo; echo "=== $* ($((SECONDS - t_start)) s)"; }

summary() {
	echo
	if ((fail)); then
		echo "failed:"
		printf '  %s\n' "${failed[@]}"
	fi
	echo "make check took $((SECONDS - t_start)) s"
	echo "$pass passed, $fail failed, $skip skipped"
	exit $((fail ? 1 : 0))
}

# Adds up the TAP results kselftest_harness.h printed into file $1.
count_tap() {
	local p f s
	p=$(grep -cE '^ok [0-9]+ ' "$1" | head -1)
	s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$1" | head -1)
	f=$(grep -cE '^not ok [0-9]+ ' "$1" | head -1)
	pass=$((pass + p - s)) skip=$((skip + s)) fail=$((fail + f))
	while IFS= read -r line; do failed+=("$2: ${line#not ok }"); done \
		< <(grep -E '^not ok [0-9]+ ' "$1")
	echo "$2: $((p - s)) passed, $f failed, $s skipped"
	((p + f > 0))
}

section "dependencies"
# (debootstrap: as root, the Debian 13 system the perf of KVER runs from; see below)
deps=(host kernel vm check trace bpf)
((EUID)) || deps+=(pkg=debootstrap)
"$here/deps.sh" "${deps[@]}" || { bad "install dependencies"; summary; }
echo "parts: $parts"

rm -rf "$logs"
mkdir -p "$logs"

section "test kernel $KVER ($PROFILE)"
if ! "$here/kernel.sh" build; then
	bad "build test kernel"
	summary
fi

section "build"
targets=(modules userspace selftests)
# labs/bpf's programs: the default profile's kernel has BTF for them
[[ ${PROFILE:-default} == default ]] && targets+=(bpf)
want host && targets+=(hosttests fuzz)
want compat32 && targets+=(selftests32)
# Under a lock: make check-all's lanes may run two parts of one kernel
# (6.12 and its labs) at once, and two makes in one build/kmod directory
# would write the same objects.
mkdir -p "$build"
if flock "$build/.build-$KVER-$PROFILE.lock" \
	make -s -j"$(nproc)" "${targets[@]}" > "$logs/build.log" 2>&1; then
	ok "build: ${targets[*]} (modules W=1 -Werror)"
else
	tail -40 "$logs/build.log"
	bad "build"
	summary
fi
kbuild=$build/kmod/$KVER-$PROFILE

# perf.data is read in the guest by the perf Debian ships for this kernel's
# series (scripts/perf-for.sh: the host's for 6.1, else Debian 13's, from a
# layer in the cache built here once), and the converter's host test runs
# against it too. Building that layer needs root: as anyone else without
# it, the guest test reads with the host's perf and says so in its log.
if want host || want guest || want compat32; then
	section "perf of $KVER"
	if KMODLAB_PERF=$("$here/perf-for.sh" "$KVER" 2> "$logs/perf-for.log"); then
		export KMODLAB_PERF
		ok "perf of $KVER for perf.data: $KMODLAB_PERF ($("$KMODLAB_PERF" --version 2>&1))"
	elif ((EUID)); then
		unset KMODLAB_PERF
		echo "no perf of $KVER (as root, Debian 13's would be built): the guest tests read with the host's"
	else
		unset KMODLAB_PERF
		bad "perf of $KVER: $(tail -n 1 "$logs/perf-for.log")"
	fi
fi
# Style checks use the newest tree's checkpatch, whatever KVER is.
ksrc=$(KVER=6.12 "$here/kernel.sh" src)

if want host; then
section "static checks"
KMODLAB_LINT_LOGS=$logs "$here/lint.sh" > "$logs/lint.log" 2>&1
grep -v -E '^(PASS|FAIL): ' "$logs/lint.log"
while IFS= read -r line; do
	case $line in
	"PASS: "*) ok "${line#PASS: }" ;;
	"FAIL: "*) bad "${line#FAIL: }" ;;
	esac
done < "$logs/lint.log"

section "host unit tests"
# A host whose kernel cannot run 32-bit programs (no IA32 emulation: some
# CI machines) runs the -m32 host tests in a guest instead, where the test
# kernel has it. They are counted all the same.
m32_guest=()
printf 'int main(void) { return 0; }\n' | gcc -m32 -x c -o "$logs/m32-probe" - 2>/dev/null &&
	! "$logs/m32-probe" 2>/dev/null && m32_guest=("$build"/host/test_*-m32)
for t in "$build"/host/test_*; do
	[[ " ${m32_guest[*]} " == *" $t "* ]] && continue
	"$t" > "$logs/${t##*/}.tap" 2>&1
	rc=$?
	cat "$logs/${t##*/}.tap"
	count_tap "$logs/${t##*/}.tap" "${t##*/}" || bad "${t##*/} printed no results"
	((rc == 0)) || grep -q '^not ok' "$logs/${t##*/}.tap" || bad "${t##*/} exited $rc"
done
# and perf.data read by the perf of KVER, when it is not the host's
if [[ -n ${KMODLAB_PERF:-} && $KMODLAB_PERF != "$(command -v perf)" ]]; then
	t=$build/host/test_kml_perf_data
	PERF=$KMODLAB_PERF "$t" > "$logs/test_kml_perf_data-$KVER.tap" 2>&1
	rc=$?
	cat "$logs/test_kml_perf_data-$KVER.tap"
	count_tap "$logs/test_kml_perf_data-$KVER.tap" "test_kml_perf_data (perf of $KVER)" ||
		bad "test_kml_perf_data (perf of $KVER) printed no results"
	((rc == 0)) || grep -q '^not ok' "$logs/test_kml_perf_data-$KVER.tap" ||
		bad "test_kml_perf_data (perf of $KVER) exited $rc"
fi
if ((${#m32_guest[@]})); then
	echo "this host cannot run 32-bit programs: ${m32_guest[*]##*/} run in a guest"
	"$here/vm-run.sh" --no-gcov --timeout 600 --out "$build/vm/hosttests-m32$sfx" -- \
		scripts/guest/hosttests.sh "${m32_guest[@]}" > "$logs/hosttests-m32.log" 2>&1
	rc=$?
	for t in "${m32_guest[@]}"; do
		name=${t##*/} r=$build/vm/hosttests-m32$sfx/hosttests/${t##*/}
		if [[ -s $r.tap ]]; then
			cat "$r.tap"
			count_tap "$r.tap" "$name (in the guest)" || bad "$name printed no results in the guest"
		else
			bad "$name printed nothing in the guest"
		fi
		st=$(cat "$r.status" 2>/dev/null)
		[[ $st == 0 ]] || grep -q '^not ok' "$r.tap" || bad "$name exited ${st:-?} in the guest"
	done
	((rc == 0)) || grep -q '^not ok' "$build/vm/hosttests-m32$sfx"/hosttests/*.tap 2>/dev/null ||
		{ tail -20 "$logs/hosttests-m32.log"; bad "the -m32 host tests' guest: vm-run exited $rc"; }
fi
# Host tests written as scripts: each prints TAP, counted like the C ones.
# A script that dies half-way must not pass: its status and its plan
# ("1..N") are checked too.
tap_script() { # $1 = interpreter, $2 = script under selftests/host/
	local name=${2##*/} rc plan n
	"$1" "selftests/host/$2" > "$logs/$name.tap" 2>&1
	rc=$?
	cat "$logs/$name.tap"
	count_tap "$logs/$name.tap" "$name" || bad "$name printed no results"
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$logs/$name.tap" | tail -1)
	n=$(grep -cE '^(not )?ok [0-9]+' "$logs/$name.tap")
	[[ -n $plan && $plan == "$n" ]] || bad "$name: ran $n tests of its plan (${plan:-none})"
	((rc == 0)) || grep -q '^not ok' "$logs/$name.tap" || bad "$name exited $rc"
}
tap_script python3 test_lab.py		# scripts/lab.py's markers and skeleton cutter
# The fragment users merge for coverage on their own kernel asks only for
# what our own test kernel has: what we measure there, they can measure.
extra=$(grep '^CONFIG_' scripts/kconfig/coverage.config | grep -vxFf scripts/kconfig/kmodlab.config)
[[ -z $extra ]] && ok "kconfig/coverage.config is a subset of the test kernel's kmodlab.config" ||
	bad "kconfig/coverage.config asks for what the test kernel lacks: $extra"
tap_script python3 test_lcovtool.py	# the coverage report's tool
tap_script bash test_kver_tooling.sh	# what the test tooling does differently by kernel version
tap_script bash test_stock_pick.sh	# which Debian cloud kernel make check-stock boots
tap_script bash test_perf_for.sh	# which perf reads perf.data in the guest of each kernel
tap_script bash test_check_all.sh	# make check-all's plan and make readme-matrix
tap_script bash test_completion.sh	# the clients' bash completion
tap_script bash test_make_help.sh	# make help names every target
tap_script bash test_ksrc.sh	# the selftests take kselftest_harness.h from KDIR= or KSRC=
tap_script bash test_man_abi.sh	# kmodlab(4)'s ABI versions and ioctl numbers
tap_script bash test_doc_errno.sh	# the error names the documents give are the uapi headers'
tap_script bash test_doc_numbers.sh	# the numbers the documents quote are docs/measured.md's
tap_script bash test_gcov_collect.sh	# kml-gcov-collect's command line
tap_script bash test_uninstall.sh	# make uninstall-userspace undoes install-userspace
# The client against a fixture: no module needed, leaks checked.
fx=$logs/fixture
mkdir -p "$fx"
cp selftests/fuzz/corpus/kml_stats/stats_small "$fx/stats"
if KMODLAB_PROC_DIR=$fx valgrind -q --leak-check=full --errors-for-leak-kinds=all \
	--error-exitcode=9 "$build/bin/kml-stats" -j -w 0.05 -c 3 > "$logs/client.out" 2>&1 &&
   grep -q '"sum":28' "$logs/client.out"; then
	ok "kml-stats on a fixture, clean under valgrind"
else
	cat "$logs/client.out"
	bad "kml-stats on a fixture, clean under valgrind"
fi
out=$(KMODLAB_PROC_DIR=/nonexistent "$build/bin/kml-stats" 2>&1)
if (($? == 1)) && [[ $out == *"kml_stats is not loaded"* ]] && ((${#out} < 200)); then
	ok "kml-stats without the module: one-line error, exit 1"
else
	bad "kml-stats without the module: one-line error, exit 1 (got: $out)"
fi

# The fuzzers run for a fixed time each, one at a time on one core, in the
# background while the guests run: their verdict does not depend on how
# many runs they get, and the guests' TCG rarely keeps both cores busy.
# Their results are counted at the end (fuzz_results).
echo "fuzzing: ${fuzz_secs}s per target, in the background"
(
	for f in "$build"/fuzz/fuzz_*; do
		name=${f##*/}
		corpus=$build/fuzz/corpus-${name#fuzz_}
		mkdir -p "$corpus"
		"$f" -max_total_time="$fuzz_secs" -print_final_stats=1 \
			"$corpus" "selftests/fuzz/corpus/${name#fuzz_}" > "$logs/$name.log" 2>&1
		echo "$name $?" >> "$logs/fuzz.status"
	done
) &
fuzz_pid=$!

fi # host

part_runner() {
section "VM runner self-tests"
# A runner that cannot fail proves nothing: show it fails when it must.
# The status is the guest's CPU count plus one, and 9 on the jiffies
# clock: the guest must have both CPUs, and a clock that times what the
# tests time (without ACPI, TCG's TSC cannot be calibrated: 4 ms steps).
"$here/vm-run.sh" --timeout 120 --out "$build/vm/selftest-status" -- bash -c \
	'[[ $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) == *jiffies* ]] && exit 9; exit $(($(nproc) + 1))' \
	> "$logs/vm-status.log" 2>&1
rc=$?
((rc == 3)) && ok "vm-run returns the guest command's status (3: its 2 CPUs, plus one; not on the jiffies clock)" ||
	{ tail -20 "$logs/vm-status.log"; bad "vm-run returns the guest command's status, from a guest of 2 CPUs with a real clock (got $rc, want 3; 9: jiffies)"; }
"$here/vm-run.sh" --timeout 120 --out "$build/vm/selftest-warn" -- \
	insmod "$kbuild/modules/tests/kml_harness_warn.ko" > "$logs/vm-warn.log" 2>&1
rc=$?
((rc == 125)) && ok "vm-run fails a run whose kernel log has a WARNING (125)" ||
	{ tail -20 "$logs/vm-warn.log"; bad "vm-run fails on a kernel WARNING (got $rc, want 125)"; }
"$here/vm-run.sh" --timeout 25 --out "$build/vm/selftest-hang" -- sleep 600 \
	> "$logs/vm-hang.log" 2>&1
rc=$?
((rc == 124)) && ok "vm-run fails a guest that does not power off (124)" ||
	{ tail -20 "$logs/vm-hang.log"; bad "vm-run fails a hung guest (got $rc, want 124)"; }

# A guest whose console falls silent (a lab mistake that locks the kernel
# up) ends once it has been silent for --quiet-timeout, not at --timeout;
# with --quiet-match only matching lines count, not the noise a stuck
# kernel still makes (RCU stall reports). What it printed is kept.
"$here/vm-run.sh" --timeout 900 --quiet-timeout 30 --quiet-match '^tick' \
	--out "$build/vm/selftest-quiet" -- \
	bash -c 'echo tick-start; while :; do echo noise; sleep 5; done' > "$logs/vm-quiet.log" 2>&1
rc=$?
((rc == 124)) && grep -q "printed nothing matching '^tick' for 30s" "$logs/vm-quiet.log" &&
	grep -q "^tick-start" "$build/vm/selftest-quiet/console.log" &&
	[[ $(grep -c "^noise" "$build/vm/selftest-quiet/console.log") -ge 3 ]] &&
	ok "vm-run ends a guest with no line matching --quiet-match for --quiet-timeout (124), keeps its console, and says so" ||
	{ tail -20 "$logs/vm-quiet.log"; bad "vm-run ends a guest silent but for noise at --quiet-timeout (got $rc, want 124, the note and the console)"; }
"$here/vm-run.sh" --quiet-timeout 0 -- true > "$logs/vm-quiet0.log" 2>&1
rc=$?
((rc == 2)) && grep -q "takes a number of seconds" "$logs/vm-quiet0.log" &&
	ok "vm-run refuses --quiet-timeout 0 (2)" ||
	bad "vm-run refuses --quiet-timeout 0 (got $rc, want 2)"
# --gdb: a path QEMU cannot bind, or one that is not a socket, is
# refused before any guest starts, and nothing is deleted
"$here/vm-run.sh" --gdb-wait -- true > "$logs/vm-gdb1.log" 2>&1
rc=$?
((rc == 2)) && grep -q "needs --gdb SOCKET" "$logs/vm-gdb1.log" &&
	ok "vm-run refuses --gdb-wait without --gdb (2)" ||
	bad "vm-run refuses --gdb-wait without --gdb (got $rc, want 2)"
echo keep > "$build/vm-gdb-not-a-socket"
"$here/vm-run.sh" --gdb "$build/vm-gdb-not-a-socket" -- true > "$logs/vm-gdb2.log" 2>&1
rc=$?
((rc == 2)) && grep -q "is not a socket" "$logs/vm-gdb2.log" &&
	[[ $(<"$build/vm-gdb-not-a-socket") == keep ]] &&
	ok "vm-run refuses --gdb on a file that is not a socket, and leaves it (2)" ||
	bad "vm-run --gdb on a plain file (got $rc, want 2 and the file kept)"
"$here/vm-run.sh" --gdb "/$(printf 'x%.0s' {1..120})/gdb.sock" -- true > "$logs/vm-gdb3.log" 2>&1
rc=$?
((rc == 2)) && grep -q "under 108 bytes" "$logs/vm-gdb3.log" &&
	ok "vm-run refuses a --gdb socket path too long for a unix socket (2)" ||
	bad "vm-run --gdb with a 130-byte path (got $rc, want 2)"

# A guest whose SysRq power-off never happens (a broken module can leave
# the workqueue it runs on spinning; here the trigger is /dev/null) still
# ends with its status, not at the time-out.
"$here/vm-run.sh" --no-gcov --timeout 100 --out "$build/vm/selftest-nopoweroff" -- \
	bash -c 'mount --bind /dev/null /proc/sysrq-trigger && exit 4' \
	> "$logs/vm-nopoweroff.log" 2>&1
rc=$?
((rc == 4)) && grep -q "SysRq power-off never ran" "$logs/vm-nopoweroff.log" &&
	ok "a guest whose SysRq power-off is stuck still ends, with its status (4), and vm-run says so" ||
	{ tail -20 "$logs/vm-nopoweroff.log"; bad "a guest with a stuck SysRq power-off ends with its status (got $rc, want 4; 124: it sat out the time-out)"; }

# Mistakes in the fast loop's commands fail at once, with a hint.
t0=$SECONDS
out=$(make -s check kml_sensor 2>&1)
if (($? != 0)) && ((SECONDS - t0 < 10)) && [[ $out == *"make test T=kml_sensor"* ]]; then
	ok "make check kml_sensor fails at once, pointing at make test T=kml_sensor"
else
	bad "make check kml_sensor fails at once with a hint (got: ${out:0:300})"
fi
out=$(make -s test T=kml_nosuch 2>&1)
if (($? != 0)) && [[ $out == *"no module 'kml_nosuch'"*"modules: kml_stats"* ]]; then
	ok "make test T=<unknown module> fails at once, listing the modules"
else
	bad "make test T=<unknown module> fails with the list (got: ${out:0:300})"
fi
# make test sends kml_probe's text-patching tests (fixture probe_text) to
# a one-thread guest only, however they are named.
plan() { KMODLAB_TEST_PLAN=1 T="$1" "$here/test.sh" 2>&1 | grep -E '^(multi|tcg-single): '; }
p1=$(plan kml_probe) p2=$(plan "probe:-r probe_text.get_while_probing_its_own_path")
p3=$(plan "kml_probe:-r probe.errors") p4=$(plan "probe:-t get_while_probing_its_own_path")
if [[ $p1 == $'multi: kml_probe_test:-F probe_text\ntcg-single: kml_probe_test:-f probe_text' &&
      $p2 == "tcg-single: kml_probe_test:-r probe_text.get_while_probing_its_own_path" &&
      $p3 == "multi: kml_probe_test:-r probe.errors -F probe_text" &&
      $p4 == "tcg-single: kml_probe_test:-t get_while_probing_its_own_path" ]]; then
	ok "make test T=kml_probe[:args] runs probe_text tests only in a one-thread guest"
else
	bad "make test probe_text routing (got: $p1 | $p2 | $p3 | $p4)"
fi
# A module that does not build stops make test before any guest (it
# used to go on and test the old .ko): a make whose "modules" fails.
fake=$(mktemp -d)
printf '#!/bin/bash\n[[ " $* " == *" modules "* ]] && { echo "error: broken"; exit 2; }\nexec /usr/bin/make "$@"\n' > "$fake/make"
chmod +x "$fake/make"
out=$(PATH=$fake:$PATH KMODLAB_TEST_PLAN=1 T=sensor "$here/test.sh" 2>&1)
rc=$?
rm -rf "$fake"
if ((rc != 0)) && [[ $out == *"module build failed"* && $out != *"multi:"* ]]; then
	ok "make test stops when the module build fails"
else
	bad "make test stops when the module build fails (rc $rc: ${out: -200})"
fi
p5=$(plan "ring:-f ring")
[[ $p5 == "multi: kml_ring_test:-f ring" ]] &&
	ok "make test: a fixture named like a module is an option's value (T='ring:-f ring')" ||
	bad "make test T='ring:-f ring' (got: $p5)"

# Piped input to make vm runs as a script: no word is lost to the
# serial port opening late.
out=$(printf 'echo first-word-kept $KVER\ntype -P kml-stats >/dev/null && echo clients-on-path\nexit 7\n' |
	"$here/vm-run.sh" --interactive --no-gcov \
	--out "$build/vm/selftest-piped" --timeout 120 2>&1)
rc=$?
if ((rc == 7)) && [[ $out == *"first-word-kept $KVER"* && $out == *clients-on-path* ]]; then
	ok "piped make vm input runs whole, with KVER and the clients' PATH set, and returns its status"
else
	bad "piped make vm input (rc $rc, want 7: $(grep -v '^\[' <<< "$out" | tail -3))"
fi

# Coverage on one's own kernel (README): only the collector, no harness
# capture (--no-gcov), then the report from its archive. Counters of a
# module unloaded before the run must not reach it (the reset forgets them).
own=$build/vm/own-kernel
"$here/vm-run.sh" --no-gcov --out "$own" --timeout 600 -- bash -c '
	insmod "$KMODLAB_KO_DIR/modules/kml_hello/kml_hello.ko" && rmmod kml_hello &&
	scripts/kml-gcov-collect run /mnt/before.tar.gz -- true &&
	scripts/kml-gcov-collect run /mnt/own.tar.gz -- scripts/guest/selftests.sh kml_hello_test' \
	> "$logs/own-kernel.log" 2>&1
rc=$?
n=$(tar -tzf "$own/before.tar.gz" 2>/dev/null | grep -c '\.gcda$')
if ((rc == 0)) && [[ -s $own/before.tar.gz && $n == 0 ]]; then
	ok "kml-gcov-collect run starts from zero: an unloaded module's counters are gone"
else
	bad "kml-gcov-collect reset (guest rc $rc, $n counter files before the run; see $logs/own-kernel.log)"
fi
out=$("$here/coverage.sh" --out "$build/coverage-own" "$own/own.tar.gz" 2>&1)
rc=$?
if ((rc == 0)) && grep -Eq '^kml_hello +[0-9]+/[0-9]+ +[0-9.]+% +[0-9]+/[0-9]+ ' <<< "$out" &&
   grep -Eq '^kml_ring +no data' <<< "$out"; then
	ok "make coverage FROM=<archive of kml-gcov-collect run>: the table of what ran"
else
	bad "coverage from a kml-gcov-collect archive (rc $rc: ${out: -300})"
fi
fake=$(mktemp -d)
printf '#!/bin/sh\necho "x.gcno:version '"'"'B21*'"'"', prefer '"'"'B33*'"'"'" >&2\nexit 1\n' > "$fake/gcov"
chmod +x "$fake/gcov"
out=$(GCOV=$fake/gcov "$here/coverage.sh" --out "$fake/out" "$own/own.tar.gz" 2>&1)
rc=$?
((rc == 2)) && [[ $out == *"cannot read these counters"*"GCOV=gcov-"* ]] &&
	ok "coverage with another gcc's gcov: one clear message naming the fix" ||
	bad "coverage with a mismatched gcov (rc $rc: ${out: -300})"
printf '#!/bin/sh\necho "x.gcda:stamp mismatch with notes file" >&2\nexit 1\n' > "$fake/gcov"
out=$(GCOV=$fake/gcov "$here/coverage.sh" --out "$fake/out" "$own/own.tar.gz" 2>&1)
rc=$?
((rc == 2)) && [[ $out == *"rebuilt after these counters"* ]] &&
	ok "coverage of counters older than the modules' rebuild: refused, not silently dropped" ||
	bad "coverage after a rebuild (rc $rc: ${out: -300})"
# A directory of captures is read, never written; OUT= never deletes a
# directory that is not a report; a checkout reached through a symlink
# reports the same.
mkdir -p "$fake/in" "$fake/mine"
tar -C "$fake/in" -xzf "$own/own.tar.gz"
chmod -R a-w "$fake/in"
before=$(cd "$fake/in" && find . | sort | md5sum)
echo keep > "$fake/mine/notes.txt"
ln -s "$repo" "$fake/link"
out=$("$fake/link/scripts/coverage.sh" --out "$fake/out2" "$fake/in" 2>&1)
rc=$?
if ((rc == 0)) && grep -Eq '^kml_hello +[0-9]+/[0-9]+ ' <<< "$out" &&
   [[ $(cd "$fake/in" && find . | sort | md5sum) == "$before" ]]; then
	ok "coverage of a read-only directory of captures, through a symlinked checkout: the input is untouched"
else
	bad "coverage of a directory through a symlink (rc $rc: ${out: -300})"
fi
out=$("$here/coverage.sh" --out "$fake/mine" "$own/own.tar.gz" 2>&1)
rc=$?
((rc == 2)) && [[ $(cat "$fake/mine/notes.txt") == keep ]] &&
	ok "coverage refuses an OUT= directory that is not a report, and deletes nothing" ||
	bad "coverage OUT= over a user's directory (rc $rc: ${out: -300})"
chmod -R u+w "$fake/in"
mkdir -p "$fake/cap/t/nowhere/modules/kml_x"
: > "$fake/cap/t/nowhere/modules/kml_x/x.gcda"
echo name=t > "$fake/cap/t/.kml-capture"
out=$("$here/coverage.sh" --out "$fake/out" "$fake/cap" 2>&1)
rc=$?
rm -rf "$fake"
((rc == 2)) && [[ $out == *"/nowhere/modules/kml_x/x.gcno"*"built elsewhere"* ]] &&
	ok "coverage of counters from another build: refused, naming the missing notes file" ||
	bad "coverage of counters from another build (rc $rc: ${out: -300})"

} # runner

# Some tests patch kernel text (kprobe attach/detach) while the other vCPU
# executes it (kml_probe_test's fixture probe_text). Multi-threaded TCG
# does not honour x86 cross-modifying-code rules (measured: an int3 Oops
# within seconds, never with thread=single), so those tests run in a
# guest of their own with one TCG thread; everything
# else runs with real parallelism.
ptext=probe_text
guest_run() { # $1 = name, rest = vm-run options and selftest specs
	local name=$1 rc tap
	shift
	"$here/vm-run.sh" --timeout "${KMODLAB_VM_TIMEOUT:-1200}" \
		--out "$build/vm/$name$sfx" "$@"
	rc=$?
	tap=$build/vm/$name$sfx/selftests.tap
	if [[ -s $tap ]]; then
		count_tap "$tap" "guest $name" || bad "guest $name printed no results"
	else
		bad "guest $name produced no TAP output"
	fi
	# where the guest's time went (selftests.sh writes times.tsv)
	sort -t$'\t' -k3,3 -rn "$build/vm/$name$sfx/times.tsv" 2>/dev/null | head -5 |
		awk -F'\t' '{ printf "slow: %6.1f s  %s %s\n", $3, $1, $2 }'
	if ((rc == 0)); then
		ok "guest $name: command passed, kernel log clean, powered off"
	else
		bad "guest $name: vm-run exited $rc (see $build/vm/$name$sfx)"
	fi
}

part_guest() {
section "selftests in the guest ($KVER $PROFILE)"
local hello=kml_hello_test
# kml_hello's load with each of the loader's allocations failed in turn:
# 80 s under KASAN, and a test of the kernel's loader more than of
# kml_hello, whose init allocates nothing. The default kernels run it.
local stats=kml_stats_test sensor=kml_sensor_test ring=kml_ring_test
local filter=kml_filter_test probe="kml_probe_test:-F $ptext"
[[ ${PROFILE:-default} == debug ]] && hello="kml_hello_test:-T fault_load"
# The debug kernel checks what the kernel does, in a guest KASAN makes
# 3 to 5 times slower. What it leaves to the default kernels, whose runs
# reach the same module code: the tests of what the clients and the
# tracing tools print, the tracepoint fixtures, and kml_filter's
# forwarding (the hook code every other fixture runs); measured, 130 s,
# 237 s and 136 s of its guest (docs/measured.md).
if [[ ${PROFILE:-default} == debug ]]; then
	stats="kml_stats_test:-F trace -T client_reset_and_errors -T client_table_json_filter"
	sensor="kml_sensor_test:-F trace -T client"
	ring="kml_ring_test:-F trace"
	filter="kml_filter_test:-F trace -F router -T client -T client_32bit"
	probe="kml_probe_test:-F $ptext -F trace"
fi
# labs/bpf's loader and programs, where the kernel has BTF for them
local bpf=()
[[ ${PROFILE:-default} == default ]] && bpf=("kml_bpf_test:-F lat_text")
guest_run selftests -- env KMODLAB_COVERAGE="$coverage_mode" \
	scripts/guest/selftests.sh "$hello" kml_debug_test "$stats" \
	"$sensor" "$ring" "$filter" "$probe" "${bpf[@]}"
}
part_tcgsingle() {
section "text-patching selftests in a one-thread guest ($KVER $PROFILE)"
# and lab bpf's attach while another CPU runs the function (fixture lat_text)
local bpf=()
[[ ${PROFILE:-default} == default ]] && bpf=("kml_bpf_test:-f lat_text")
guest_run selftests-tcg-single --tcg-single --no-gcov -- \
	scripts/guest/selftests.sh "kml_probe_test:-f $ptext" "${bpf[@]}"
}

part_compat32() {
section "32-bit selftests in the guest (IA32 emulation, compat ioctls)"
# The same tests, built with -m32: every ioctl goes through .compat_ioctl
# and every uapi struct must have the 64-bit layout.
# kml_stats has no ioctl: its /proc text reads the same from either. Left
# to the 64-bit run, as no 32-bit caller reaches other code there: the
# tracing fixtures (bpftrace and tracefs are the host's 64-bit tools),
# the allocation-failure walks of module load and namespace creation, and
# kml_filter's forwarding (the rules it reads are the filter fixture's).
guest_run selftests32 --no-gcov -- env KMODLAB_SELFTEST_DIR="$build/selftests32" \
	scripts/guest/selftests.sh "kml_sensor_test:-F trace -F fault" "kml_ring_test:-F trace -T module_load" \
	"kml_filter_test:-F trace -F router -T fault_netns_create -T fault_module_load" \
	"kml_probe_test:-F $ptext -F trace -T module_load"
}

part_valgrind() {
section "clients under valgrind in the guest"
"$here/vm-run.sh" --timeout 900 --no-gcov --out "$build/vm/valgrind$sfx" -- \
	scripts/guest/valgrind.sh
rc=$?
if [[ -s $build/vm/valgrind$sfx/valgrind.tap ]]; then
	count_tap "$build/vm/valgrind$sfx/valgrind.tap" "clients under valgrind" ||
		bad "valgrind run printed no results"
else
	bad "valgrind run produced no TAP output"
fi
((rc == 0)) || grep -q '^not ok' "$build/vm/valgrind$sfx/valgrind.tap" 2>/dev/null ||
	bad "valgrind guest: vm-run exited $rc"
}

part_labs() {
# On the debug kernel, only the mistakes only it can see (a use-after-free
# KASAN reports, a lock lockdep objects to): the rest is the default's.
local only=()
# KMODLAB_LABS=steps or mistakes: one half (make check-all runs each as a
# part of its own, so that its two lanes share them out)
if [[ ${PROFILE:-default} == debug || ${KMODLAB_LABS:-} == mistakes ]]; then
	section "workshop labs: every catalogued mistake ($PROFILE kernel) loses its step"
	only=(--mistakes-only)
elif [[ ${KMODLAB_LABS:-} == steps ]]; then
	section "workshop labs: every step's skeleton builds, loads, fails its step; solutions get full marks"
	only=(--steps-only)
else
	section "workshop labs: every step's skeleton builds, loads, fails its step; every catalogued mistake loses its step; solutions get full marks"
fi
# One guest for every tree of every lab (labs/README.md).
"$here/lab.py" check "${only[@]}" > "$logs/labs.log" 2>&1
rc=$?
grep -v -E '^(PASS|FAIL): ' "$logs/labs.log" | grep -E '^(lab|vm-run)' | tail -20
while IFS= read -r line; do
	case $line in
	"PASS: "*) ok "${line#PASS: }" ;;
	"FAIL: "*) bad "${line#FAIL: }" ;;
	esac
done < "$logs/labs.log"
((rc == 0)) || grep -q '^FAIL: ' "$logs/labs.log" || bad "lab check exited $rc (see $logs/labs.log)"
[[ ${PROFILE:-default} == debug || ${KMODLAB_LABS:-} == mistakes ]] && return
# One student's module that oopses at load must not cost the others
# their grade: make grade-all goes on in a fresh guest.
class=$build/labcheck/class
rm -rf "$class"
"$here/lab.py" gen hello --step 5 --dir "$class/alice/hello" > /dev/null &&
"$here/lab.py" gen hello --step 5 --dir "$class/bob/hello" > /dev/null &&
"$here/lab.py" gen hello --step 4 --dir "$class/carol/hello" > /dev/null &&
sed -i '0,/^static int __init kml_hello_init(void)$/{n;s/^{$/{\n\t*(volatile int *)0 = 1;/}' \
	"$class/alice/hello/modules/kml_hello/kml_hello.c"
# bob hands his tree in as make submit packs it
"$here/lab.py" submit hello --dir "$class/bob/hello" --name bob --out-dir "$class" > /dev/null
"$here/lab.py" grade-many hello --csv "$class/scores.csv" "$class/alice/hello" \
	"$class/bob-hello.tar.gz" "$class/carol/hello" > "$logs/grade-many.log" 2>&1
# bob handed in the generated solution: full marks, and flagged as such;
# carol left step 4 (of 4) undone: her row says which test failed and why
if grep -q '^alice,.*,0,7,broke the kernel: the kernel oopsed' "$class/scores.csv" &&
   ! grep -q '^alice,.*COPIED' "$class/scores.csv" &&
   grep -q "^bob,.*/build/submissions/hello/bob/hello,.*,7,7,COPIED: modules/kml_hello/kml_hello.c is the solution's code" "$class/scores.csv" &&
   grep -qE '^carol,[^,]*,1,1,([0-9],){4}[0-6],7,,,,,"?hello\.writable_[a-z_]+: [^ ]' "$class/scores.csv"; then
	ok "make grade-all: a module that oopses at load scores 0, the next trees are graded; a handed-in solution (an archive of make submit) is flagged COPIED; an unfinished step's first failure is in the CSV"
else
	cat "$class/scores.csv" 2>/dev/null
	bad "make grade-all with a module that oopses (see $logs/grade-many.log)"
fi
# The debugging lab's oops decoding and gdb breakpoint, as its sheet
# tells a student to do them (scripts/debug-route.sh).
"$here/debug-route.sh" > "$logs/debug-route.log" 2>&1
while IFS= read -r line; do
	case $line in
	"PASS: "*) ok "${line#PASS: }" ;;
	"FAIL: "*) bad "${line#FAIL: }" ;;
	esac
done < "$logs/debug-route.log"
grep -q '^debug route: [0-9]* passed' "$logs/debug-route.log" ||
	bad "debug route: no result (see $logs/debug-route.log)"
}

# The guests run in two chains side by side: a guest keeps about one core
# busy on average (it sleeps in tests, boots, and one-thread guests use
# one), so two at once fill the gaps of one (measured on the 2-core CI
# machine, whose cores behave more like one and a fifth: 1076 s against
# 1186 s; docs/measured.md). make check-all keeps this in its parts too.
# KMODLAB_CHECK_JOBS=1 runs them in turn. Each chain counts in a
# subshell and hands its totals back in a file; the first chain prints as
# it goes, the second when it ends.
jobs=${KMODLAB_CHECK_JOBS:-2}
chain1=(guest valgrind labs)
chain2=(runner tcgsingle compat32)
# runs a chain's wanted parts; its counts go to file $1: "PASS FAIL SKIP",
# then one line per failure
run_chain() {
	local counts=$1 p
	shift
	pass=0 fail=0 skip=0 failed=()
	for p in "$@"; do
		if [[ $p == tcgsingle ]]; then want guest || continue
		else want "$p" || continue
		fi
		"part_$p"
	done
	{ echo "$pass $fail $skip"; ((${#failed[@]})) && printf '%s\n' "${failed[@]}"; } > "$counts"
}
add_counts() { # a chain's counts file
	local p f s line
	if ! read -r p f s < "$1" 2>/dev/null || [[ -z $s ]]; then
		bad "a chain of parts ended without its counts ($1)"
		return
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	while IFS= read -r line; do failed+=("$line"); done < <(tail -n +2 "$1")
}
rm -f "$logs"/chain*.counts
if ((jobs > 1)); then
	(run_chain "$logs/chain2.counts" "${chain2[@]}") > "$logs/chain2.log" 2>&1 &
	chain2_pid=$!
	(run_chain "$logs/chain1.counts" "${chain1[@]}")
	wait "$chain2_pid"
	cat "$logs/chain2.log"
	add_counts "$logs/chain1.counts"
	add_counts "$logs/chain2.counts"
else
	(run_chain "$logs/chain1.counts" "${chain1[@]}" "${chain2[@]}")
	add_counts "$logs/chain1.counts"
fi

if [[ -n ${fuzz_pid:-} ]]; then
section "fuzzing (${fuzz_secs}s per target, run beside the guests)"
wait "$fuzz_pid"
for f in "$build"/fuzz/fuzz_*; do
	name=${f##*/}
	if grep -qx "$name 0" "$logs/fuzz.status" 2>/dev/null; then
		ok "$name: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logs/$name.log" | grep -o '[0-9]*$') runs, no crash"
	else
		tail -30 "$logs/$name.log"
		bad "$name"
	fi
done
fi

if want coverage && want guest; then
section "coverage"
echo "mode: $coverage_mode (COVERAGE=per-test captures each test)"
t0=$SECONDS
"$here/coverage.sh" --out "$build/coverage$sfx" --min "$cov_min" --branch-min "$cov_min" --all \
	"$build/vm/selftests$sfx/gcov" > "$logs/coverage.log" 2>&1
rc=$?
cat "$logs/coverage.log"
while IFS= read -r line; do
	case $line in
	"COVERAGE-OK "*)   ok "${line#COVERAGE-OK }" ;;
	"COVERAGE-LOW "*)  bad "${line#COVERAGE-LOW }" ;;
	esac
done < "$logs/coverage.log"
((rc == 0)) || grep -q '^COVERAGE-LOW' "$logs/coverage.log" || bad "coverage report"
echo "the report took $((SECONDS - t0)) s"
fi

summary
