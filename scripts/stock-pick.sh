#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Which Debian cloud kernel scripts/stock.sh boots, from what apt offers.
#   scripts/stock-pick.sh SERIES < LINES
# LINES are "PACKAGE VERSION" (each linux-image-*-cloud-amd64 and its
# candidate version); prints the chosen image's ABI (the package name
# without linux-image-), or fails if none fits. SERIES:
#   6.1, 6.12   Debian 12's lists: the newest of that upstream series
#               (its 6.12 is a backport: the version alone decides)
#   deb13       Debian 13's own kernel: the newest 6.12 whose version is
#               not a backport's (no "bpo": trixie-backports also carries
#               +deb13 ABIs, and may carry a 6.12 one)
#   deb13-bpo   the newest of trixie-backports (~bpo13 in its version)
# Newest in dpkg's order, as apt compares them: 6.12.118 after 6.12.96,
# 7.10 after 7.9, 6.12.115-2 after 6.12.115-1.
# Apart from stock.sh so that selftests/host/test_stock_pick.sh can feed
# it lists.
set -euo pipefail
series=${1:-}
case $series in
6.1|6.12|deb13|deb13-bpo) ;;
*) echo "usage: stock-pick.sh 6.1|6.12|deb13|deb13-bpo < 'PACKAGE VERSION' lines" >&2; exit 2 ;;
esac

fits() { # $1 = ABI, $2 = version
	case $series in
	6.1|6.12)	[[ $2 == "$series".* ]] ;;
	deb13)		[[ $2 == 6.12.* && $2 != *bpo* && $1 == *+deb13* ]] ;;
	deb13-bpo)	[[ $2 == *~bpo13* ]] ;;
	esac
}

best='' bestv=''
while read -r p v _ || [[ -n ${p:-} ]]; do
	# the images themselves, not -dbg, -unsigned or a metapackage
	# (bookworm-backports' linux-image-6.12-cloud-amd64 has the version of
	# the image it depends on: the ABI has a patch level, 6.12.117+deb12)
	[[ $p =~ ^linux-image-([0-9]+\.[0-9]+\.[0-9][^[:space:]]*-cloud-amd64)$ && -n $v ]] || continue
	fits "${BASH_REMATCH[1]}" "$v" || continue
	if [[ -z $best ]] || dpkg --compare-versions "$v" gt "$bestv"; then
		best=${p#linux-image-} bestv=$v
	fi
done
[[ -n $best ]] || exit 1
echo "$best"
