#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host test of `make check-all`'s plan and of `make readme-matrix`:
# every kernel the README's matrix promises is in CI's plan, each part in
# exactly one lane, and the matrix is copied between the README's markers
# and nowhere else. TAP output; run by `make check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=selftests/host/tap.bash
. "$here/tap.bash"

plan() { KMODLAB_CHECK_ALL_PLAN=1 "$repo/scripts/check-all.sh" "$@"; }
ci=$(plan) full=$(plan full) one=$(KMODLAB_LANES=1 plan)
ids() { sed -n 's/^queue: //p' <<< "$1" | tr ' ' '\n' | grep . | sort; }
check "check-all: its plan prints" test -n "$ci"
for id in 6.12 labs lab-mistakes debug stock-6.1 stock-deb13-bpo; do
	check "check-all (CI) runs part $id" grep -qx "$id" <(ids "$ci")
done
check "check-all: no part runs twice" test -z "$(ids "$ci" | uniq -d)"
check "check-full: no part runs twice" test -z "$(ids "$full" | uniq -d)"
for id in 6.1 7.3 7.3-per-test stock-6.12 stock-6.1-guests stock-deb13; do
	check "check-full adds $id, CI does not" \
		bash -c 'grep -qx "$1" <<< "$2" && ! grep -qx "$1" <<< "$3"' _ "$id" "$(ids "$full")" "$(ids "$ci")"
done
check "check-all: KMODLAB_LANES=1 is one lane" grep -qx "lanes: 1" <<< "$one"
only=$(KMODLAB_CHECK_ALL_ONLY="stock-6.12 7.3" plan full)
check "check-full: KMODLAB_CHECK_ALL_ONLY keeps those parts, in the queue's order" \
	grep -qx "queue: 7.3 stock-6.12" <<< "$only"
check "check-all: KMODLAB_CHECK_ALL_ONLY naming no part of the queue is refused (2)" \
	bash -c 'KMODLAB_CHECK_ALL_PLAN=1 KMODLAB_CHECK_ALL_ONLY="7.3" "$1" > /dev/null 2>&1; test $? -eq 2' _ \
	"$repo/scripts/check-all.sh"
check "check-all: two lanes by default" grep -qx "lanes: 2" <<< "$ci"

# The lanes share out the queue: three lanes over check-full's parts
# (stubs that take 0 to 0.3 s), each part run once, all in the table.
fake() {
	KMODLAB_CHECK_ALL_FAKE=1 KMODLAB_CHECK_ALL_OUT="$tmp/$1" KMODLAB_LANES=$2 \
		"$repo/scripts/check-all.sh" full > "$tmp/$1.out" 2>&1
}
fake three 3
check "check-all (stub parts, 3 lanes): exits 0" test $? -eq 0
check "check-all (stub parts, 3 lanes): each part ran exactly once" \
	test "$(sort "$tmp/three/ran" 2>/dev/null)" == "$(ids "$full")"
check "check-all (stub parts, 3 lanes): the table has a row per part" \
	test "$(grep -c ' | 1 passed, 0 failed, 0 skipped | ' "$tmp/three/matrix.md")" -eq "$(ids "$full" | wc -l)"
check "check-all (stub parts, 3 lanes): the last line adds them up" \
	test "$(tail -n 1 "$tmp/three.out")" == "$(ids "$full" | wc -l) passed, 0 failed, 0 skipped"
fake one 1
check "check-all (stub parts, 1 lane): runs them in the queue's order" \
	test "$(cat "$tmp/one/ran" 2>/dev/null)" == "$(sed -n 's/^queue: //p' <<< "$full" | tr ' ' '\n')"

# A part that fails, and one that ends without its summary line: both
# count as failed, the others still run, and check-all exits 1.
cat > "$tmp/stub" <<'EOF'
#!/bin/bash
echo "$1" >> "$2/ran"
case $1 in
labs)	echo "FAIL: something"; echo "3 passed, 1 failed, 0 skipped"; exit 1 ;;
debug)	echo "the guest died"; exit 2 ;;
*)	echo "2 passed, 0 failed, 1 skipped" ;;
esac
EOF
chmod +x "$tmp/stub"
KMODLAB_CHECK_ALL_FAKE=$tmp/stub KMODLAB_CHECK_ALL_OUT="$tmp/bad" "$repo/scripts/check-all.sh" > "$tmp/bad.out" 2>&1
check "check-all (a part fails, one has no summary): exits 1" test $? -eq 1
check "check-all (a part fails): every part still ran" \
	test "$(sort "$tmp/bad/ran" 2>/dev/null)" == "$(ids "$ci")"
check "check-all (a part fails): its row counts its failure" grep -q '| 3 passed, 1 failed, 0 skipped |' "$tmp/bad/matrix.md"
check "check-all (no summary line): the part counts as failed" \
	bash -c 'grep -q "^| 6.12 debug .* | 0 passed, 1 failed, 0 skipped |" "$1" &&
		grep -q "FAIL: debug ended without a summary line" "$2"' _ "$tmp/bad/matrix.md" "$tmp/bad.out"
others=$(($(ids "$ci" | wc -l) - 2))
check "check-all (a part fails): the last line adds up" \
	test "$(tail -n 1 "$tmp/bad.out")" == "$((3 + 2 * others)) passed, 2 failed, $others skipped"

# Interrupted, it takes down what it started, even a process in a
# process group of its own (as vm-run's timeout puts QEMU).
cat > "$tmp/slow" <<'EOF'
#!/bin/bash
setsid sleep 300 &
echo $! >> "$2/sleepers"
wait
EOF
chmod +x "$tmp/slow"
KMODLAB_CHECK_ALL_FAKE=$tmp/slow KMODLAB_CHECK_ALL_OUT="$tmp/int" "$repo/scripts/check-all.sh" > "$tmp/int.out" 2>&1 &
ca=$!
for _ in $(seq 100); do
	[[ -f $tmp/int/sleepers && $(wc -l < "$tmp/int/sleepers") -ge 2 ]] && break
	sleep 0.1
done
kill -TERM "$ca"
wait "$ca"
rc=$?
sleep 0.5
# alive: not gone, nor a zombie waiting for init to reap it
alive=0
while read -r p; do
	st=$(ps -o stat= -p "$p")
	[[ -n $st && $st != Z* ]] && alive=$((alive + 1)) && kill "$p"
done < "$tmp/int/sleepers"
check "check-all (TERM): stops with 130" test "$rc" -eq 130
check "check-all (TERM): both lanes' processes are gone, own process groups too" \
	test "$(wc -l < "$tmp/int/sleepers")" -eq 2 -a "$alive" -eq 0
check "check-all: the 6.12 part runs make check whole (host parts once)" \
	bash -c 'grep "^part: 6.12|" <<< "$1" | grep -vq KMODLAB_CHECK_PARTS' _ "$ci"
check "check-all: no other part runs the host checks" \
	bash -c '! grep "^part: " <<< "$1" | grep -v "^part: 6.12|" | grep "check.sh$" |
		grep -qvE "KMODLAB_CHECK_PARTS=[a-z0-9,]+ " &&
		! grep "^part: " <<< "$1" | grep -v "^part: 6.12|" | grep -qE "KMODLAB_CHECK_PARTS=[a-z0-9,]*(host|runner)"' _ "$ci"
check "check-all: the debug kernel's guest is in CI" grep -q '^part: debug|.*PROFILE=debug' <<< "$ci"
# The issue's promise: CI has a 7.x kernel and a Debian 13 one.
check "check-all: a 7.x kernel and a Debian 13 kernel are in CI" \
	bash -c 'grep "^part: " <<< "$1" | grep -q "|Debian 13 backports cloud 7.x|.*STOCK=deb13-bpo"' _ "$ci"

# make readme-matrix on a README of our own
cat > "$tmp/matrix.md" <<'EOF'
| kernel | built as | what ran | result | seconds |
|---|---|---|---|---|
| 7.3 | test kernel | selftests | 3 passed, 0 failed, 0 skipped | 9 |
EOF
begin='<!-- kernel-matrix: begin (make readme-matrix writes this from the last make check-all) -->'
end='<!-- kernel-matrix: end -->'
printf '%s\n' '# t' before "$begin" 'old row' "$end" after > "$tmp/README.md"
"$repo/scripts/readme-matrix.sh" "$tmp/matrix.md" "$tmp/README.md" 2> /dev/null
check "readme-matrix: the table replaces what stood between the markers" \
	test "$(sed -n "/^<!-- kernel-matrix: begin/,/^<!-- kernel-matrix: end/p" "$tmp/README.md" | sed '1d;$d')" == "$(cat "$tmp/matrix.md")"
check "readme-matrix: the text around it is kept" \
	bash -c 'head -2 "$1" | grep -qx before && tail -1 "$1" | grep -qx after && ! grep -q "old row" "$1"' _ "$tmp/README.md"
cp "$tmp/README.md" "$tmp/once"
"$repo/scripts/readme-matrix.sh" "$tmp/matrix.md" "$tmp/README.md" 2> /dev/null
check "readme-matrix: a second run changes nothing" cmp -s "$tmp/once" "$tmp/README.md"
printf '%s\n' '# t' "$begin" after > "$tmp/nomark.md"
check "readme-matrix: a README without its end marker is refused, untouched" \
	bash -c '! "$1" "$2" "$3" 2>/dev/null && test "$(wc -l < "$3")" == 3' _ \
	"$repo/scripts/readme-matrix.sh" "$tmp/matrix.md" "$tmp/nomark.md"
check "readme-matrix: no matrix file is refused" \
	bash -c '! "$1" "$2/none.md" "$2/README.md" 2>/dev/null' _ "$repo/scripts/readme-matrix.sh" "$tmp"
check "README.md has one pair of kernel-matrix markers" \
	test "$(grep -cxF "$begin" "$repo/README.md"):$(grep -cxF "$end" "$repo/README.md")" == "1:1"
echo "1..$n"
