#!/usr/bin/env bash
# Benchmark kptrs on several kernels: build bench/kptr_bench against each
# kernel's vmlinux.h and libbpf, boot each kernel in turn (one guest at a
# time), run the benchmark there and collect what it prints. The statistics
# (medians, ranges, ratios, determinism, targets, growth) are
# scripts/bench_stats.py's; this script only builds, boots and collects.
#
#   bench.sh [--report] [KERNEL...]   default: $BENCH_KERNELS or
#                                     "patched upstream upstream612 noinline"
#
# Two modes, each run BENCH_PASSES times per kernel, passes alternating the
# kernels' order:
#   icount  (default) one CPU, QEMU -icount shift=0,sleep=off, and the guest
#           told its TSC runs at 1 GHz: the TSC then advances one tick per
#           guest instruction, so every duration the guest measures is an
#           instruction count, the same in every run whatever the host does.
#   time    TCG wall-clock on two CPUs, for what needs several CPUs
#           (contention) and as the real-time figures beside the counts:
#           noisy (10-25 % between runs on a busy host).
# BENCH_MODES ("icount time") picks them; BENCH_TIME_KERNELS ("patched
# upstream upstream612") are the kernels of the time mode, which runs the target cases
# and contention, not the scale table.
#
# Reads bench/ (the benchmark's BPF programs and loader), each kernel's
# build and tests (build/VARIANT, built here when missing), and upstream
# 6.1's map_kptr.bpf.o.
# Writes build/bench/MODE/pass-N/KERNEL.csv (the guest's lines), then
# bench_stats.py writes results.csv, report.md and plots/; gnuplot draws
# plots/*.png. --report: only the statistics and charts, from the passes
# already there.
#
# Results of kernels not in this run stay and are reported with the others
# (rm -r build/bench to start afresh). BENCH_BUILD=0 skips the builds.
# BENCH_PASSES (2), BENCH_ROUNDS, BENCH_ROUND_US and BENCH_LOAD_ROUNDS per
# mode (see below and bench/kptr_bench.c), BENCH_TSC_KHZ overrides the host
# TSC frequency the time mode's guests are given. Kernels and what the
# benchmark needs of their tests are built first when needed, one at a time.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

REPORT_ONLY=0
if [ "${1:-}" = --report ]; then
	REPORT_ONLY=1
	shift
fi
# shellcheck disable=SC2206
KERNELS=(${*:-${BENCH_KERNELS:-patched upstream upstream612 noinline}})
# shellcheck disable=SC2206
MODES=(${BENCH_MODES:-icount time})
# shellcheck disable=SC2206
TIME_KERNELS=(${BENCH_TIME_KERNELS:-patched upstream upstream612})
BENCH=$BUILD/bench
BENCH_PASSES=${BENCH_PASSES:-2}
# A benchmark boot takes a few minutes; a hang should not cost 40.
export GUEST_TIMEOUT=${GUEST_TIMEOUT:-1800}

need "$CLANG" clang-19
need gnuplot gnuplot-nox
need python3 python3

# The kernel our series is judged on and its reference: patched against
# upstream 6.1, and 6.12 as the peer.
TARGET=${BENCH_TARGET:-patched}
REF=${BENCH_REF:-upstream}
PEER=upstream612

# BENCH_EXTRA="NAME=BZIMAGE[:VARIANT] ...": kernels that are no variant, a
# work-in-progress tree built with build-kernel.sh's KERNEL_SRC/KERNEL_OBJ
# (e.g. a proposed kernel fix): NAME boots BZIMAGE, and its benchmark is
# built with VARIANT's (default patched) libbpf, vmlinux.h and flags. Name
# it in BENCH_KERNELS (or BENCH_TIME_KERNELS) to run it.
extra_field() {
	local name=$1 field=$2 e
	for e in ${BENCH_EXTRA:-}; do
		[ "${e%%=*}" = "$name" ] || continue
		e=${e#*=}
		case "$field" in
		image) echo "${e%%:*}" ;;
		variant) [ "${e#*:}" != "$e" ] && echo "${e#*:}" || echo patched ;;
		esac
		return 0
	done
	return 1
}

# The variant whose tests (libbpf, vmlinux.h) a kernel's benchmark uses.
tests_variant() {
	extra_field "$1" variant || echo "$1"
}

# What each kernel's BPF programs can use (see bench/kptr_bench.bpf.c).
bpf_flags() {
	case "$(tests_variant "$1")" in
	upstream) echo "-DBENCH_KPTRS -DBENCH_KPTR_GET" ;;
	baseline) echo "" ;;
	upstream612) echo "-DBENCH_KPTRS -DBENCH_TASK_KFUNCS -DBENCH_KPTR_612" ;;
	*) echo "-DBENCH_KPTRS -DBENCH_KPTR_GET -DBENCH_TASK_KFUNCS" ;;
	esac
}

# Each mode's guest settings: the QEMU and kernel command line, the sets of
# cases, rounds and their length (BENCH_ROUND_US: in instruction mode a
# round of 300k instructions is mostly free of timer ticks, so the median
# round is the exact count).
mode_env() {
	case "$1" in
	icount)
		# -icount exists only under TCG, also where KVM works
		ACCEL=tcg
		GUEST_SMP=1
		GUEST_QEMU_ARGS="-icount shift=0,sleep=off"
		MODE_CMDLINE="tsc_early_khz=1000000 tsc=reliable"
		SETS=${BENCH_SETS_ICOUNT:-targets,scale}
		ROUNDS=${BENCH_ROUNDS_ICOUNT:-7}
		ROUND_US=${BENCH_ROUND_US_ICOUNT:-300}
		LOAD_ROUNDS=${BENCH_LOAD_ROUNDS_ICOUNT:-3}
		UNIT=ins
		;;
	time)
		ACCEL=${QEMU_ACCEL:-}
		GUEST_SMP=2,sockets=2,cores=1
		GUEST_QEMU_ARGS=""
		MODE_CMDLINE="tsc_early_khz=$TSC_KHZ tsc=reliable"
		SETS=${BENCH_SETS_TIME:-targets,contention}
		ROUNDS=${BENCH_ROUNDS_TIME:-11}
		ROUND_US=${BENCH_ROUND_US_TIME:-10000}
		LOAD_ROUNDS=${BENCH_LOAD_ROUNDS_TIME:-5}
		UNIT=ns
		;;
	*) die "unknown bench mode '$1' (icount or time)" ;;
	esac
}

# Every kernel of the modes that run, once.
all_kernels() {
	{
		[[ " ${MODES[*]} " != *" icount "* ]] || printf '%s\n' "${KERNELS[@]}"
		[[ " ${MODES[*]} " != *" time "* ]] || printf '%s\n' "${TIME_KERNELS[@]}"
	} | awk '!seen[$0]++'
}

# Build what the benchmark needs first, so that nothing fails after the
# first boot: each kernel, its libbpf, bpftool, vmlinux.h and
# bpf_testmod.ko, and upstream 6.1's map_kptr.bpf.o.
build_inputs() {
	local k variants
	# The peer's tree comes from a package of its own (139 MB): installed
	# through the one list of packages, which asks for root only if it
	# must, and only when the peer runs.
	if all_kernels | grep -qx "$PEER"; then
		"$ROOT/scripts/install-deps.sh" peer
	fi
	variants=$(for k in $(all_kernels); do tests_variant "$k"; done | awk '!seen[$0]++')
	for k in $variants upstream; do
		check_variant "$k"
	done
	for k in $(echo "$variants" | grep -vx upstream) upstream; do
		VARIANT=$k "$ROOT/scripts/build-kernel.sh" "$k"
		VARIANT=$k BENCH_ONLY=1 BENCH_OBJS="$([ "$k" != upstream ] || echo map_kptr.bpf.o)" \
			"$ROOT/scripts/build-tests.sh" "$k"
	done
	[ -f "$SELFTEST_OBJ" ] || die "$SELFTEST_OBJ missing after building the upstream tests"
}

# Upstream 6.1's kptr selftest object, loaded by the load_selftest case: the
# same file on every 6.1 kernel, so its load times compare (6.12 refuses
# 6.1's kptr_ref tag).
SELFTEST_OBJ=$(test_dir upstream)/map_kptr.bpf.o

# build/bench/bin/KERNEL/: kptr_bench, the selftest object and, for 6.12,
# bpf_testmod.ko, the only files there, so that run-guest.sh copies nothing
# else into the guest; scratch files go to obj/.
build_bench() {
	local k=$1 out dir o
	out=$(test_dir "$(tests_variant "$k")")
	dir=$BENCH/bin/$k
	rm -rf "$dir"
	mkdir -p "$dir/obj"
	for o in kptr_bench kptr_scale; do
		# shellcheck disable=SC2046
		build_bpf_skel "$out" "$ROOT/bench/$o.bpf.c" "$dir/obj" $(bpf_flags "$k")
	done
	link_skel_loader "$out" "$ROOT/bench/kptr_bench.c" "$dir/obj" "$dir/kptr_bench"
	if is_peer_variant "$(tests_variant "$k")"; then
		# 6.12 keeps bpf_kfunc_call_test_acquire() in bpf_testmod
		cp "$out/bpf_testmod.ko" "$dir/"
	else
		cp "$SELFTEST_OBJ" "$dir/"
	fi
}

# run_bench MODE KERNEL PASS: one boot of KERNEL, its lines to
# MODE/pass-PASS/KERNEL.csv.
run_bench() {
	local mode=$1 k=$2 pass=$3 run=$BUILD/runs/bench-$1-$2-$3
	mode_env "$mode"
	mkdir -p "$run" "$BENCH/$mode/pass-$pass"
	cat > "$run/plan.sh" <<-EOF
		export BENCH_UNIT=$UNIT BENCH_SETS=$SETS BENCH_ROUNDS=$ROUNDS
		export BENCH_ROUND_US=$ROUND_US BENCH_LOAD_ROUNDS=$LOAD_ROUNDS
		[ ! -f /tests/$k/bpf_testmod.ko ] || insmod /tests/$k/bpf_testmod.ko
		# no @@alive wakeups inside measured rounds (no idle watchdog here)
		HEARTBEAT=86400
		run_suite bench ${SUITE_TIMEOUT:-1700} /tests/$k ./kptr_bench $k
	EOF
	QEMU_ACCEL=$ACCEL GUEST_SMP=$GUEST_SMP GUEST_QEMU_ARGS=$GUEST_QEMU_ARGS \
		GUEST_CMDLINE="$MODE_CMDLINE ${GUEST_CMDLINE:-}" \
		KERNEL_IMAGE=$(extra_field "$k" image || true) \
		"$ROOT/scripts/run-guest.sh" "$(tests_variant "$k")" "$run" "$run/plan.sh" \
		"$BENCH/bin/$k"
	grep -v '^$' "$run/bench.stderr.log" >&2 || true
	if [ "$(cat "$run/bench.rc" 2>/dev/null)" != 0 ]; then
		echo "--- kptr_bench failed on $k ($mode)" >&2
		return 1
	fi
	# only result lines; bench_stats.py refuses anything else
	grep -E "^$k," "$run/bench.log" > "$BENCH/$mode/pass-$pass/$k.csv"
	cp "$run/boot-seconds" "$BENCH/$mode/pass-$pass/$k.seconds"
}

measure() {
	local k p mode order
	# BENCH_BUILD=0: benchmark the kernels and tests as they are (another
	# build holds the machine's build lock, and counts do not mind)
	[ "${BENCH_BUILD:-1}" = 0 ] || build_inputs
	mkdir -p "$BENCH"
	gcc -O2 -Wall -Werror "$ROOT/bench/tsc_khz.c" -o "$BENCH/tsc_khz"
	TSC_KHZ=${BENCH_TSC_KHZ:-$("$BENCH/tsc_khz")}
	echo "bench: host TSC $TSC_KHZ kHz (time mode's tsc_early_khz)"
	for k in $(all_kernels); do
		VARIANT=$k stage "build kptr_bench" build_bench "$k"
	done
	for mode in "${MODES[@]}"; do
		# only this run's kernels: a run of some kernels adds to the
		# others' results, and --report folds them all
		for k in $(all_kernels); do
			rm -f "$BENCH/$mode"/pass-*/"$k".csv
		done
		# Passes alternate the kernels' order (A B, B A, ...), so that in
		# time mode a drift of the host's speed hits every kernel alike.
		for p in $(seq 1 "$BENCH_PASSES"); do
			if [ "$mode" = icount ]; then
				order=("${KERNELS[@]}")
			else
				order=("${TIME_KERNELS[@]}")
			fi
			if [ $((p % 2)) -eq 0 ]; then
				mapfile -t order < <(printf '%s\n' "${order[@]}" | tac)
			fi
			for k in "${order[@]}"; do
				VARIANT=$k stage "benchmark ($mode), pass $p of $BENCH_PASSES" \
					run_bench "$mode" "$k" "$p"
			done
		done
	done
}

# This run's kernels, then those of earlier runs still in build/bench.
report_kernels() {
	{
		all_kernels
		find "$BENCH" -path "*/pass-*/*.csv" -printf '%f\n' 2>/dev/null |
			sed 's/\.csv$//' | sort
	} | awk '!seen[$0]++' | xargs
}

chart() {
	local gp
	[ -f "$BENCH/plots/scripts" ] || return 0
	while read -r gp; do
		[ -n "$gp" ] && gnuplot "$gp"
	done < "$BENCH/plots/scripts"
}

main() {
	local start total
	start=$(date +%s)
	[ $REPORT_ONLY -eq 1 ] || measure
	rm -rf "$BENCH/plots"
	python3 "$ROOT/scripts/bench_stats.py" "$BENCH" --kernels "$(report_kernels)" \
		--target "$TARGET" --ref "$REF" --peer "$PEER" > /dev/null
	chart
	echo
	cat "$BENCH/report.md"
	total=$(( $(date +%s) - start ))
	echo
	echo "bench: results in $BENCH/results.csv, report.md, plots/ (${total}s)"
}

main
