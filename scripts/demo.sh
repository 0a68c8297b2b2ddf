#!/usr/bin/env bash
# The main job: build a kernel, boot it in QEMU and run demo/kptr_demo, which
# stores, exchanges and releases kptrs and prints each step.
#
#   demo.sh [VARIANT]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VARIANT=${1:-$VARIANT}
check_variant "$VARIANT"
RUN=$BUILD/runs/demo-$VARIANT
export VARIANT

"$ROOT/scripts/build-kernel.sh" "$VARIANT"
"$ROOT/scripts/build-tests.sh" "$VARIANT"
mkdir -p "$RUN"
echo "run_suite kptr_demo /tests/$VARIANT ./kptr_demo" > "$RUN/plan.sh"
guest_ok=0
"$ROOT/scripts/run-guest.sh" "$VARIANT" "$RUN" "$RUN/plan.sh" "$VARIANT" || guest_ok=$?
echo
cat "$RUN/kptr_demo.log" 2>/dev/null || true
if [ "$(cat "$RUN/kptr_demo.rc" 2>/dev/null)" != 0 ]; then
	echo "--- the demo failed; its stderr (libbpf and verifier log):"
	tail -40 "$RUN/kptr_demo.stderr.log" 2>/dev/null || true
	exit 1
fi
exit $guest_ok
