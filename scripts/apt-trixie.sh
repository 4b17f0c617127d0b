#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# apt-get or apt-cache on Debian 13 (trixie, its updates, security and
# backports), from a Debian 12 host, without touching the host's apt:
#
#   scripts/apt-trixie.sh apt-cache search --names-only '^linux-source-'
#   scripts/apt-trixie.sh apt-get download linux-source-7.3
#
# Its sources list, package lists and package cache live in kmodlab's
# cache, so the host's `apt-get upgrade` never sees Debian 13 and nothing
# on the host is upgraded by it. It only downloads: what is installed from
# it (linux-source-7.3, which needs nothing newer than Debian 12 has) is
# installed by name with dpkg. The lists are refreshed once a day.
set -euo pipefail
cache=${KMODLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kmodlab}/apt-trixie
mirror=${KMODLAB_DEBIAN_MIRROR:-http://deb.debian.org}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

(($#)) || { echo "usage: $0 apt-get|apt-cache ARGS..." >&2; exit 2; }
case $1 in
apt-get|apt-cache) ;;
*) echo "apt-trixie.sh: runs apt-get or apt-cache, not '$1'" >&2; exit 2 ;;
esac

mkdir -p "$cache/lists/partial" "$cache/archives/partial"
# a file of its own, renamed over: two callers at once both succeed
new=$(mktemp "$cache/sources.list.XXXXXX")
cat > "$new" <<EOF
deb [signed-by=$keyring] $mirror/debian trixie main
deb [signed-by=$keyring] $mirror/debian trixie-updates main
deb [signed-by=$keyring] $mirror/debian trixie-backports main
deb [signed-by=$keyring] $mirror/debian-security trixie-security main
EOF
chmod 644 "$new"
mv "$new" "$cache/sources.list"
opts=(-o "Dir::Etc::SourceList=$cache/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$cache/lists" -o "Dir::Cache=$cache"
      -o "Dir::Cache::archives=$cache/archives" -o APT::Architecture=amd64
      -o Acquire::Languages=none -o APT::Sandbox::User=root)

# One update at a time (make check-all fetches for two kernels at once).
exec {lockfd}> "$cache/.lock"
flock "$lockfd"
stamp=$cache/lists/.kmodlab-updated
# (KMODLAB_TRIXIE_REFRESH=1: now, whatever their age)
if [[ ${KMODLAB_TRIXIE_REFRESH:-0} == 1 || -z $(find "$stamp" -mmin -1440 2>/dev/null) ]]; then
	echo "apt-trixie.sh: reading Debian 13's package lists" >&2
	apt-get "${opts[@]}" -qq update >&2
	touch "$stamp"
fi
flock -u "$lockfd"
cmd=$1
shift
exec "$cmd" "${opts[@]}" "$@"
