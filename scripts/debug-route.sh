#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The debugging lab's two routes, end to end, on the test kernel (what
# labs/debug/README.md tells a student to do), printing PASS:/FAIL: lines:
#
#  oops  lab debug's step-1 tree oopses at its first lookup; `make decode`
#        turns the console's call trace into lines of kml_debug.c, the
#        faulting loop's among them, and ORC leaves no frame of the
#        module guessed ("? ")
#  gdb   a guest with a gdb stub (vm-run.sh --gdb); gdb in batch mode
#        (scripts/gdb.sh) loads the module's symbols with the kernel's
#        lx-symbols, stops at a breakpoint in kml_debug_lookup_set when
#        the guest writes to the parameter, shows the call and its
#        argument, and lets the guest run on
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo" || exit 1
export KVER=${KVER:-6.12} PROFILE=${PROFILE:-default}
work=$repo/build/debug-route-$KVER-$PROFILE
pass=0 fail=0
ok()  { pass=$((pass + 1)); echo "PASS: debug route: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: debug route: $*"; }
mkdir -p "$work"

# ---- oops: decode the trace of a real one
tree=$work/tree
if "$here/lab.py" gen debug --step 1 --dir "$tree" --force > "$work/gen.log" 2>&1 &&
   "$here/lab.py" build debug --dir "$tree" > "$work/build.log" 2>&1; then
	ok "lab debug's step-1 tree builds"
else
	bad "lab debug's step-1 tree does not build (see $work/*.log)"
fi
ko=$tree/modules/kml_debug/kml_debug.ko
KMODLAB_KO_DIR=$tree "$here/vm-run.sh" --no-gcov --timeout 600 --out "$repo/build/vm/debug-route-oops" \
	-- bash -c 'insmod "$KMODLAB_KO_DIR/modules/kml_debug/kml_debug.ko" &&
		    echo nosuch > /sys/module/kml_debug/parameters/lookup' > "$work/oops-vm.log" 2>&1
rc=$?
console=$repo/build/vm/debug-route-oops/console.log
# the splat vm-run reports (125), or the killed command's status: either way not 0
if ((rc != 0)) && grep -q "BUG: kernel NULL pointer dereference" "$console"; then
	ok "the step-1 tree oopses at its first lookup (a NULL dereference)"
else
	bad "the step-1 tree's lookup did not oops as the sheet says (vm-run $rc, see $console)"
fi
"$here/decode.sh" --ko-dir "$tree" < "$console" > "$work/decoded.txt" 2> "$work/decode.err"
loop=$(grep -n 'while (!kml_debug_is' "$tree/modules/kml_debug/kml_debug.c" | cut -d: -f1)
if [[ -n $loop ]] && grep -Eq "kml_debug_(find|lookup_set).*kml_debug\.c:$loop\b" "$work/decoded.txt"; then
	ok "make decode names kml_debug.c:$loop, the loop that walked off the table"
else
	bad "make decode did not name kml_debug.c:${loop:-?} (see $work/decoded.txt, $work/decode.err)"
fi
if grep -Eq '^\[ *[0-9.]+\] +kml_debug_lookup_set\+0x' "$console" &&
   ! grep -Eq '\? kml_debug_' "$console"; then
	ok "the call trace's frames of kml_debug are all certain (ORC: no '? ')"
else
	bad "the call trace has no certain kml_debug_lookup_set frame (see $console)"
fi

# ---- gdb: a breakpoint in the module, hit from the guest
sock=$work/gdb.sock out=$repo/build/vm/debug-route-gdb
rm -f "$out/ready" "$out/go"
"$here/vm-run.sh" --no-gcov --timeout 600 --gdb "$sock" --out "$out" \
	-- bash -c 'insmod "$KMODLAB_KO_DIR/modules/kml_debug/kml_debug.ko" || exit 1
		    echo > "$KMODLAB_OUT/ready"
		    # gdb attaches (the guest stops), sets its breakpoint, then says go
		    until [[ -e $KMODLAB_OUT/go ]]; do sleep 0.2; done
		    echo fan > /sys/module/kml_debug/parameters/lookup &&
		    cat /sys/module/kml_debug/parameters/lookup && rmmod kml_debug' \
	> "$work/gdb-vm.log" 2>&1 &
vm=$!
for _ in $(seq 600); do
	[[ -e $out/ready ]] && break
	kill -0 "$vm" 2>/dev/null || break
	sleep 0.5
done
if [[ -e $out/ready ]]; then
	KMODLAB_GDB_SOCK=$sock timeout 300 "$here/gdb.sh" -batch \
		-ex "lx-symbols $repo/build/kmod/$KVER-$PROFILE/modules/kml_debug" \
		-ex 'break kml_debug_lookup_set' -ex "shell touch $out/go" \
		-ex continue -ex bt -ex 'print val' -ex delete -ex detach \
		> "$work/gdb.log" 2>&1
	grc=$?
else
	grc=-1
	touch "$out/go"
fi
wait "$vm"
vrc=$?
if ((grc == 0)) && grep -q 'loading @0x.*kml_debug' "$work/gdb.log"; then
	ok "lx-symbols loads kml_debug's symbols where the guest put them"
else
	bad "lx-symbols did not load kml_debug (gdb $grc, see $work/gdb.log)"
fi
if grep -Eq '(^|hit )Breakpoint 1, kml_debug_lookup_set \(val=.*"fan' "$work/gdb.log" &&
   grep -Eq '^#[0-9]+ .*param_attr_store' "$work/gdb.log" &&
   grep -Eq '^\$1 = .*"fan' "$work/gdb.log"; then
	ok "a breakpoint in kml_debug_lookup_set stops the guest's write, with its argument and caller"
else
	bad "the breakpoint was not hit as expected (see $work/gdb.log)"
fi
if ((vrc == 0)) && grep -q '^fan 1200' "$out/console.log"; then
	ok "the guest runs on after gdb detaches, and the lookup completes"
else
	bad "the guest did not finish after gdb detached (vm-run $vrc, see $out/console.log)"
fi
echo "debug route: $pass passed, $fail failed"
((fail == 0))
