#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: build everything, boot the test kernel, load the modules and
# run each client in it (scripts/guest/demo.sh is the guest side).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
"$here/deps.sh" host kernel vm
"$here/kernel.sh" build
make -s all
exec "$here/vm-run.sh" --timeout 300 --out build/vm/demo -- scripts/guest/demo.sh
