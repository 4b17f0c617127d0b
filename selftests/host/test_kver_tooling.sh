#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of what the test tooling does differently by kernel version:
#  - scripts/known-warnings.awk (vm-run.sh's filter of known kernel-core
#    warnings) on the WARNING line of 6.x and of 7.x, which differ;
#  - scripts/kernel.sh fragment: the "# kver" guards of the Kconfig
#    fragments (CONFIG_PROC_SYSCTL is gone in 7.x).
# TAP output, like the C host tests; run by `make check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=selftests/host/tap.bash
. "$here/tap.bash"

# A report as each kernel prints it (the format strings of kernel/panic.c's
# __warn() in 6.12 and in 7.3), with the end marker both print.
report() { # $1 = 6 or 7, $2 = function, $3 = seconds (default 9)
	local t=${3:-9}
	if [[ $1 == 6 ]]; then
		printf '[%5d.100000] WARNING: CPU: 1 PID: 321 at kernel/trace/trace_events.c:3012 %s+0xce/0x101\n' "$t" "$2"
	else
		printf '[%5d.100000] WARNING: kernel/trace/trace_events.c:3147 at %s+0xce/0x101, CPU#1: insmod/321\n' "$t" "$2"
	fi
	printf '[%5d.100001] Modules linked in: kml_sensor(O+)\n' "$t"
	printf '[%5d.100002] Call Trace:\n' "$t"
	printf '[%5d.100003]  <TASK>\n' "$t"
	printf '[%5d.100004]  trace_event_init+0x10/0x20\n' "$t"
	printf '[%5d.100005] ---[ end trace 0000000000000000 ]---\n' "$t"
}
armed='[    9.000000] kmodlab: allocation-failure injection armed'
filter() { # $1 = log; prints the checked log, known reports to $tmp/known
	rm -f "$tmp/known"
	awk -v known="$tmp/known" -v stop="$(<"$repo/scripts/splat.ere")|cut here" \
		-f "$repo/scripts/known-warnings.awk" "$1"
}
for v in 6 7; do
	{ echo "$armed"; report $v event_define_fields; echo "[   10.0] after"; } > "$tmp/log"
	out=$(filter "$tmp/log")
	check "$v.x: event_define_fields's WARNING after injection is known, whole report set apart" \
		test "$(grep -c WARNING <<< "$out"):$(wc -l < "$tmp/known")" == "0:6"
	check "$v.x: the log after a known report is kept" grep -q after <<< "$out"
	{ echo "$armed"; report $v event_define_fields; report $v event_file_put 10
	  echo "[   10.2] after"; } > "$tmp/log"
	out=$(filter "$tmp/log")
	check "$v.x: event_file_put's WARNING soon after event_define_fields's is known too" \
		test "$(grep -c WARNING <<< "$out"):$(wc -l < "$tmp/known")" == "0:12"
	{ echo "$armed"; report $v event_file_put; } > "$tmp/log"
	check "$v.x: event_file_put's WARNING with no event_define_fields before stays a splat" \
		grep -q "WARNING:.*event_file_put" <(filter "$tmp/log")
	{ echo "$armed"; report $v event_define_fields; report $v event_file_put 50; } > "$tmp/log"
	check "$v.x: event_file_put's WARNING 41 s after event_define_fields's stays a splat" \
		grep -q "WARNING:.*event_file_put" <(filter "$tmp/log")
	{ echo "$armed"; report $v event_define_fields | head -n 3
	  echo "[    9.2] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:"; } > "$tmp/log"
	check "$v.x: an RCU stall inside a known report ends it and stays" \
		grep -q "detected stall" <(filter "$tmp/log")
	{ echo "$armed"; report $v kml_sensor_probe; } > "$tmp/log"
	check "$v.x: a WARNING in another function stays a splat" \
		grep -q "WARNING:.*kml_sensor_probe" <(filter "$tmp/log")
	{ report $v event_define_fields; echo "$armed"; } > "$tmp/log"
	check "$v.x: a known WARNING before injection was armed stays a splat" \
		grep -q "WARNING:.*event_define_fields" <(filter "$tmp/log")
	{ echo "$armed"; report $v event_define_fields | head -n 3; } > "$tmp/log"
	check "$v.x: a known report with no end marker is itself a splat" \
		grep -q "WARNING: vm-run: a known-warning report has no end marker" <(filter "$tmp/log")
	{ echo "$armed"; report $v event_define_fields | head -n 3; echo "[ 9.2] BUG: KASAN: use-after-free"; } > "$tmp/log"
	check "$v.x: a splat inside a known report ends it and stays" \
		grep -q "BUG: KASAN" <(filter "$tmp/log")
done

# The Kconfig fragment as it applies to each kernel.
frag() { KVER=$1 PROFILE=${2:-default} "$repo/scripts/kernel.sh" fragment; }
check "kernel.sh fragment: 6.12 asks for CONFIG_PROC_SYSCTL" grep -qx CONFIG_PROC_SYSCTL=y <(frag 6.12)
check "kernel.sh fragment: 6.1 asks for CONFIG_PROC_SYSCTL" grep -qx CONFIG_PROC_SYSCTL=y <(frag 6.1)
check "kernel.sh fragment: 6.12 asks for the fault-injection stack filter" \
	grep -qx CONFIG_FAULT_INJECTION_STACKTRACE_FILTER=y <(frag 6.12)
check "kernel.sh fragment: 6.1 does not (its Kconfig has it only off x86-64)" \
	bash -c '! grep -q CONFIG_FAULT_INJECTION_STACKTRACE_FILTER <(KVER=6.1 "$1" fragment)' _ "$repo/scripts/kernel.sh"
check "kernel.sh fragment: 7.3 does not (the option is gone)" bash -c '! grep -q CONFIG_PROC_SYSCTL <(KVER=7.3 "$1" fragment)' _ "$repo/scripts/kernel.sh"
check "kernel.sh fragment: 7.3 keeps every unguarded option" \
	test "$(frag 6.12 | grep -c '^CONFIG_')" == "$(($(frag 7.3 | grep -c '^CONFIG_') + 1))"
check "kernel.sh fragment: the debug profile adds its options on 7.3" \
	grep -qx CONFIG_KASAN=y <(frag 7.3 debug)
# a guard's comparisons, on a fragment of our own
mkdir -p "$tmp/kconfig"
cp "$repo/scripts/kernel.sh" "$tmp/"
printf '%s\n' '# kver >= 7.0' CONFIG_NEW=y '# kver == 6.1' CONFIG_OLD=y \
	'# kver <= 6.12' 'CONFIG_MID=y' CONFIG_ALWAYS=y > "$tmp/kconfig/kmodlab.config"
f73=$(KVER=7.3 "$tmp/kernel.sh" fragment | grep '^CONFIG' | tr '\n' ' ')
f61=$(KVER=6.1 "$tmp/kernel.sh" fragment | grep '^CONFIG' | tr '\n' ' ')
f612=$(KVER=6.12 "$tmp/kernel.sh" fragment | grep '^CONFIG' | tr '\n' ' ')
check "kernel.sh fragment: >=, ==, <= guards (7.3: $f73)" test "$f73" == "CONFIG_NEW=y CONFIG_ALWAYS=y "
check "kernel.sh fragment: 6.1 ($f61)" test "$f61" == "CONFIG_OLD=y CONFIG_MID=y CONFIG_ALWAYS=y "
check "kernel.sh fragment: 6.12 is not 6.1 (minor 12 > 1) ($f612)" test "$f612" == "CONFIG_MID=y CONFIG_ALWAYS=y "
printf '%s\n' '# kver ~ 7.0' CONFIG_NEW=y > "$tmp/kconfig/kmodlab.config"
check "kernel.sh fragment: a malformed guard fails" bash -c '! KVER=7.3 "$1" fragment >/dev/null 2>&1' _ "$tmp/kernel.sh"
echo "1..$n"
