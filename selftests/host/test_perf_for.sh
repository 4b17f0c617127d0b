#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of scripts/perf-for.sh, which picks the perf that reads
# perf.data in the guest: this host's when it is of the kernel's series,
# else Debian 13's (scripts/trixie-root.sh perf, stubbed here: the real one
# needs root and the network). And its errors: a malformed series, no
# Debian 13 perf of the series (its reason passed on), a layer whose
# command is missing, no perf on this host. TAP output.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=selftests/host/tap.bash
source "$here/tap.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/layer"

# perf on PATH: its version line from $tmp/host-version; none: exits 127
cat > "$tmp/bin/perf" <<EOF
#!/bin/sh
[ -s $tmp/host-version ] || exit 127
echo "perf version \$(cat $tmp/host-version)"
EOF
# trixie-root.sh perf SERIES, as $tmp/mode says: ok, fail or missing
cat > "$tmp/trixie-root" <<EOF
#!/bin/sh
echo "\$*" >> $tmp/calls
case \$(cat $tmp/mode) in
ok)	echo "trixie-root.sh: debootstrap of Debian 13 (once)" >&2
	echo $tmp/layer/kmodlab-perf ;;
fail)	echo "trixie-root.sh: no perf-\$2 layer: Debian 13 has no linux-perf \$2" >&2; exit 1 ;;
missing) echo $tmp/layer/nothing-here ;;
esac
EOF
printf '#!/bin/sh\necho "perf version 7.3.4"\n' > "$tmp/layer/kmodlab-perf"
chmod +x "$tmp/bin/perf" "$tmp/trixie-root" "$tmp/layer/kmodlab-perf"

# runs perf-for.sh SERIES with host perf VERSION ("" for none) and MODE;
# its stdout in $out, stderr in $err, status in $rc, stub calls in $calls
pf() { # SERIES VERSION MODE
	printf '%s' "$2" > "$tmp/host-version"
	echo "$3" > "$tmp/mode"
	: > "$tmp/calls"
	out=$(PATH="$tmp/bin:$PATH" KMODLAB_TRIXIE_ROOT=$tmp/trixie-root \
		"$repo/scripts/perf-for.sh" "$1" 2> "$tmp/err")
	rc=$?
	err=$(< "$tmp/err") calls=$(< "$tmp/calls")
}

pf 6.1 6.1.192 fail
check "the host's perf when it is of the series (Debian 12's 6.1), no Debian 13 layer" \
	test "$rc:$out:$calls" == "0:$tmp/bin/perf:"
pf 7.3 6.1.192 ok
check "another series: Debian 13's layer (trixie-root.sh perf 7.3), its command printed alone" \
	test "$rc:$out:$calls" == "0:$tmp/layer/kmodlab-perf:perf 7.3"
pf 6.12 "" ok
check "no perf on this host: Debian 13's all the same" \
	test "$rc:$out:$calls" == "0:$tmp/layer/kmodlab-perf:perf 6.12"
# refused: status 1, nothing printed, stderr saying $1 (a glob)
# shellcheck disable=SC2053 # $1 is a glob
refused() { [[ $rc == 1 && -z $out && $err == $1 ]]; }
pf 6.2 6.1.192 fail
check "Debian 13 has no perf of the series: status 1, its reason passed on, nothing printed" \
	refused "*this host's is 6.1*Debian 13 has no linux-perf 6.2*"
pf 6.12 "" fail
check "and with no perf on this host, that is said too" refused "*this host's is not installed*"
pf 7.3 6.1.192 missing
check "a layer whose command is missing is no perf: status 1" refused "*nothing-here*"
for s in 6 "" 6.12.1 x.y "6.12 "; do
	pf "$s" 6.1.192 ok
	check "a malformed series ('$s') is a usage error (2), before any layer" \
		test "$rc:$calls" == "2:"
done
# the real trixie-root.sh refuses it too, before its cache or root is touched
KMODLAB_CACHE=$tmp/cache "$repo/scripts/trixie-root.sh" perf 6 > /dev/null 2> "$tmp/err"
rc=$? err=$(< "$tmp/err")
usage_only() { [[ $rc == 2 && $err == *MAJOR.MINOR* && ! -e $tmp/cache ]]; }
check "trixie-root.sh perf 6: status 2, says MAJOR.MINOR, no cache made" usage_only
echo "1..$n"
