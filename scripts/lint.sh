#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make lint`: the static quality gates, one PASS/FAIL line each, exit 1 if
# any failed. `make check` runs the same script and counts its lines.
#   checkpatch --strict (from the cached 6.12 tree) on every kernel source
#   (the modules, the uapi headers, lab bpf's BPF programs),
#   sparse (make modules C=2), kernel-doc, the W=1 -Werror module build,
#   cppcheck, the -Wall -Wextra -Werror build of all userspace code, and
#   the man pages (man-db and groff warnings, every command documented).
# `make lint-host` (--host): all but the module build and sparse, which
# need a configured kernel tree (the test kernel's, built on first use).
set -uo pipefail
host_only=0
[[ ${1:-} == --host ]] && host_only=1
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
logs=${KMODLAB_LINT_LOGS:-build/lint}
mkdir -p "$logs"
fail=0
ok()  { echo "PASS: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

"$here/deps.sh" host kernel check || { bad "install dependencies"; exit 1; }
ksrc=$(KVER=6.12 "$here/kernel.sh" src)
[[ -x $ksrc/scripts/checkpatch.pl ]] || KVER=6.12 "$here/kernel.sh" unpack

while IFS= read -r f; do
	if "$ksrc/scripts/checkpatch.pl" --strict --no-tree --quiet --show-types \
	      --ignore SPDX_LICENSE_TAG -f "$f" > "$logs/checkpatch.txt" 2>&1; then
		ok "checkpatch $f"
	else
		cat "$logs/checkpatch.txt"
		bad "checkpatch $f"
	fi
# (bpf/: lab bpf's programs, kernel code too; its loader kml-bpf.c is
# userspace, held to -Werror by its build like the clients)
done < <(find modules uapi bpf -name '*.[ch]' ! -name 'kml-bpf.c' | sort)

# Licences (LICENSE): every source and script says which in its first
# lines: GPL-2.0, or for the uapi headers GPL-2.0 WITH Linux-syscall-note.
# Data files are exempt (kernel config fragments: their text keys the
# kernel cache; the splat pattern scripts/splat.ere, read whole as one
# regular expression; fuzz corpora; docs; Debian's packaging data, whose formats
# are fixed, and whose debian/copyright states the licences itself).
spdx_bad=$(git ls-files | grep -vE '\.(md|txt|toml|json)$|^LICENSE$|^\.gitignore$|/corpus/|^scripts/kconfig/|^scripts/splat\.ere$|^debian/(changelog|control|copyright|source/format|.*\.dkms|.*\.lintian-overrides)$' |
	while IFS= read -r f; do
		want='GPL-2.0'
		[[ $f == uapi/* ]] && want='GPL-2.0 WITH Linux-syscall-note'
		id=$(head -3 "$f" | sed -nE 's@.*SPDX-License-Identifier: (.*[^ */])[ */]*$@\1@p')
		[[ $id == "$want" ]] || echo "$f: '${id:-none}', want '$want'"
	done)
# kmodlab(4) states each device's ABI version and ioctl numbers: the
# headers' (scripts/man-abi.sh)
if abi_bad=$("$here/man-abi.sh" 2>&1); then
	ok "kmodlab(4): ABI versions and ioctl numbers as in uapi/"
else
	echo "$abi_bad"
	bad "kmodlab(4): ABI versions and ioctl numbers as in uapi/"
fi
# and the errors each device gives: the ones its header documents
if errno_bad=$("$here/doc-errno.sh" 2>&1); then
	ok "kmodlab(4), docs/modules.md: every device's error names are in its uapi header"
else
	echo "$errno_bad"
	bad "kmodlab(4), docs/modules.md: every device's error names are in its uapi header"
fi
# the numbers the documents quote are docs/measured.md's
if numbers_bad=$("$here/doc-numbers.py" 2>&1); then
	ok "the numbers the documents quote are docs/measured.md's"
else
	echo "$numbers_bad"
	bad "the numbers the documents quote are docs/measured.md's"
fi
if [[ -z $spdx_bad ]]; then
	ok "SPDX licence tags (LICENSE)"
else
	echo "$spdx_bad"
	bad "SPDX licence tags (LICENSE)"
fi

# W=1 with -Werror is how `make modules` always builds; C=2 adds sparse on
# every file whether or not it is rebuilt.
if ((host_only)); then
	echo "lint: --host: no module build and no sparse (make lint has them)"
elif make -s modules C=2 > "$logs/sparse.log" 2>&1 &&
   ! grep -E 'warning:|error:' "$logs/sparse.log"; then
	ok "W=1 -Werror build and sparse (make modules C=2)"
else
	tail -30 "$logs/sparse.log"
	bad "W=1 -Werror build and sparse (make modules C=2)"
fi

if "$ksrc/scripts/kernel-doc" -none $(find uapi modules -name '*.[ch]') bpf/kml_bpf.h \
	> "$logs/kernel-doc.log" 2>&1 && ! [[ -s $logs/kernel-doc.log ]]; then
	ok "kernel-doc"
else
	cat "$logs/kernel-doc.log"
	bad "kernel-doc"
fi

if make -s userspace selftests hosttests bench-build > "$logs/user.log" 2>&1; then
	ok "userspace, selftests, benchmarks: -std=c11 -Wall -Wextra -Werror"
else
	tail -30 "$logs/user.log"
	bad "userspace, selftests, benchmarks: -std=c11 -Wall -Wextra -Werror"
fi

# The man pages (man/): no warning from man-db's nor groff's own checks,
# and each client's page documents every command its --help lists (a
# line of its COMMANDS section starts with the command), so a new
# command without documentation fails here. Needs the clients built
# (the step above).
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
# One release everywhere: dkms.conf's (the modules, --version) is also the
# Debian package's, whose /usr/src/kmodlab-VERSION DKMS must find.
deb_version=$(sed -n '1s/^kmodlab (\(.*\)) .*/\1/p' debian/changelog)
if [[ $deb_version == "$version" ]]; then
	ok "release $version: dkms.conf and debian/changelog agree"
else
	bad "release: dkms.conf says $version, debian/changelog '$deb_version' (add an entry: dch -v $version)"
fi
man_bad=$(
	for f in man/*.[1-9]; do
		w=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 \
			"$f" 2>&1 > /dev/null; groff -man -ww -z "$f" 2>&1)
		[[ -z $w ]] || printf '%s:\n%s\n' "$f" "$w"
		# .TH carries the release (dkms.conf's, as --version and the
		# packages do) and a date no older than the page's last commit
		read -r _ _ _ date rel < <(sed -n 's/"//g; /^\.TH /{p;q}' "$f")
		[[ $rel == "kmodlab $version "* ]] ||
			echo "$f: .TH says '${rel% *}', the release is kmodlab $version (dkms.conf)"
		[[ $date =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] ||
			echo "$f: .TH date '$date' is not YYYY-MM-DD"
		last=$(git log -1 --format=%cs -- "$f" 2>/dev/null)
		[[ -z $last || ! $date < $last ]] ||
			echo "$f: .TH date $date is older than the page's last change ($last): update it"
	done
	for c in kml-stats kml-sensor kml-probe kml-ring kml-filter; do
		page=man/$c.1
		[[ -f $page ]] || { echo "$c: no man page $page"; continue; }
		help=$(build/bin/$c --help 2>&1) || { echo "$c --help failed: $help"; continue; }
		cmds=$(sed -nE 's/^  ([a-z][a-z-]*)( .*)?$/\1/p' <<< "$help" | sort -u)
		[[ -n $cmds ]] || echo "$c: no command found in --help"
		section=$(LC_ALL=C.UTF-8 MANWIDTH=80 MANPAGER=cat man -E UTF-8 -l "$page" 2>/dev/null |
			sed -n '/^COMMANDS$/,/^[A-Z]/p')
		for cmd in $cmds; do
			grep -qE "^ {7}$cmd( |\$)" <<< "$section" ||
				echo "$page: COMMANDS does not document '$cmd' (in $c --help)"
		done
	done)
if [[ -z $man_bad ]]; then
	ok "man pages: man --warnings and groff -ww clean, every client command documented, .TH release and date current"
else
	echo "$man_bad"
	bad "man pages: man --warnings and groff -ww clean, every client command documented, .TH release and date current"
fi

if cppcheck --quiet --enable=warning,performance,portability --std=c11 \
	--error-exitcode=1 -D_GNU_SOURCE -Iuapi -Iuserspace \
	userspace/*.c modules/*/*_logic.c > "$logs/cppcheck.log" 2>&1; then
	ok "cppcheck (userspace and pure logic)"
else
	cat "$logs/cppcheck.log"
	bad "cppcheck (userspace and pure logic)"
fi
exit $fail
