#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make test T=<module>[:<harness args>]`: the fast loop. Rebuilds what
# changed, boots the test guest once, runs only that module's selftests
# (or the ones the harness arguments pick) and prints their results and
# the module's line and branch coverage.
#
#   make test T=kml_sensor                     all of kml_sensor_test
#   make test T=sensor:'-r dev.get_info'       one test (FIXTURE.TEST)
#   make test T='kml_ring kml_stats'           several modules, one guest
#   make test T=kml_probe COV=0                no coverage (a little faster)
#
# kml_probe's fixture probe_text patches kernel text while the other vCPU
# runs it, which multi-threaded TCG does not emulate: the tests that need
# it run in a second guest with one TCG thread, by themselves.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"
export KVER=${KVER:-6.12} PROFILE=${PROFILE:-default}
mods=(kml_stats kml_sensor kml_probe kml_ring kml_filter)
[[ -d modules/kml_hello ]] && mods+=(kml_hello)
[[ -d modules/kml_debug ]] && mods+=(kml_debug)
# labs/bpf's loader and programs (no module of their own)
[[ -d bpf ]] && mods+=(kml_bpf)
cov=${COV:-1}

usage() {
	echo "make test: $*" >&2
	echo "  usage: make test T=<module>[:<harness args>] [COV=0]" >&2
	echo "  modules: ${mods[*]} (the kml_ prefix may be left out)" >&2
	echo "  e.g. make test T=kml_sensor, make test T=sensor:'-r dev.get_info'" >&2
	echo "  harness args: -r FIXTURE.TEST, -f FIXTURE, -t TEST, -T TEST (exclude), -l (list)" >&2
	exit 2
}
[[ -n ${T:-} ]] || usage "which module? T= is empty"

# The modules each module's selftests load (kml_stats is everyone's
# library; the test-only modules live in modules/tests, which builds as
# one directory: kml_ring_apitest there links against kml_ring, so
# whoever needs tests needs kml_ring too, or modpost fails).
needs() {
	case $1 in
	kml_stats)  echo "kml_stats kml_ring tests" ;;	# tests/ has kml_ring_apitest
	kml_sensor) echo "kml_stats kml_sensor" ;;
	kml_probe)  echo "kml_stats kml_ring kml_probe tests" ;;	# tests/ has kml_initwait
	kml_ring)   echo "kml_stats kml_ring tests" ;;
	kml_filter) echo "kml_stats kml_ring kml_filter tests" ;;	# the log writes to kml_ring; tests/ has kml_rcu_reader
	kml_hello)  echo "kml_hello" ;;
	kml_debug)  echo "kml_debug" ;;
	kml_bpf)    echo "kml_stats kml_ring kml_probe kml_filter tests" ;;
	esac
}

# T is a list of MODULE[:ARGS]; ARGS run to the next word that is a
# module. The word after -f/-F/-r/-t/-T/-v/-V is that option's value,
# even when it looks like a module (fixtures are named hello, ring, ...).
specs=() build=() gcov_dirs=() list=0
read -ra words <<< "$T"
optarg=0
for w in "${words[@]}"; do
	m=${w%%:*}
	m=kml_${m#kml_}
	m=${m%_test}
	if ((!optarg)) && [[ " ${mods[*]} " == *" $m "* ]]; then
		args=
		[[ $w == *:* ]] && args=${w#*:}
		specs+=("${m}_test:$args")
		w=$args
	elif ((${#specs[@]})); then
		specs[-1]+=" $w"	# another harness argument
	else
		usage "no module '${w%%:*}'"
	fi
	optarg=0
	[[ $w == *-[fFrtTvV] ]] && optarg=1
	[[ " $w " == *" -l "* ]] && list=1
done
((${#specs[@]})) || usage "which module? T= names none"
for s in "${specs[@]}"; do
	m=${s%_test:*}
	read -ra b <<< "$(needs "$m")"
	build+=("${b[@]}")
	[[ $m == kml_bpf ]] && continue		# no module: no counters
	gcov_dirs+=("modules/$m/")
done

section() { printf '\n=== %s (%d s)\n' "$*" "$SECONDS"; }
section "build (${build[*]})"
mk=(make -s --no-print-directory)
"${mk[@]}" userspace selftests >/dev/null || exit 1
if [[ " ${specs[*]} " == *" kml_bpf_test:"* ]]; then
	"${mk[@]}" bpf >/dev/null || exit 1
fi
kbuild=$repo/build/kmod/$KVER-$PROFILE
"${mk[@]}" modules KMODLAB_MODULES="$(printf '%s\n' "${build[@]}" | sort -u | tr '\n' ' ')" |
	grep -v '^make\['
st=("${PIPESTATUS[@]}")
((st[0] == 0)) || { echo "make test: the module build failed (status ${st[0]})" >&2; exit 1; }

# -l lists the tests: no guest needed
if ((list)); then
	for s in "${specs[@]}"; do
		build/selftests/${s%%:*} -l 2>&1
	done
	exit 0
fi

# Split kml_probe's specs: probe_text tests go to a one-thread guest.
guest=() single=()
for s in "${specs[@]}"; do
	# lab bpf's fixture lat_text attaches while another CPU runs the function
	if [[ $s == kml_bpf_test:* ]]; then
		args=${s#*:}
		if [[ -z $args ]]; then
			guest+=("kml_bpf_test:-F lat_text")
			single+=("kml_bpf_test:-f lat_text")
		elif [[ $args == *lat_text* ]]; then
			single+=("$s")
		else
			guest+=("$s -F lat_text")
		fi
		continue
	fi
	if [[ $s != kml_probe_test:* ]]; then
		guest+=("$s")
		continue
	fi
	args=${s#*:}
	ptext=$(build/selftests/kml_probe_test -l 2>&1 |
		awk '/^probe_text/ { on = 1 } /^---/ { on = 0 } on { print $NF }' | tr '\n' ' ')
	hit=0
	for a in $args; do
		[[ $a == probe_text* || " $ptext " == *" ${a##*.} "* ]] && hit=1
	done
	if [[ -z $args ]]; then
		guest+=("kml_probe_test:-F probe_text")
		single+=("kml_probe_test:-f probe_text")
	elif ((hit)); then
		single+=("$s")
	else
		guest+=("$s -F probe_text")
	fi
done

# KMODLAB_TEST_PLAN=1: print which guest runs what, and stop (tested by
# make check: the probe_text tests must never reach a multi-thread guest).
if [[ ${KMODLAB_TEST_PLAN:-0} == 1 ]]; then
	for s in "${guest[@]}"; do echo "multi: $s"; done
	for s in "${single[@]}"; do echo "tcg-single: $s"; done
	exit 0
fi

# kml_probe's tests read perf.data with the perf Debian ships for KVER
# (scripts/perf-for.sh; Debian 13's layer is built once, as root). Without
# it they read with the host's perf, and say so.
if [[ " ${specs[*]}" == *" kml_probe_test:"* && -z ${KMODLAB_PERF:-} ]]; then
	if KMODLAB_PERF=$("$here/perf-for.sh" "$KVER" 2> "$repo/build/perf-for.log"); then
		export KMODLAB_PERF
		echo "perf of $KVER: $KMODLAB_PERF"
	else
		unset KMODLAB_PERF
		echo "make test: $(tail -n 1 "$repo/build/perf-for.log"); the guest reads perf.data with the host's perf"
	fi
fi

rc=0
run() { # $1 = name, then vm-run options, --, specs
	local name=$1 r
	shift
	section "guest: $name"
	"$here/vm-run.sh" --out "$repo/build/vm/test-$name" "$@"
	r=$?
	((r == 0)) || rc=$r
	local tap=$repo/build/vm/test-$name/selftests.tap
	[[ -s $tap ]] && results+=$(grep -E '^(not )?ok [0-9]+ ' "$tap")$'\n'
}
results=
# the report must not mix in a guest of an earlier make test
rm -rf "$repo"/build/vm/test-{multi,tcg-single}
gopt=(--no-gcov)
((cov)) && gopt=(--gcov-only "$(IFS=,; echo "${gcov_dirs[*]}")")
((${#guest[@]})) && run multi "${gopt[@]}" -- scripts/guest/selftests.sh "${guest[@]}"
((${#single[@]})) && run tcg-single --tcg-single "${gopt[@]}" -- \
	scripts/guest/selftests.sh "${single[@]}"

if ((cov)); then
	section "coverage"
	caps=()
	for d in "$repo"/build/vm/test-{multi,tcg-single}/gcov; do
		[[ -d $d ]] && caps+=("$d")
	done
	if ((${#caps[@]})); then
		# the same report as make check, for this run's modules only
		"$here/coverage.sh" --out "$repo/build/vm/test-coverage" "${caps[@]}" \
			> "$repo/build/vm/test-coverage.log" 2>&1
		for d in "${gcov_dirs[@]}"; do
			m=$(basename "$d")
			grep -E "^(MODULE|$m) " "$repo/build/vm/test-coverage.log" | grep -v COVERAGE || true
		done | awk '!seen[$0]++'
		echo "report: $repo/build/vm/test-coverage/html/index.html"
	else
		echo "no coverage data"
	fi
fi
section "results"
p=$(grep -cE '^ok [0-9]+ ' <<< "$results")
s=$(grep -cE '^ok [0-9]+ .*# SKIP' <<< "$results")
f=$(grep -cE '^not ok [0-9]+ ' <<< "$results")
grep -E '^not ok [0-9]+ ' <<< "$results"
echo "$((p - s)) passed, $f failed, $s skipped ($SECONDS s)"
((f == 0 && p > 0 && rc == 0))
