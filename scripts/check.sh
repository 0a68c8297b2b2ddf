#!/usr/bin/env bash
# The test command: run the harness's own tests (tests/harness), build every
# kernel and test set that tests/matrix needs, boot each kernel once in QEMU
# to run its suites, judge every suite (scripts/judge.py), and end with
# "N passed, N failed, N skipped" alone on the last line.
#
#   check.sh [KERNEL_VARIANT...]   (default: every kernel in tests/matrix)
#
# Exit status 0 only if nothing failed, every guest reported a verdict and no
# kernel splat was seen.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# MATRIX: another matrix file (make check-debug uses tests/matrix.debug)
MATRIX=${MATRIX:-$ROOT/tests/matrix}
RUNS=$BUILD/runs/check-$(date +%Y%m%d-%H%M%S)
# scripts/matrix.py is the one reader of the matrix; it refuses a bad row.
matrix() { python3 "$ROOT/scripts/matrix.py" "$MATRIX" "$@"; }
need python3 python3

# The judge's own tests first: a harness that cannot be trusted to count
# must not spend an hour of kernel builds (HARNESS_TESTS=0 skips them).
if [ "${HARNESS_TESTS:-1}" != 0 ]; then
	"$ROOT/tests/harness/run-tests.sh"
fi
matrix check

kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || mapfile -t kernels < <(matrix kernels)
for k in "${kernels[@]}"; do check_variant "$k"; done

# Every kernel a row needs: its own, and the ones whose tests it runs.
sources=()
for k in "${kernels[@]}"; do
	mapfile -t -O ${#sources[@]} sources < <(matrix sources "$k")
done
mapfile -t builds < <(printf '%s\n' "${kernels[@]}" "${sources[@]}" | awk '!seen[$0]++')

# Builds run one at a time: there are only two cores. Tests are built only
# for the variants whose tests some row runs.
for v in "${builds[@]}"; do
	VARIANT=$v "$ROOT/scripts/build-kernel.sh" "$v"
	if printf '%s\n' "${sources[@]}" | grep -x "$v" >/dev/null; then
		VARIANT=$v "$ROOT/scripts/build-tests.sh" "$v"
	fi
done

total_p=0 total_f=0 total_s=0
mkdir -p "$RUNS"
for k in "${kernels[@]}"; do
	run=$RUNS/$k
	mkdir -p "$run"
	matrix plan "$k" > "$run/plan.sh"
	mapfile -t srcs < <(matrix sources "$k")
	guest_ok=1
	VARIANT=$k "$ROOT/scripts/run-guest.sh" "$k" "$run" "$run/plan.sh" "${srcs[@]}" || guest_ok=0
	while IFS=$'\t' read -r suite src _ expect; do
		# one line per problem, "runner: Summary: ..." (the runner's own
		# figures, which the judge checked its count against), "P F S"
		python3 "$ROOT/scripts/judge.py" suite "$MATRIX" "$k" "$suite" "$run" > "$run/$suite.judge"
		grep '^  ' "$run/$suite.judge" || true
		read -r p f s < <(tail -1 "$run/$suite.judge")
		printf '%-9s %-20s %-9s expect %-12s %5d passed, %d failed, %d skipped  %s\n' \
			"$k" "$suite" "$src" "$expect" "$p" "$f" "$s" \
			"$(sed -n 's/^runner: //p' "$run/$suite.judge")"
		total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
	done < <(matrix rows "$k")
	if [ $guest_ok -eq 0 ]; then
		echo "$k: the guest run failed (see above); counted as one failure"
		total_f=$((total_f + 1))
	fi
done

echo "results: $RUNS"
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
