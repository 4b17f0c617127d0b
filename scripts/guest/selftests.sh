#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs inside the test guest (via scripts/vm-run.sh): selftest binaries
# from build/selftests, with the modules from the current build. Output is
# TAP from kselftest_harness.h; the exit status is non-zero if any failed.
#
#   selftests.sh                 every binary
#   selftests.sh SPEC...         SPEC is BINARY or BINARY:HARNESS-ARGS, e.g.
#                                "kml_probe_test:-T some_test" (-T excludes a
#                                test, -r FIXTURE.TEST runs one)
#
# KMODLAB_SELFTEST_DIR picks the binaries (default build/selftests;
# build/selftests32 holds the same tests built with -m32).
#
# Coverage (when the guest counts it, KMODLAB_GCOV=1): the counters are
# reset before each program and captured after it and its modules' unload,
# one capture per program, named after it (scripts/kml-gcov-collect).
# KMODLAB_COVERAGE=per-test runs each test alone (-r FIXTURE.TEST) and
# captures each one, so the report shows which test ran every line; the
# unload after the program's last test is its own capture, PROGRAM__unload.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
export KMODLAB_KO_DIR=${KMODLAB_KO_DIR:-$repo/build/kmod/${KVER:-6.12}-${PROFILE:-default}}
export KMODLAB_BIN=$repo/build/bin
stdir=${KMODLAB_SELFTEST_DIR:-$repo/build/selftests}
if [[ ${KMODLAB_GUEST:-0} != 1 ]]; then
	echo "selftests.sh: run me in the guest: scripts/vm-run.sh scripts/guest/selftests.sh" >&2
	exit 2
fi
tap=${KMODLAB_OUT:-/tmp}/selftests.tap
times=${KMODLAB_OUT:-/tmp}/times.tsv
: > "$tap"
: > "$times"
# Copies a harness's output to stdout and the TAP file, and writes each
# test's seconds to times.tsv (PROGRAM TEST SECONDS): where guest time goes
# decides what CI can afford. Bash's clock, not an exec per test.
tap_out() { # PROGRAM
	local line us t0=${EPOCHREALTIME/./}
	while IFS= read -r line || [[ -n $line ]]; do
		printf '%s\n' "$line"
		printf '%s\n' "$line" >> "$tap"
		case $line in
		"#  RUN "*) t0=${EPOCHREALTIME/./} ;;
		"ok "*|"not ok "*)
			us=$((${EPOCHREALTIME/./} - t0))
			line=${line#not }
			line=${line#ok * }
			printf '%s\t%s\t%d.%06d\n' "$1" "${line%% *}" $((us / 1000000)) \
				$((us % 1000000)) >> "$times"
			;;
		esac
	done
}
# Each test program starts with no kmodlab module loaded, and the last
# unload runs every exit path (counted by gcov) before power-off.
unload_all() {
	local m loaded
	# /proc/modules read by the shell: an exec per module costs under TCG
	loaded=$(</proc/modules)
	# kml_probe before kml_ring: a recording holds a ring
	for m in kml_stats_apitest kml_ring_apitest kml_initwait kml_probe kml_probe_target kml_ring \
		 kml_sensor kml_filter kml_hello kml_debug kml_rcu_reader kml_stats; do
		[[ $'\n'$loaded == *$'\n'"$m "* ]] && rmmod "$m"
	done
	return 0
}
# the collector's functions, without an exec per capture
source "$repo/scripts/kml-gcov-collect"
quiet_empty=1
gcov_on=0 per_test=0
[[ ${KMODLAB_GCOV:-0} == 1 && -w /sys/kernel/debug/gcov/reset ]] && gcov_on=1
((gcov_on)) && [[ ${KMODLAB_COVERAGE:-} == per-test ]] && per_test=1
reset_counters() { ((gcov_on)) && echo 1 > /sys/kernel/debug/gcov/reset; }
save_counters() { # NAME: letters, digits, _ (what lcov accepts as a test name)
	((gcov_on)) || return 0
	local name=${1//[^A-Za-z0-9_]/_} n=1 suffix=
	# a name already taken (a program run twice) gets 2, 3, ...
	while [[ -e $KMODLAB_OUT/gcov/$name$suffix ]]; do n=$((n + 1)); suffix=$n; done
	# a subshell (a fork, no exec): the collector exits on errors
	(only=${KMODLAB_GCOV_ONLY:-$only} capture "$KMODLAB_OUT/gcov" "$name$suffix")
}
# The tests a harness command line selects (-f/-F fixture, -t/-T test,
# -r/-R FIXTURE.TEST; includes, if any, must match, excludes must not),
# from the program's -l listing; none of ours has variants.
selected() { # BINARY ARGS...
	local t=$1 inc=() exc=() name ok a
	shift
	while (($#)); do
		case $1 in
		-f|-t|-r) inc+=("$1 $2"); shift 2 ;;
		-F|-T|-R) exc+=("${1,,} $2"); shift 2 ;;
		*) return 1 ;;	# anything else: not a plain selection
		esac
	done
	# -F/-T/-R were lowered to -f/-t/-r: match() tests either kind
	match() {
		case $1 in
		"-f "*) [[ ${1#* } == "${name%%.*}" ]] ;;
		"-t "*) [[ ${1#* } == "${name#*.}" ]] ;;
		"-r "*) [[ ${1#* } == "$name" ]] ;;
		esac
	}
	"$t" -l 2>&1 | awk '/^(#|---)/ || !NF { next }
		!/^[ \t]/ { fix = $1 } NF >= (/^[ \t]/ ? 1 : 2) { print fix "." $NF }' |
	while IFS= read -r name; do
		ok=1
		if ((${#inc[@]})); then
			ok=0
			for a in "${inc[@]}"; do match "$a" && ok=1; done
		fi
		for a in "${exc[@]}"; do match "$a" && ok=0; done
		((ok == 0)) || echo "$name"
	done
}
specs=("$@")
if ((${#specs[@]} == 0)); then
	for t in "$stdir"/*; do
		[[ -x $t ]] && specs+=("${t##*/}")
	done
fi
rc=0
for spec in "${specs[@]}"; do
	t=$stdir/${spec%%:*}
	args=()
	[[ $spec == *:* ]] && read -ra args <<< "${spec#*:}"
	if [[ ! -x $t ]]; then
		echo "not ok 1 ${spec%%:*} # no such selftest binary" | tee -a "$tap"
		rc=1
		continue
	fi
	unload_all
	echo "# selftest: $spec" | tee -a "$tap"
	prog=${spec%%:*}
	if ((per_test)) && tests=$(selected "$t" "${args[@]}") && [[ -n $tests ]]; then
		while IFS= read -r name; do
			reset_counters
			# stdin is the list of tests: a test must not eat it
			"$t" -r "$name" < /dev/null 2>&1 | tap_out "$prog"
			((PIPESTATUS[0] == 0)) || rc=1
			save_counters "${prog}__${name/./__}"
		done <<< "$tests"
		reset_counters
		unload_all
		save_counters "${prog}__unload"
		continue
	fi
	reset_counters
	"$t" "${args[@]}" 2>&1 | tap_out "$prog"
	((PIPESTATUS[0] == 0)) || rc=1
	unload_all
	save_counters "$prog"
done
unload_all
exit $rc
