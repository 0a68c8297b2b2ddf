#!/usr/bin/env bash
# The test command: run the harness's own tests (tests/harness), build every
# kernel and test set that tests/matrix needs, boot each kernel once in QEMU
# to run its suites, judge every suite (scripts/judge.py), and end with
# "N passed, N failed, N skipped" alone on the last line.
#
#   check.sh [KERNEL_VARIANT...]   (default: every kernel in tests/matrix;
#                                   with SUITES, only VARIANT: patched)
#
# SUITES="kptr_maps kptr_objs": only these suites of the matrix, and only the
# kernels and tests they need (the daily loop; the harness's tests are
# skipped then). TEST_FILTER: the test_progs -t selection of the chosen
# test_progs rows (e.g. 'kptr_maps/hash*'). MATRIX: another matrix file
# (make check-debug uses tests/matrix.debug).
#
# Reads: the matrix and everything it names; builds what it needs with
# build-kernel.sh and build-tests.sh. Writes: build/runs/check-DATE/KERNEL/
# (console.log, each suite's log, exit status and SUITE.judge, results.ktap),
# build/runs/check-DATE/results.ktap (every kernel's results in KTAP, the
# kernel selftests' format) and build/results.ktap, a link to the latest.
#
# Exit status 0 only if nothing failed, every guest reported a verdict and no
# kernel splat was seen.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

MATRIX=${MATRIX:-$ROOT/tests/matrix}
RUNS=$BUILD/runs/check-$(date +%Y%m%d-%H%M%S)
# scripts/matrix.py is the one reader of the matrix; it refuses a bad row.
matrix() { python3 "$ROOT/scripts/matrix.py" "$MATRIX" "$@"; }
need python3 python3
# shellcheck disable=SC2206
suites=(${SUITES:-})

# The judge's own tests first: a harness that cannot be trusted to count
# must not spend an hour of kernel builds (HARNESS_TESTS=0 skips them).
if [ "${HARNESS_TESTS:-$([ ${#suites[@]} -eq 0 ] && echo 1 || echo 0)}" != 0 ]; then
	"$ROOT/tests/harness/run-tests.sh"
fi
matrix check

kernels=("$@")
if [ ${#kernels[@]} -eq 0 ]; then
	if [ ${#suites[@]} -gt 0 ]; then
		kernels=("$VARIANT")
	else
		mapfile -t kernels < <(matrix kernels)
	fi
fi
for k in "${kernels[@]}"; do
	check_variant "$k"
	matrix rows "$k" "${suites[@]}" >/dev/null	# says which suites it has
done

# Every kernel a row needs: its own, and the ones whose tests it runs.
sources=()
for k in "${kernels[@]}"; do
	mapfile -t -O ${#sources[@]} sources < <(matrix sources "$k" "${suites[@]}")
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
runs=()
mkdir -p "$RUNS"
for k in "${kernels[@]}"; do
	run=$RUNS/$k
	runs+=("$run")
	mkdir -p "$run"
	matrix plan "$k" "${suites[@]}" > "$run/plan.sh"
	mapfile -t srcs < <(matrix sources "$k" "${suites[@]}")
	guest_failed=()
	VARIANT=$k "$ROOT/scripts/run-guest.sh" "$k" "$run" "$run/plan.sh" "${srcs[@]}" ||
		guest_failed=(--guest-failed)
	# one line per suite, its problems above it, "runner: Summary: ..."
	# the runner's own figures (which the judge checked its count against)
	python3 "$ROOT/scripts/judge.py" kernel "$MATRIX" "$k" "$run" "${guest_failed[@]}" "${suites[@]}"
	read -r p f s < "$run/totals"
	total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
done

python3 "$ROOT/scripts/judge.py" ktap "$RUNS/results.ktap" "${runs[@]}"
ln -sfn "${RUNS#"$BUILD"/}/results.ktap" "$BUILD/results.ktap"
echo "results: $RUNS (KTAP: $BUILD/results.ktap)"
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
