#!/usr/bin/env bash
# make check-full: upstream 6.1's own BPF selftests, all of them, on
# upstream 6.1 and on our series, both built with the configuration those
# selftests are meant for, and a parity table of the two.
#
#   check-full.sh [KERNEL...]     (default: upstream-full patched-full)
#
# Builds the upstream-full and patched-full kernels (build-kernel.sh: our
# config fragment plus the tree's tools/testing/selftests/bpf/config and
# config.x86_64), upstream 6.1's test_progs, test_maps and test_verifier
# once (build-tests.sh upstream-full) and, for patched-full, a copy of them
# with a bpf_testmod.ko of its own kernel build (a module's BTF only fits
# the vmlinux it was built against). Upstream's tests, unchanged, judge
# both kernels: our own suites run in make check.
#
# Every test_progs test runs alone (./test_progs -a NAME) under the guest's
# time limit (FULL_TEST_TIMEOUT, default 600 s), test_maps and test_verifier
# as one suite each. A guest that dies (panic, a hang of the whole machine,
# no verdict) is booted again with the suites it had not finished; the one
# it was running is recorded as crashed (SUITE.crashed) and not run again.
# A kernel's suites run in the background as soon as its tests are built,
# beside the next kernel's build (run-KERNEL.log has their progress); our
# own suites and the clients run beside them once every kernel is built
# (others.log).
#
# Then our own suites (tests/matrix's patched rows on the patched tree's
# tests) run on patched-full, judged as make check judges them, and the
# real clients on each kernel (scripts/check-clients.sh).
#
# Reads: the variants' trees and builds, tests/full-denylist (tests that
# cannot run in this guest, with why). Writes build/runs/full-DATE/KERNEL/
# (bootN/: each boot's console and reports; the suites' merged NAME.log,
# NAME.rc, NAME.timeout, NAME.crashed), build/parity.md (scripts/parity.py)
# and build/runs/full-DATE/times (build and run seconds per kernel).
# Exit status 0 when no case that passes on upstream-full fails on
# patched-full (parity.py says what else it checks).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

need python3 python3
# FULL_RUNS: go on with an earlier run's dir: a kernel whose suites all ran
# there is not run again, one interrupted goes on with the suites it had
# left at the start of its unfinished boot.
RUNS=${FULL_RUNS:-$BUILD/runs/full-$(date +%Y%m%d-%H%M%S)}
TEST_TIMEOUT=${FULL_TEST_TIMEOUT:-600}
MAX_BOOTS=${FULL_MAX_BOOTS:-12}
# reruns of a regressed test on each kernel (see rerun_regressions)
RERUNS=${FULL_RERUNS:-10}
# shellcheck disable=SC2206
KERNELS=(${*:-upstream-full patched-full})
# Host tools the selftests call that busybox does not have in the form
# they need (ip netns, tc qdisc/filter with BPF): iproute2's, with their
# libraries, put in the guest's /bin; dash as /bin/sh, which runs them
# (busybox's sh would run its own ip applet).
export GUEST_HOST_TOOLS=${GUEST_HOST_TOOLS:-ip tc}
export GUEST_SH=${GUEST_SH:-dash}
# ~700 BPF objects in the initramfs, unpacked into the guest's memory
export GUEST_MEM=${GUEST_MEM:-4096}
mkdir -p "$RUNS"
touch "$RUNS/times"

timed() {	# timed LABEL CMD...: run CMD, add "LABEL SECONDS" to times
	local label=$1 start rc=0
	shift
	start=$(date +%s)
	"$@" || rc=$?
	echo "$label $(( $(date +%s) - start ))" >> "$RUNS/times"
	return $rc
}

# The tests of KERNEL: upstream-full's own build, or a copy of it with a
# bpf_testmod.ko built against KERNEL's vmlinux.
prepare_tests() {
	local k=$1 dir
	dir=$(test_dir "$k")
	[ "$k" != upstream-full ] || return 0
	mkdir -p "$dir"
	rsync -a --delete "$(test_dir upstream-full)/" "$dir/"
	build_testmod_of "$(src_dir upstream-full)" "$(obj_dir "$k")" "$dir" upstream-full
}

# The suites, in run order: one per test_progs test (the names the runner
# was built with, from the tests.h its Makefile generated), then test_maps
# and test_verifier. "NAME LIMIT CMD".
suite_list() {
	local hdr
	hdr=$(src_dir upstream-full)/tools/testing/selftests/bpf/prog_tests/tests.h
	[ -f "$hdr" ] || die "$hdr missing: build-tests.sh upstream-full did not build test_progs"
	sed -n 's/^DEFINE_TEST(\(.*\))$/\1/p' "$hdr" | while read -r t; do
		echo "test_progs.$t $TEST_TIMEOUT ./test_progs -a $t"
	done
	echo "test_maps 2400 ./test_maps"
	echo "test_verifier 2400 ./test_verifier"
}

# plan KERNEL < SUITES: the guest's plan.sh for suite lines "NAME LIMIT CMD"
plan() {
	local name limit cmd
	while read -r name limit cmd; do
		echo "run_suite $name $limit /tests/$1 $cmd"
	done
}

# run_kernel KERNEL: boot it until every suite has run or crashed.
run_kernel() {
	local k=$1 out=$RUNS/$1 n=0 boot name limit cmd f crashed
	if [ -f "$out/done" ]; then
		echo "[$k] all suites ran in $out already"
		return 0
	fi
	mkdir -p "$out"
	if [ ! -f "$out/todo" ]; then
		suite_list > "$out/suites"
		cp "$out/suites" "$out/todo"
	fi
	n=$(find "$out" -maxdepth 1 -name 'boot*' | wc -l)
	while [ -s "$out/todo" ]; do
		n=$((n + 1))
		[ $n -le "$MAX_BOOTS" ] || die "[$k] still $(wc -l < "$out/todo") suites to run after $MAX_BOOTS boots"
		boot=$out/boot$n
		mkdir -p "$boot"
		plan "$k" < "$out/todo" > "$boot/plan.sh"
		echo "[$k] boot $n: $(wc -l < "$out/todo") suites"
		# A splat or a missing verdict is this script's business here:
		# it is recorded per boot, and the suites left go on. The guest
		# reports a running suite every minute (@@alive), so ten silent
		# minutes mean a dead guest, not a long suite.
		VARIANT=$k GUEST_TIMEOUT=$(( $(wc -l < "$out/todo") * 120 + 3600 )) \
			GUEST_IDLE_TIMEOUT=600 \
			"$ROOT/scripts/run-guest.sh" "$k" "$boot" "$boot/plan.sh" "$k" ||
			echo "[$k] boot $n failed (see $boot)"
		python3 "$ROOT/scripts/judge.py" splats "$boot/console.log" > "$boot/splats" || true
		crashed=
		: > "$out/todo.next"
		while read -r name limit cmd; do
			if [ -f "$boot/$name.rc" ]; then
				for f in "$boot/$name".*; do cp "$f" "$out/"; done
			elif [ -z "$crashed" ]; then
				crashed=$name
				echo "boot$n" > "$out/$name.crashed"
				echo "[$k] $name did not finish: the guest died in it (boot $n)"
			else
				echo "$name $limit $cmd" >> "$out/todo.next"
			fi
		done < "$out/todo"
		mv "$out/todo.next" "$out/todo"
	done
	rm -f "$out/todo"
	touch "$out/done"
}

# rerun_regressions: each test_progs test with a case that passed on
# upstream-full and failed on patched-full runs FULL_RERUNS (10) more times
# on both kernels, one boot each, into RUN/rerun: parity.py then tells a
# regression (passes every rerun on upstream-full, fails again on
# patched-full) from a test that is flaky in this guest on upstream 6.1
# itself, or from a single failure that no rerun reproduces.
rerun_regressions() {
	local tests k i t dir
	[ ${#KERNELS[@]} -eq 2 ] || return 0
	mapfile -t tests < <(python3 "$ROOT/scripts/parity.py" --regressed-tests \
		"${KERNELS[0]}=$RUNS/${KERNELS[0]}" "${KERNELS[1]}=$RUNS/${KERNELS[1]}")
	[ ${#tests[@]} -gt 0 ] || return 0
	echo "rerunning ${#tests[@]} test(s) with regressed cases $RERUNS times on each kernel: ${tests[*]}"
	for k in "${KERNELS[@]}"; do
		dir=$RUNS/$k/rerun
		rm -rf "$dir"
		mkdir -p "$dir"
		for t in "${tests[@]}"; do
			for i in $(seq "$RERUNS"); do
				echo "test_progs.$t@$i $TEST_TIMEOUT ./test_progs -a $t"
			done
		done > "$dir/suites"
		plan "$k" < "$dir/suites" > "$dir/plan.sh"
		VARIANT=$k GUEST_IDLE_TIMEOUT=600 "$ROOT/scripts/run-guest.sh" "$k" "$dir" "$dir/plan.sh" "$k" ||
			echo "[$k] the rerun boot failed (see $dir)"
	done
}

# Our own suites (tests/matrix's patched rows that run the patched tree's
# tests), built against patched-full's kernel and run on it: the full
# config must not make any of them fail or skip what the minimal one runs.
own_suites() {
	python3 "$ROOT/scripts/matrix.py" "$ROOT/tests/matrix" rows patched |
		awk -F'\t' '$2 == "patched" { print $1 }'
}
run_own_suites() {
	local run=$RUNS/patched-full-own suites
	mapfile -t suites < <(own_suites)
	build_own_full_tests
	mkdir -p "$run"
	python3 "$ROOT/scripts/matrix.py" "$ROOT/tests/matrix" plan patched "${suites[@]}" > "$run/plan.sh"
	local failed=()
	VARIANT=patched-full "$ROOT/scripts/run-guest.sh" patched-full "$run" "$run/plan.sh" \
		"$OWN_FULL_TESTS" || failed=(--guest-failed)
	python3 "$ROOT/scripts/judge.py" kernel "$ROOT/tests/matrix" patched "$run" \
		"${failed[@]}" "${suites[@]}"
	local p f s
	read -r p f s < "$run/totals"
	[ "$f" -eq 0 ]
}

for k in "${KERNELS[@]}"; do
	is_full_variant "$k" || die "$k is not a full variant (upstream-full, patched-full)"
done
# Builds one at a time: upstream-full's tests are everyone's.
timed "build-kernel upstream-full" \
	env VARIANT=upstream-full "$ROOT/scripts/build-kernel.sh" upstream-full
timed "build-tests upstream-full" \
	env VARIANT=upstream-full "$ROOT/scripts/build-tests.sh" upstream-full
# A guest keeps about one core busy (most tests run one thread), a kernel
# build both: each kernel's suites start as soon as its tests are built and
# run beside the next kernel's build and suites, never two builds at once.
# Each guest's "run" time in $RUNS/times is wall time shared with the rest.
runs=()
for k in "${KERNELS[@]}"; do
	if [ "$k" != upstream-full ]; then
		timed "build-kernel $k" env VARIANT="$k" "$ROOT/scripts/build-kernel.sh" "$k"
		timed "build-tests $k" prepare_tests "$k"
	fi
	timed "run $k" run_kernel "$k" > "$RUNS/run-$k.log" 2>&1 &
	runs+=($!)
	echo "[$k] suites running in the background: $RUNS/run-$k.log"
done

# Our own suites, then the real clients (bpftool, bpftrace, BCC) on the
# same kernels: one after the other, beside the kernels' suites (about 40
# minutes, less than a kernel's suites). Exit statuses in RUNS/NAME.rc.
others() {
	local rc=0
	if printf '%s\n' "${KERNELS[@]}" | grep -qx patched-full; then
		timed "own suites on patched-full" run_own_suites || rc=$?
	fi
	echo "$rc" > "$RUNS/own.rc"
	rc=0
	CLIENTS_RUNS=$RUNS/clients timed "clients" "$ROOT/scripts/check-clients.sh" "${KERNELS[@]}" ||
		rc=$?
	echo "$rc" > "$RUNS/clients.rc"
}
rm -f "$RUNS/own.rc" "$RUNS/clients.rc"
others > "$RUNS/others.log" 2>&1 &
others_pid=$!
echo "our suites and the clients running in the background: $RUNS/others.log"

for pid in "${runs[@]}"; do
	wait "$pid" || die "a kernel's suites did not all run: see $RUNS/run-*.log"
done
timed "reruns" rerun_regressions
wait "$others_pid" || true
own_rc=$(cat "$RUNS/own.rc" 2>/dev/null || echo 1)
clients_rc=$(cat "$RUNS/clients.rc" 2>/dev/null || echo 1)
tail -n 30 "$RUNS/others.log"

args=()
for k in "${KERNELS[@]}"; do args+=("$k=$RUNS/$k"); done
parity_rc=0
if [ ${#args[@]} -eq 2 ]; then
	python3 "$ROOT/scripts/parity.py" --times "$RUNS/times" \
		--min-reruns "$RERUNS" --denylist "$ROOT/tests/full-denylist" --out "$BUILD/parity.md" "${args[@]}" ||
		parity_rc=$?
fi
if [ -f "$RUNS/patched-full-own/totals" ]; then
	read -r p f s < "$RUNS/patched-full-own/totals"
	echo "our suites on patched-full: $p passed, $f failed, $s skipped"
fi
echo "results: $RUNS"
[ "$parity_rc" -eq 0 ] && [ "$own_rc" -eq 0 ] && [ "$clients_rc" -eq 0 ]
