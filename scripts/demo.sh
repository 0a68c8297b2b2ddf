#!/usr/bin/env bash
# The main job: build a kernel, boot it in QEMU and run the demos:
#   kptr_demo   stores, exchanges and releases kptrs, printing each step
#   kptr_tasks  caches the tasks a process forks, from scheduler tracepoints,
#               and releases them on exit and on map free
#
#   demo.sh [VARIANT]
#
# Reads what build-kernel.sh, build-tests.sh and run-guest.sh read (the
# demos are demo/*.c). Writes the variant's kernel and tests (build/VARIANT)
# and build/runs/demo-VARIANT/ (console.log, each demo's output and status).
# Exit status 0 only if both demos succeeded.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VARIANT=${1:-$VARIANT}
check_variant "$VARIANT"
RUN=$BUILD/runs/demo-$VARIANT
export VARIANT

"$ROOT/scripts/build-kernel.sh" "$VARIANT"
"$ROOT/scripts/build-tests.sh" "$VARIANT"
DEMOS="kptr_demo kptr_tasks"
mkdir -p "$RUN"
for d in $DEMOS; do
	echo "run_suite $d ${SUITE_TIMEOUT:-300} /tests/$VARIANT ./$d"
done > "$RUN/plan.sh"
guest_ok=0
"$ROOT/scripts/run-guest.sh" "$VARIANT" "$RUN" "$RUN/plan.sh" "$VARIANT" || guest_ok=$?
failed=0
for d in $DEMOS; do
	echo
	cat "$RUN/$d.log" 2>/dev/null || true
	if [ "$(cat "$RUN/$d.rc" 2>/dev/null)" != 0 ]; then
		echo "--- $d failed; its stderr (libbpf and verifier log):"
		tail -40 "$RUN/$d.stderr.log" 2>/dev/null || true
		failed=1
	fi
done
[ $failed -eq 0 ] || exit 1
exit $guest_ok
