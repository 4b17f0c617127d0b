#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make check-loaded`: `make check` on a deliberately loaded host, to show
# that no test's verdict depends on host speed (a CI runner, a student's
# laptop, a busy machine). stress-ng keeps every host CPU busy at normal
# priority for the whole run, so the guest's vCPUs get about half the
# time they would otherwise.
#
#   KMODLAB_LOAD_CPUS=N   stressor threads (default: the number of CPUs)
#
# Guests get a longer time-out (KMODLAB_VM_TIMEOUT, default 3600 s here):
# a guest that still hangs then is a failure, as always.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/deps.sh" pkg=stress-ng || exit 2
cpus=${KMODLAB_LOAD_CPUS:-$(nproc)}
stress-ng --cpu "$cpus" --cpu-method matrixprod --timeout 4h --quiet &
load=$!
trap 'kill $load 2>/dev/null; wait $load 2>/dev/null' EXIT
echo "check-loaded: stress-ng --cpu $cpus (pid $load) runs beside make check"
KMODLAB_VM_TIMEOUT=${KMODLAB_VM_TIMEOUT:-3600} "$here/check.sh"
