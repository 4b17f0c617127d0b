#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`, guest side: load each kmodlab module and drive its client,
# narrating as it goes, so a newcomer sees the whole path work once.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
ko=$repo/build/kmod/${KVER:-6.12}-${PROFILE:-default}/modules
bin=$repo/build/bin
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { say "$*"; "$@"; }

echo "kmodlab demo on Linux $(uname -r)"

run insmod "$ko/kml_stats/kml_stats.ko" demo_counters=4
run ls -l /proc/kmodlab
run head -8 /proc/kmodlab/stats
run "$bin/kml-stats"
run "$bin/kml-stats" --json demo/values
say "kml-stats -w 1 -c 3 kml_stats   # per-second rates while something reads the file"
(for _ in $(seq 30); do cat /proc/kmodlab/stats > /dev/null; sleep 0.1; done) &
"$bin/kml-stats" -w 1 -c 3 kml_stats
wait
run "$bin/kml-stats" reset demo
run "$bin/kml-stats" demo/c
say "setpriv --reuid=nobody $bin/kml-stats reset   # unprivileged: refused"
setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/kml-stats" reset || echo "(exit status $?)"

echo
echo "== kml_sensor: an ioctl character device (and hwmon) =="
run insmod "$ko/kml_sensor/kml_sensor.ko" channels=3
run "$bin/kml-sensor" info
run "$bin/kml-sensor" read
run "$bin/kml-sensor" period 200
run "$bin/kml-sensor" watch -c 3
run "$bin/kml-sensor" alarm set 0 2 6
run "$bin/kml-sensor" alarm get
say "kml-sensor wait -t 5   # while another process injects 9.5 C into probe0"
(sleep 1; "$bin/kml-sensor" inject 0 9.5) &
"$bin/kml-sensor" wait -t 5
wait
run "$bin/kml-sensor" --json read 0
say "sensors kml_sensor-*   # lm-sensors sees the same readings through hwmon"
sensors 'kml_sensor-*' 2>/dev/null || cat /sys/class/hwmon/hwmon*/temp*_input
say "setpriv --reuid=nobody $bin/kml-sensor inject 0 20   # unprivileged: refused"
setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/kml-sensor" inject 0 20 || echo "(exit status $?)"
run "$bin/kml-stats" kml_sensor/ioctl

echo
echo "== kml_probe: kretprobe latency of a real kernel function =="
run insmod "$ko/kml_probe/kml_probe_target.ko"
run insmod "$ko/kml_probe/kml_probe.ko"
run "$bin/kml-probe" attach vfs_read --args 3
run "$bin/kml-probe" attach kml_probe_target --args 3
say "reading files for a moment (cat, dd, find)..."
for _ in $(seq 20); do cat /proc/kmodlab/stats > /dev/null; done
dd if=/dev/zero of=/dev/null bs=4k count=2000 2>/dev/null
find /usr/share/doc -maxdepth 2 -name 'copyright' -exec head -c 100 {} + > /dev/null
run "$bin/kml-probe" hist vfs_read
run "$bin/kml-probe" call 10 200 2
run "$bin/kml-probe" hist kml_probe_target
run "$bin/kml-probe" list
run "$bin/kml-stats" kp.vfs_read
run "$bin/kml-probe" attach no_such_function
run rmmod kml_probe kml_probe_target

echo
echo "== kml_ring: records streaming through shared pages =="
run insmod "$ko/kml_ring/kml_ring.ko"
run "$bin/kml-ring" produce --size 64 --rate 5 --count 5 --print
run "$bin/kml-ring" produce --size 256 --rate 0 --seconds 2 --watermark 16384
run "$bin/kml-ring" --json produce --size 4096 --rate 0 --seconds 1 --pages 256 --watermark 262144
run "$bin/kml-ring" stat
echo
echo "== kml_probe into kml_ring: every call recorded (perf record, in miniature) =="
run insmod "$ko/kml_probe/kml_probe_target.ko"
run insmod "$ko/kml_probe/kml_probe.ko"
run "$bin/kml-probe" record -o "${TMPDIR:-/tmp}/kml-probe.data" -a 3 kml_probe_target -- \
	"$bin/kml-probe" call 200 20 2
run "$bin/kml-probe" report --top 3 "${TMPDIR:-/tmp}/kml-probe.data"
run rmmod kml_probe kml_probe_target
run rmmod kml_ring

echo
echo "== kml_filter: a netfilter hook, per network namespace =="
run insmod "$ko/kml_filter/kml_filter.ko"
say "two namespaces joined by a veth pair: kml-a 10.99.0.1, kml-b 10.99.0.2"
ip netns add kml-a
ip netns add kml-b
ip link add va netns kml-a type veth peer name vb netns kml-b
ip -n kml-a addr add 10.99.0.1/24 dev va
ip -n kml-b addr add 10.99.0.2/24 dev vb
for ns in kml-a kml-b; do
	ip -n "$ns" link set lo up
	ip -n "$ns" link set "v${ns#kml-}" up
done
say "ip netns exec kml-a python3 -m http.server 8080 &   # a web server in kml-a"
ip netns exec kml-a python3 -m http.server 8080 --bind 10.99.0.1 > /dev/null 2>&1 &
web=$!
fetch() { # HTTP GET from kml-b, 3 s at most
	say "ip netns exec kml-b: GET http://10.99.0.1:8080/"
	ip netns exec kml-b timeout 3 bash -c \
		'exec 3<>/dev/tcp/10.99.0.1/8080 && printf "GET / HTTP/1.0\r\n\r\n" >&3 && head -1 <&3' ||
		echo "(no answer: timed out)"
}
for _ in $(seq 50); do
	ip netns exec kml-a bash -c ': < /dev/tcp/10.99.0.1/8080' 2> /dev/null && break
	sleep 0.2
done
fetch
run ip netns exec kml-a "$bin/kml-filter" add drop in tcp dport 8080
run ip netns exec kml-a "$bin/kml-filter" add accept in icmp
fetch
run ip netns exec kml-a "$bin/kml-filter" list -v
run ip netns exec kml-b "$bin/kml-filter" list -v
say "kml-b has no rules: its own traffic is its own business"
cat > /run/kml-rules <<'RULES'
# a whole rule set, applied at once
policy drop
accept in tcp src 10.99.0.0/24 dport 8080
accept out
accept in icmp
RULES
run cat /run/kml-rules
run ip netns exec kml-a "$bin/kml-filter" load /run/kml-rules
fetch
run ip netns exec kml-a "$bin/kml-filter" --json list
run ip netns exec kml-a "$bin/kml-filter" add drop tcp dport 99999
run "$bin/kml-stats" kml_filter

echo
echo "== tracing: the modules' tracepoints, and the kernel's own tools on them =="
t=/sys/kernel/tracing
[[ -e $t/instances ]] || mount -t tracefs nodev "$t"
run cat "$t/events/kml_filter/verdict/format"
if command -v perf > /dev/null; then
	run perf list 'kml_sensor:*'
	say "perf record -a -e kml_filter:verdict -- <GET from kml-b>; perf script"
	perf record -q -a -e kml_filter:verdict -o /run/perf.data -- \
		ip netns exec kml-b timeout 3 bash -c ': < /dev/tcp/10.99.0.1/8080' 2> /dev/null
	perf script -i /run/perf.data 2> /dev/null | head -6
fi
say "echo 'hist:keys=rule,verdict:vals=hitcount,len if dport == 8080' > $t/events/kml_filter/verdict/trigger"
echo 'hist:keys=rule,verdict:vals=hitcount,len if dport == 8080' > "$t/events/kml_filter/verdict/trigger"
fetch
fetch
run cat "$t/events/kml_filter/verdict/hist"
echo '!hist:keys=rule,verdict:vals=hitcount,len if dport == 8080' > "$t/events/kml_filter/verdict/trigger"
if command -v bpftrace > /dev/null; then
	say "bpftrace -e 'tracepoint:kml_sensor:sample { @[args->channel] = hist(args->value_mc); }' -c '/usr/bin/sleep 2'"
	bpftrace -e 'tracepoint:kml_sensor:sample { @[args->channel] = hist(args->value_mc); }' \
		-c '/usr/bin/sleep 2' 2>&1 | grep -v '^Attaching'
fi
kill "$web"
wait "$web" 2> /dev/null
ip netns del kml-a
ip netns del kml-b
run rmmod kml_filter
run rmmod kml_sensor kml_stats
say "$bin/kml-stats; $bin/kml-sensor read   # modules gone: clear errors"
"$bin/kml-stats" || echo "(exit status $?)"
"$bin/kml-sensor" read || echo "(exit status $?)"
"$bin/kml-ring" produce || echo "(exit status $?)"
"$bin/kml-filter" list || echo "(exit status $?)"
echo
echo "demo finished"
