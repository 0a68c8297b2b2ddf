#!/usr/bin/env bash
# The test command: build every kernel and test set that tests/matrix needs,
# boot each kernel once in QEMU to run its suites, judge every suite, and end
# with "N passed, N failed, N skipped" alone on the last line.
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
rows() { grep -v '^[[:space:]]*#' "$MATRIX" | grep -v '^[[:space:]]*$'; }

kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || mapfile -t kernels < <(rows | awk '{print $1}' | awk '!seen[$0]++')
for k in "${kernels[@]}"; do check_variant "$k"; done

# Every kernel a row needs: its own, and the ones whose tests it runs.
sources=()
for k in "${kernels[@]}"; do
	mapfile -t -O ${#sources[@]} sources < <(rows | awk -v k="$k" '$1 == k {print $3}')
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
	# each suite's time limit in the guest (guest/init's run_suite)
	rows | awk -v k="$k" -v limit="${SUITE_TIMEOUT:-300}" '$1 == k {
		printf "run_suite %s %s /tests/%s", $2, limit, $3
		for (i = 6; i <= NF; i++) printf " %s", $i
		printf "\n" }' > "$run/plan.sh"
	mapfile -t srcs < <(rows | awk -v k="$k" '$1 == k {print $3}' | sort -u)
	guest_ok=1
	VARIANT=$k "$ROOT/scripts/run-guest.sh" "$k" "$run" "$run/plan.sh" "${srcs[@]}" || guest_ok=0
	while read -r _ suite src kind expect _; do
		known=$ROOT/tests/known-failures/$kind
		if [ -f "$run/$suite.log" ]; then
			read -r p f s < <("$ROOT/scripts/judge.sh" "$kind" "$run/$suite.log" "$expect" "$known" |
				tee "$run/$suite.judge" | tail -1)
			grep -v '^[0-9]* [0-9]* [0-9]*$' "$run/$suite.judge" || true
		else
			echo "  suite $suite produced no output"
			p=0 f=1 s=0
		fi
		printf '%-9s %-20s %-9s expect %-12s %5d passed, %d failed, %d skipped\n' \
			"$k" "$suite" "$src" "$expect" "$p" "$f" "$s"
		total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
	done < <(rows | awk -v k="$k" '$1 == k')
	if [ $guest_ok -eq 0 ]; then
		echo "$k: the guest run failed (see above); counted as one failure"
		total_f=$((total_f + 1))
	fi
done

echo "results: $RUNS"
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
