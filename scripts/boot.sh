#!/usr/bin/env bash
# The daily loop's guest: build a variant's kernel and tests if needed, boot
# it in QEMU, and either
#
#   boot.sh shell [VARIANT]       give a shell on the console (make shell),
#                                 in /tests/VARIANT, bpftool in PATH; 'exit'
#                                 or Ctrl-A x ends it
#   boot.sh run [VARIANT] CMD     run CMD there with sh (make run CMD=...),
#                                 print its output (stdout and stderr as
#                                 they came) and exit status, exit with it
#
# Reads what build-kernel.sh, build-tests.sh and run-guest.sh read. Writes
# build/runs/shell-VARIANT/ or build/runs/run-VARIANT/ (console.log, the
# command's run.log and run.rc). RUN_TIMEOUT: CMD's limit (default 600 s).
# A kernel splat, or a guest that never reported, fails the run even if
# CMD succeeded.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

what=${1:-}
shift || true
case "$what" in
shell) [ $# -le 1 ] || die "usage: boot.sh shell [VARIANT]" ;;
run) [ $# -ge 1 ] && [ $# -le 2 ] || die "usage: boot.sh run [VARIANT] CMD" ;;
*) die "usage: boot.sh shell [VARIANT] | boot.sh run [VARIANT] CMD" ;;
esac
if [ $# -eq 2 ] || { [ "$what" = shell ] && [ $# -eq 1 ]; }; then
	VARIANT=$1
	shift
fi
check_variant "$VARIANT"
export VARIANT
RUN=$BUILD/runs/$what-$VARIANT
mkdir -p "$RUN"

"$ROOT/scripts/build-kernel.sh" "$VARIANT"
"$ROOT/scripts/build-tests.sh" "$VARIANT"

# a word for busybox sh's plan: single-quoted, its own quotes escaped
quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

if [ "$what" = shell ]; then
	echo "console_shell /tests/$VARIANT" > "$RUN/plan.sh"
	GUEST_CONSOLE=stdio "$ROOT/scripts/run-guest.sh" "$VARIANT" "$RUN" "$RUN/plan.sh" "$VARIANT"
	exit
fi

echo "run_suite run ${RUN_TIMEOUT:-600} /tests/$VARIANT sh -c $(quote "exec 2>&1; $1")" > "$RUN/plan.sh"
guest_ok=0
"$ROOT/scripts/run-guest.sh" "$VARIANT" "$RUN" "$RUN/plan.sh" "$VARIANT" || guest_ok=$?
echo "--- output of: $1"
cat "$RUN/run.log" 2>/dev/null || true
rc=$(cat "$RUN/run.rc" 2>/dev/null || echo none)
if [ -f "$RUN/run.timeout" ]; then
	echo "--- timed out after $(cat "$RUN/run.timeout") s (RUN_TIMEOUT), killed"
	exit 124
fi
echo "--- exit status: $rc"
[ "$rc" != none ] || exit 1
[ "$guest_ok" -eq 0 ] || { echo "--- the guest run failed (see above): status 1"; exit 1; }
exit "$rc"
