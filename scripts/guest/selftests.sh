#!/bin/bash
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
: > "$tap"
# Each test program starts with no kmodlab module loaded, and the last
# unload runs every exit path (counted by gcov) before power-off.
unload_all() {
	local m loaded
	# /proc/modules read by the shell: an exec per module costs under TCG
	loaded=$(</proc/modules)
	for m in kml_stats_apitest kml_ring_apitest kml_ring kml_probe kml_probe_target \
		 kml_sensor kml_filter kml_hello kml_stats; do
		[[ $'\n'$loaded == *$'\n'"$m "* ]] && rmmod "$m"
	done
	return 0
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
	"$t" "${args[@]}" 2>&1 | tee -a "$tap"
	((PIPESTATUS[0] == 0)) || rc=1
done
unload_all
exit $rc
