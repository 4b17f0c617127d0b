#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of which stock kernel scripts/stock.sh boots
# (scripts/stock-pick.sh): fed "PACKAGE VERSION" lists such as apt gives
# for linux-image-*-cloud-amd64, it must pick Debian 13's own newest 6.12
# for deb13 (not a backport, not the newest by a string sort), the newest
# backport for deb13-bpo, and fail when nothing fits. TAP output, like
# the C host tests.
set -u
here=$(cd "$(dirname "$0")" && pwd)
pick=$(cd "$here/../.." && pwd)/scripts/stock-pick.sh

# Debian 13's lists as they were (trixie, its updates and security, and
# trixie-backports), in apt's order, with the packages the pick must skip.
trixie='linux-image-6.12.107+deb13-cloud-amd64 6.12.107-1
linux-image-6.12.117+deb13-cloud-amd64 6.12.117-1
linux-image-6.16.12+deb13-cloud-amd64 6.16.12-1~bpo13+1
linux-image-6.19.6+deb13-cloud-amd64 6.19.6-2~bpo13+1
linux-image-7.0.12+deb13-cloud-amd64 7.0.12-2~bpo13+1
linux-image-7.2.12+deb13-cloud-amd64 7.2.12-1~bpo13+1
linux-image-7.2.9+deb13-cloud-amd64 7.2.9-1~bpo13+1
linux-image-7.3.4+deb13-cloud-amd64 7.3.4-1~bpo13+1
linux-image-6.12.115+deb13-cloud-amd64 6.12.115-1
linux-image-6.12.115+deb13.1-cloud-amd64 6.12.115-2
linux-image-6.12.118+deb13-cloud-amd64 6.12.118-1
linux-image-6.12.96+deb13-cloud-amd64 6.12.96-1
linux-image-6.12.99+deb13-cloud-amd64-dbg 6.12.99-1
linux-image-6.12.119+deb13-cloud-amd64-unsigned 6.12.119-1
linux-image-cloud-amd64 6.12.119-1
linux-image-7.3-cloud-amd64 7.3.4-1~bpo13+1
linux-image-7.4.1+deb13-cloud-amd64-dbg 7.4.1-1~bpo13+1'
# Debian 12's: 6.1 its own, 6.12 from bookworm-backports (whose
# metapackage has its image's version)
bookworm='linux-image-6.12-cloud-amd64 6.12.38-1~deb12u1
linux-image-6.1.0-37-cloud-amd64 6.1.140-1
linux-image-6.1.0-41-cloud-amd64 6.1.158-1
linux-image-6.1.0-9-cloud-amd64 6.1.27-1
linux-image-6.12.12+bpo-cloud-amd64 6.12.12-1~bpo12+1
linux-image-6.12.38+deb12-cloud-amd64 6.12.38-1~deb12u1'

n=0 failed=0
# t NAME SERIES 'EXPECTED' LIST: stock-pick.sh SERIES reading LIST prints
# EXPECTED and succeeds (EXPECTED empty: prints nothing and fails).
t() {
	local name=$1 series=$2 want=$3 got rc
	got=$("$pick" "$series" <<< "$4" 2>&1)
	rc=$?
	n=$((n + 1))
	if [[ $got == "$want" ]] && { [[ -n $want ]] && ((rc == 0)) || { [[ -z $want ]] && ((rc == 1)); }; }; then
		echo "ok $n $name"
	else
		failed=$((failed + 1))
		echo "not ok $n $name"
		echo "# wanted: '$want' (status $([[ -n $want ]] && echo 0 || echo 1))"
		echo "# got:    '$got' (status $rc)"
	fi
}

echo "TAP version 13"
t deb13_newest_own_6_12 deb13 6.12.118+deb13-cloud-amd64 "$trixie"
t deb13_bpo_newest_backport deb13-bpo 7.3.4+deb13-cloud-amd64 "$trixie"
t deb13_not_a_backported_6_12 deb13 6.12.118+deb13-cloud-amd64 "$trixie
linux-image-6.12.130+deb13-cloud-amd64 6.12.130-1~bpo13+1"
t deb13_abi_bump_by_version deb13 6.12.115+deb13.1-cloud-amd64 \
	"$(grep -v -e 6.12.118 -e 6.12.117 <<< "$trixie")"
t deb13_bpo_7_10_after_7_9 deb13-bpo 7.10.1+deb13-cloud-amd64 'linux-image-7.9.3+deb13-cloud-amd64 7.9.3-1~bpo13+1
linux-image-7.10.1+deb13-cloud-amd64 7.10.1-1~bpo13+1'
t deb13_bpo_none deb13-bpo '' "$(grep -v bpo <<< "$trixie")"
t deb13_none_in_bookworm deb13 '' "$bookworm"
t bookworm_6_1 6.1 6.1.0-41-cloud-amd64 "$bookworm"
t bookworm_6_12 6.12 6.12.38+deb12-cloud-amd64 "$bookworm"
t empty_list deb13 '' ''
# a list whose last line has no newline (apt-cache's, through a pipe that
# cut it): the newest image is on that line
got=$(printf '%s' 'linux-image-7.9.3+deb13-cloud-amd64 7.9.3-1~bpo13+1
linux-image-7.10.1+deb13-cloud-amd64 7.10.1-1~bpo13+1' | "$pick" deb13-bpo 2>&1)
n=$((n + 1))
if [[ $got == 7.10.1+deb13-cloud-amd64 ]]; then
	echo "ok $n last_line_without_newline_is_read"
else
	failed=$((failed + 1))
	echo "not ok $n last_line_without_newline_is_read"
	echo "# got: '$got'"
fi
got=$("$pick" deb14 <<< "$trixie" 2>/dev/null)
rc=$?
n=$((n + 1))
if ((rc == 2)) && [[ -z $got ]]; then
	echo "ok $n unknown_series_is_a_usage_error"
else
	failed=$((failed + 1))
	echo "not ok $n unknown_series_is_a_usage_error"
	echo "# got: '$got' (status $rc)"
fi
echo "1..$n"
((failed == 0))
