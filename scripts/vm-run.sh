#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run a command in the kmodlab test kernel under QEMU and return its status.
#
#   scripts/vm-run.sh [options] [--] COMMAND [ARG...]
#   scripts/vm-run.sh --interactive
#
# The guest's root is the host's / (read-only 9p), so COMMAND runs from the
# repository with the host's tools and the project's build. Afterwards:
#   OUT/console.log  everything the guest printed (kernel and COMMAND)
#   OUT/dmesg.txt    the guest's kernel log
#   OUT/status       COMMAND's exit status
#   OUT/gcov/NAME    the kmodlab modules' coverage counters, one capture per
#                    program or test (scripts/kml-gcov-collect; report them
#                    with scripts/coverage.sh OUT/gcov, i.e. make coverage)
#
# Exit status: COMMAND's, unless the run itself went wrong:
#   124  the guest did not power off within --timeout
#   125  the kernel log shows a splat (BUG, WARNING, Oops, KASAN, UBSAN,
#        lockdep, kmemleak, hung task, RCU stall, panic)
#   255  the guest died without reporting a status (panic, QEMU failure)
#
# Options:
#   --out DIR      results directory (default build/vm/last; emptied first)
#   --timeout S    seconds before the guest counts as hung (default 900)
#   --quiet-timeout S  it counts as hung, too, once its console has printed
#                  nothing for S seconds (default: no such limit). For runs
#                  that print as they go (the labs): a kernel that locks up
#                  ends its run then, not at --timeout
#   --quiet-match ERE  only lines matching ERE end the silence: a kernel
#                  stuck with interrupts on prints RCU stall reports every
#                  minute or so, which are not progress
#   --smp N        guest CPUs (default 2)   --mem MB  guest memory (default 1024)
#   --kernel IMG   bzImage (default: the cached KVER/PROFILE test kernel)
#   --append ARGS  extra kernel command-line arguments
#   --interactive  a shell on the console instead of COMMAND
#   --tcg-single   one host thread for all vCPUs (-accel tcg,thread=single):
#                  for tests that patch kernel text while another vCPU runs
#                  it, which multi-threaded TCG does not emulate faithfully
#   --no-gcov      do not capture coverage counters
#   --gcov-only P,…  capture only the counters whose path contains one of
#                  these (e.g. modules/kml_sensor/): each file costs an exec
#   --gdb SOCKET   a gdb stub on the unix socket SOCKET (`make gdb` attaches:
#                  scripts/gdb.sh); the guest runs until gdb stops it
#   --gdb-wait     with --gdb: the guest waits, stopped before its first
#                  instruction, until gdb says continue
#   --stock DIR    boot a stock distro kernel prepared by scripts/stock.sh:
#                  DIR/vmlinuz, DIR/initrd.gz, DIR/lib/modules; the host's /
#                  and the results share come over virtiofs (no 9p there)
# KVM is used where it works: the first run on a machine boots the test
# kernel once under KVM with no root (it must reach the "no root" panic
# within 20 s) and remembers the answer in the cache. /dev/kvm can exist
# and not work (on the machine this was developed on QEMU aborts or spins),
# so its presence proves nothing. KMODLAB_KVM=0 never tries; KMODLAB_KVM=1
# tries without the probe and falls back to TCG if the guest does not
# report a status.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
out=$repo/build/vm/last
timeout=900 quiet= quiet_match= smp=2 mem=1024 kernel= append= interactive=0 accel_opts= gcov=1 gcov_only= stock=
gdb_sock= gdb_wait=0

while (($#)); do
	case $1 in
	--out)		out=$2; shift 2 ;;
	--timeout)	timeout=$2; shift 2 ;;
	--quiet-timeout) quiet=$2; shift 2 ;;
	--quiet-match)	quiet_match=$2; shift 2 ;;
	--smp)		smp=$2; shift 2 ;;
	--mem)		mem=$2; shift 2 ;;
	--kernel)	kernel=$2; shift 2 ;;
	--append)	append=$2; shift 2 ;;
	--interactive)	interactive=1; shift ;;
	--tcg-single)	accel_opts=,thread=single; shift ;;
	--no-gcov)	gcov=0; shift ;;
	--gcov-only)	gcov_only=$2; shift 2 ;;
	--stock)	stock=$(cd "$2" && pwd) || exit 2; gcov=0; shift 2 ;;
	--gdb)		gdb_sock=$2; shift 2 ;;
	--gdb-wait)	gdb_wait=1; shift ;;
	--)		shift; break ;;
	-*)		echo "vm-run: unknown option $1" >&2; exit 2 ;;
	*)		break ;;
	esac
done
[[ -z $quiet || $quiet =~ ^[1-9][0-9]*$ ]] ||
	{ echo "vm-run: --quiet-timeout takes a number of seconds, not '$quiet'" >&2; exit 2; }
((gdb_wait)) && [[ -z $gdb_sock ]] &&
	{ echo "vm-run: --gdb-wait needs --gdb SOCKET" >&2; exit 2; }
if [[ -n $gdb_sock ]]; then
	[[ $gdb_sock == /* ]] || gdb_sock=$PWD/$gdb_sock
	# a unix socket's path has room for 107 bytes
	((${#gdb_sock} < 108)) ||
		{ echo "vm-run: --gdb $gdb_sock: a socket path must be under 108 bytes" >&2; exit 2; }
	[[ ! -e $gdb_sock || -S $gdb_sock ]] ||
		{ echo "vm-run: --gdb $gdb_sock exists and is not a socket: not replacing it" >&2; exit 2; }
	# no KASLR, on the test kernel or a stock one: vmlinux's addresses are the guest's
	append+="${append:+ }nokaslr"
fi
# `make vm < script` or `... | make vm`: the serial port drops whatever
# arrives before the guest's shell opens it (the first words), so piped
# input is not typed into a shell but run as a script, like COMMAND.
piped=0
if ((interactive)) && [[ ! -t 0 ]]; then
	interactive=0 piped=1
	set -- bash /mnt/stdin.sh
fi
if ((!interactive && $# == 0)); then
	echo "usage: vm-run.sh [options] [--] COMMAND [ARG...] | --interactive" >&2
	exit 2
fi

"$here/deps.sh" vm || exit 2
if [[ -n $stock ]]; then
	kernel=$stock/vmlinuz
elif [[ -z $kernel ]]; then
	kernel=$("$here/kernel.sh" kdir)/arch/x86/boot/bzImage
fi
if [[ ! -r $kernel ]]; then
	echo "vm-run: no test kernel at $kernel: run 'make kernel' first" >&2
	exit 2
fi
case $repo in *[[:space:]]*)
	echo "vm-run: the repository path must not contain spaces: $repo" >&2
	exit 2 ;;
esac

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
((piped)) && cat > "$out/stdin.sh"
{
	# The guest must pick the modules built for the kernel it runs.
	printf 'export KVER=%q PROFILE=%q\n' "${KVER:-6.12}" "${PROFILE:-default}"
	# a student tree's modules instead of the build's (labs, make vm)
	[[ -n ${KMODLAB_KO_DIR:-} ]] && printf 'export KMODLAB_KO_DIR=%q\n' "$KMODLAB_KO_DIR"
	# the perf of the kernel booted (scripts/perf-for.sh), for what reads perf.data
	[[ -n ${KMODLAB_PERF:-} ]] && printf 'export KMODLAB_PERF=%q\n' "$KMODLAB_PERF"
	printf 'cd %q || exit 1\n' "$repo"
	printf 'exec'
	printf ' %q' "$@"
	printf '\n'
} > "$out/cmd"

cmdline="console=ttyS0 loglevel=5 panic=-1 root=root rootfstype=9p"
# The guest may cache the read-only root (each exec over 9p costs much
# under TCG), except in the shell: there the host rebuilds modules that
# the guest must then see fresh.
cache=loose
((interactive)) && cache=none
cmdline+=" rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=${KMODLAB_9P_CACHE:-$cache} ro"
cmdline+=" init=${KMODLAB_INIT:-$here/guest/init.sh} kmodlab_repo=$repo"
cmdline+=" kmodlab_mode=$( ((interactive)) && echo shell || echo run)"
cmdline+=" kmodlab_gcov=$gcov${gcov_only:+ kmodlab_gcov_only=$gcov_only}"
cmdline+=" kmodlab_kver=${KVER:-6.12} kmodlab_profile=${PROFILE:-default}"
[[ -n ${KMODLAB_KO_DIR:-} ]] && cmdline+=" kmodlab_ko_dir=$(cd "$KMODLAB_KO_DIR" && pwd)"
# The debug kernels are so slow under TCG that ACPI's interpreter times out
# on the PCI routing table (AE_AML_LOOP_TIMEOUT): virtio then gets no
# interrupt and the 9p root never mounts. Route PCI interrupts without ACPI.
[[ ${PROFILE:-default} == debug || ${PROFILE:-default} == kcsan ]] &&
	cmdline+=" pci=noacpi"
[[ -n $append ]] && cmdline+=" $append"

qemu_args=(
	-cpu max -smp "$smp" -m "$mem"
	-display none -no-reboot -monitor none
)
# QEMU's gdb stub, on a socket of the user's (no TCP port to collide with
# another guest's).
if [[ -n $gdb_sock ]]; then
	mkdir -p "$(dirname "$gdb_sock")"
	rm -f "$gdb_sock"
	# QEMU's option syntax doubles a comma that is part of a value
	qemu_args+=(-chardev "socket,id=gdb0,path=${gdb_sock//,/,,},server=on,wait=off" -gdb chardev:gdb0)
	((gdb_wait)) && qemu_args+=(-S)
fi
if [[ -z $stock ]]; then
	qemu_args+=(
		-kernel "$kernel" -append "$cmdline"
		-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
		-device virtio-9p-pci,fsdev=root,mount_tag=root
		-fsdev local,id=out,path="$out",security_model=none,multidevs=remap
		-device virtio-9p-pci,fsdev=out,mount_tag=kmlout
	)
else
	# virtiofs: one virtiofsd per share, guest RAM shared with them
	cmdline="console=ttyS0 loglevel=5 panic=-1 rdinit=/init"
	# TCG's TSC follows the host's clock, but the clocksource watchdog takes
	# a vCPU's pauses for frequency skew, marks it unstable and switches to
	# HPET at run time; that flips static keys, patching text another vCPU
	# runs (seen: Oops: int3 in ktime_get_mono_fast_ns on Debian 13's 7.3).
	cmdline+=" tsc=reliable"
	cmdline+=" kmodlab_init=${KMODLAB_INIT:-$here/guest/init.sh} kmodlab_repo=$repo kmodlab_mode=run"
	cmdline+=" kmodlab_stock_modules=$stock/lib/modules"
	[[ -n $append ]] && cmdline+=" $append"
	vfs=$(mktemp -d)
	trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$vfs"' EXIT
	for share in root:/ kmlout:"$out"; do
		/usr/lib/qemu/virtiofsd --socket-path="$vfs/${share%%:*}" \
			-o source="${share#*:}" -o cache=none -o sandbox=chroot \
			-o log_level=err &
	done
	for _ in $(seq 50); do
		[[ -S $vfs/root && -S $vfs/kmlout ]] && break
		sleep 0.1
	done
	qemu_args+=(
		-kernel "$kernel" -initrd "$stock/initrd.gz" -append "$cmdline"
		-object memory-backend-memfd,id=mem,size="${mem}M",share=on
		-numa node,memdev=mem
		-chardev socket,id=vfsroot,path="$vfs/root"
		-device vhost-user-fs-pci,chardev=vfsroot,tag=root
		-chardev socket,id=vfsout,path="$vfs/kmlout"
		-device vhost-user-fs-pci,chardev=vfsout,tag=kmlout
	)
fi

run_qemu() { # $1 = accelerator
	if ((interactive)); then
		qemu-system-x86_64 -accel "$1$accel_opts" "${qemu_args[@]}" -serial mon:stdio
		return
	fi
	if [[ -z $quiet ]]; then
		timeout -k 10 "$timeout" qemu-system-x86_64 -accel "$1$accel_opts" "${qemu_args[@]}" \
			-serial stdio </dev/null 2>&1 | tee "$out/console.log"
		return "${PIPESTATUS[0]}"
	fi
	# the watcher's files are the host's: the guest writes in $out
	local ctl
	ctl=$(mktemp -d)
	(
		echo "$BASHPID" > "$ctl/pid"
		exec timeout -k 10 "$timeout" qemu-system-x86_64 -accel "$1$accel_opts" \
			"${qemu_args[@]}" -serial stdio </dev/null 2>&1
	) | watch_console "$ctl" | tee "$out/console.log"
	local st=${PIPESTATUS[0]}
	[[ -e $ctl/quiet ]] && st=124 quiet_hit=1
	rm -rf "$ctl"
	return "$st"
}

# Copies the console through ($1: the directory of QEMU's timeout's pid).
# Once no line (matching $quiet_match, if set) has come for $quiet
# seconds, ends the guest (timeout passes the TERM on to QEMU, and kills
# it 10 s later if it must) and notes why in $1/quiet.
watch_console() {
	local line rc last=$SECONDS
	while :; do
		IFS= read -r -t 5 line
		rc=$?
		if ((rc == 0)); then
			printf '%s\n' "$line"
			[[ -z $quiet_match || $line =~ $quiet_match ]] && last=$SECONDS
		elif ((rc <= 128)); then
			printf '%s' "$line"	# the end
			return
		else
			printf '%s' "$line"	# a line without its end yet
		fi
		line=
		if ((SECONDS - last >= quiet)); then
			: > "$1/quiet"
			kill -TERM "$(<"$1/pid")" 2> /dev/null
			cat	# the rest, until QEMU has gone
			return
		fi
	done
}

t0=$SECONDS
qrc=0 quiet_hit=0
kvm_works() {
	[[ -w /dev/kvm && -z $stock ]] || return 1
	case ${KMODLAB_KVM:-auto} in 0) return 1 ;; 1) return 0 ;; esac
	local cache=${KMODLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kmodlab} f
	f=$cache/kvm-$(uname -r)-$(qemu-system-x86_64 --version | md5sum | cut -c1-8)
	if [[ ! -e $f ]]; then
		mkdir -p "$cache"
		if timeout -k 5 20 qemu-system-x86_64 -accel kvm -cpu max -m 256 -kernel "$kernel" \
			-append "console=ttyS0 panic=-1" -display none -no-reboot -monitor none \
			-serial stdio </dev/null 2>/dev/null | grep -q 'Kernel panic'; then
			echo yes > "$f"
		else
			echo no > "$f"
		fi
		echo "vm-run: KVM $(<"$f") on this machine (remembered in $f)" >&2
	fi
	[[ $(<"$f") == yes ]]
}

if kvm_works; then
	accel_opts= run_qemu kvm || qrc=$?
	if [[ ! -e $out/status ]] && ((qrc != 124)); then
		echo "vm-run: KVM run failed (status $qrc); retrying under TCG" >&2
		# nothing of the failed run may mix into this one's results
		rm -rf "$out/gcov"
		qrc=0
		run_qemu tcg || qrc=$?
	fi
else
	run_qemu tcg || qrc=$?
fi
secs=$((SECONDS - t0))

rc=0
if ((qrc == 124 && quiet_hit)); then
	echo "vm-run: FAIL: the guest's console printed nothing${quiet_match:+ matching '$quiet_match'} for ${quiet}s: its kernel hung" >&2
	rc=124
elif ((qrc == 124)); then
	echo "vm-run: FAIL: the guest did not power off within ${timeout}s" >&2
	rc=124
elif [[ ! -s $out/status ]]; then
	echo "vm-run: FAIL: the guest died without reporting a status (qemu: $qrc)" >&2
	rc=255
else
	rc=$(<"$out/status")
fi
# (a stuck system workqueue: say so, the splats below may say why)
[[ -e $out/poweroff-fallback ]] &&
	echo "vm-run: note: the guest's SysRq power-off never ran; init rebooted it" >&2

# Any splat fails the run, even when COMMAND passed.
log=$out/dmesg.txt
[[ -s $log ]] || log=$out/console.log
# PROFILE=kcsan: KCSAN also reports races between two parts of the core
# kernel, which are not ours to judge, even when our code is further up
# the stack. A report counts when one of its two racing accesses is in a
# kmodlab function (its title line names it); the others are kept in
# kcsan-other.txt.
if [[ ${PROFILE:-default} == kcsan && -e $log ]]; then
	awk -v other="$out/kcsan-other.txt" '
		/BUG: KCSAN:/ { inb = 1; buf = ""; mine = ($0 ~ /kml_/) }
		inb {
			buf = buf $0 "\n"
			if ($0 ~ /==========/) {
				if (mine) printf "%s", buf; else printf "%s", buf > other
				inb = 0
			}
			next
		}
		{ print }
		END { if (inb) printf "%s", buf }' "$log" > "$out/dmesg-checked.txt"
	n=$(grep -c 'BUG: KCSAN:' "$out/kcsan-other.txt" 2>/dev/null)
	echo "vm-run: ${n:-0} KCSAN reports outside kmodlab (in $out/kcsan-other.txt)" >&2
	log=$out/dmesg-checked.txt
fi
# A kernel-core reaction to an injected allocation failure, not ours: when
# a module load's trace events cannot get memory for their fields,
# event_define_fields() WARNs on the -ENOMEM (6.12's and 7.x's trace_events.c), and
# the events' files then WARN in event_file_put() at rmmod. Only after a
# selftest armed injection (selftests/kml_fault.h logs the mark; it stays
# in force for the rest of the boot, which is harmless as both are
# WARN_ON_ONCE), only these two functions: each such report, from its
# WARNING line to its end marker, goes to known-kernel-warnings.txt. A
# line that looks like another splat, or a report running past 150 lines
# without its end, ends the block early and stays in the checked log; a
# block the log leaves open is itself reported as a splat.
# What fails a run (one extended regular expression, shared with the
# filter below, which ends a known report at any of these).
splat=$(<"$here/splat.ere")
if [[ -e $log ]] && grep -q 'kmodlab: allocation-failure injection armed' "$log"; then
	awk -v known="$out/known-kernel-warnings.txt" -v stop="$splat|cut here" \
		-f "$here/known-warnings.awk" "$log" > "$out/dmesg-known.txt"
	n=$(grep -c 'WARNING:' "$out/known-kernel-warnings.txt" 2>/dev/null)
	((${n:-0})) && echo "vm-run: $n known kernel-core warnings under injected allocation failures (in $out/known-kernel-warnings.txt)" >&2
	log=$out/dmesg-known.txt
fi
if [[ -e $log ]] && grep -Eq "$splat" "$log" ||
   grep -Eq "$splat" "$out/kmemleak.txt" 2>/dev/null; then
	echo "vm-run: FAIL: the guest kernel log has a splat:" >&2
	grep -Eh -A12 "$splat" "$log" "$out/kmemleak.txt" 2>/dev/null | head -60 >&2
	((rc == 0)) && rc=125
fi
echo "vm-run: guest finished in ${secs}s with status $rc (results in $out)" >&2
exit "$rc"
