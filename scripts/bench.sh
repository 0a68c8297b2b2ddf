#!/usr/bin/env bash
# Benchmark kptrs on several kernels: build bench/kptr_bench against each
# variant's vmlinux.h and libbpf, boot each kernel in turn (one guest at a
# time, BENCH_PASSES boots per kernel in alternating order), run the
# benchmark there and compare.
#
#   bench.sh [--report] [KERNEL...]   default: $BENCH_KERNELS or
#                                     "patched noinline upstream"
#
# Writes build/bench/results.csv (one row per kernel and case, the passes
# folded together; each pass's rows in build/bench/pass-N/), ratios.md (each
# kernel against BENCH_REF, default upstream, the within-kernel ratios and
# the targets), bench.png (gnuplot), and prints ratios.md.
#
# BENCH_ROUNDS (21), BENCH_ROUND_MS (20), BENCH_LOAD_ROUNDS (15) are passed
# to the guest, see bench/kptr_bench.c; BENCH_PASSES (2); BENCH_TSC_KHZ
# overrides the measured host TSC frequency the guests are given. Kernels
# and their tests are built first when needed, one at a time.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# --report: only fold, compare and draw the passes already in build/bench.
REPORT_ONLY=0
if [ "${1:-}" = --report ]; then
	REPORT_ONLY=1
	shift
fi
# shellcheck disable=SC2206
KERNELS=(${*:-${BENCH_KERNELS:-patched noinline upstream}})
BENCH=$BUILD/bench
BENCH_ROUNDS=${BENCH_ROUNDS:-21}
BENCH_ROUND_MS=${BENCH_ROUND_MS:-20}
BENCH_PASSES=${BENCH_PASSES:-2}
BENCH_LOAD_ROUNDS=${BENCH_LOAD_ROUNDS:-15}
# A benchmark boot takes about a minute; a hang should not cost 40.
export GUEST_TIMEOUT=${GUEST_TIMEOUT:-900}

need "$CLANG" clang-19
need gnuplot gnuplot-nox

# The reference the other kernels are compared with: upstream when it is
# benchmarked, else the last kernel named.
REF=${BENCH_REF:-}
if [ -z "$REF" ]; then
	REF=${KERNELS[${#KERNELS[@]}-1]}
	for k in "${KERNELS[@]}"; do
		[ "$k" = upstream ] && REF=upstream
	done
fi

# Build what the benchmark needs first, so that nothing fails after the
# first boot: each kernel and its tests (vmlinux.h, libbpf, bpftool), and the
# upstream tests for their map_kptr.bpf.o. Both steps do nothing (kernel) or
# little (tests) when up to date.
build_inputs() {
	local k
	for k in $(printf '%s\n' "${KERNELS[@]}" upstream | awk '!seen[$0]++'); do
		check_variant "$k"
		VARIANT=$k "$ROOT/scripts/build-kernel.sh" "$k"
		VARIANT=$k "$ROOT/scripts/build-tests.sh" "$k"
	done
	[ -f "$SELFTEST_OBJ" ] || die "$SELFTEST_OBJ missing after building the upstream tests"
}

# Upstream 6.1's kptr selftest object, loaded by the load_selftest case: the
# same file on every kernel, so its load times compare.
SELFTEST_OBJ=$(test_dir upstream)/map_kptr.bpf.o

# build/bench/VARIANT/: kptr_bench and the selftest object, the only files
# there, so that run-guest.sh copies nothing else into the guest; scratch
# files go to obj/.
build_bench() {
	local k=$1 out dir
	out=$(test_dir "$k")
	dir=$BENCH/$k
	mkdir -p "$dir/obj"
	"$CLANG" -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Werror \
		-I"$out/tools/include" -c "$ROOT/bench/kptr_bench.bpf.c" \
		-o "$dir/obj/kptr_bench.bpf.o"
	"$out/tools/sbin/bpftool" gen skeleton "$dir/obj/kptr_bench.bpf.o" \
		name kptr_bench > "$dir/obj/kptr_bench.skel.h"
	gcc -g -O2 -Wall -Werror -I"$dir/obj" -I"$out/tools/include" \
		"$ROOT/bench/kptr_bench.c" "$out/tools/build/libbpf/libbpf.a" \
		-lelf -lz -lpthread -o "$dir/kptr_bench"
	cp "$SELFTEST_OBJ" "$dir/"
}

# run_bench KERNEL PASS: one boot of KERNEL, its CSV rows to pass-PASS/.
run_bench() {
	local k=$1 pass=$2 run=$BUILD/runs/bench-$1-$2
	mkdir -p "$run"
	cat > "$run/plan.sh" <<-EOF
		export BENCH_ROUNDS=$BENCH_ROUNDS BENCH_ROUND_MS=$BENCH_ROUND_MS
		export BENCH_LOAD_ROUNDS=$BENCH_LOAD_ROUNDS
		run_suite bench ${SUITE_TIMEOUT:-2000} /tests/$k ./kptr_bench $k
	EOF
	GUEST_CMDLINE="tsc_early_khz=$TSC_KHZ tsc=reliable ${GUEST_CMDLINE:-}" \
		"$ROOT/scripts/run-guest.sh" "$k" "$run" "$run/plan.sh" "$BENCH/$k"
	if [ "$(cat "$run/bench.rc" 2>/dev/null)" != 0 ]; then
		echo "--- kptr_bench failed on $k; its stderr:" >&2
		tail -40 "$run/bench.stderr.log" >&2 || true
		return 1
	fi
	grep -E "^$k,[a-z0-9_]+,[-0-9.]+,[-0-9.]+,[-0-9.]+,[0-9]+,[0-9]+$" \
		"$run/bench.log" > "$BENCH/pass-$pass/$k.csv"
	grep -v '^$' "$run/bench.stderr.log" >&2 || true
}

# Fold the passes into one row per kernel and case: the median of the
# passes' medians, the lowest min, the highest max, all rounds.
merge() {
	echo "kernel,case,median_ns,min_ns,max_ns,rounds,repeat"
	cat "$BENCH"/pass-*/*.csv | awk -F, '
	{
		key = $1 "," $2
		if (!(key in n)) { order[++nk] = key; lo[key] = $4; hi[key] = $5; rep[key] = $7 }
		m[key, ++n[key]] = $3
		if ($4 < lo[key]) lo[key] = $4
		if ($5 > hi[key]) hi[key] = $5
		if ($7 > rep[key]) rep[key] = $7
		rounds[key] += $6
	}
	END {
		for (j = 1; j <= nk; j++) {
			key = order[j]; c = n[key]
			# insertion sort of the few pass medians
			for (a = 2; a <= c; a++)
				for (b = a; b > 1 && m[key, b - 1] > m[key, b]; b--) {
					t = m[key, b]; m[key, b] = m[key, b - 1]; m[key, b - 1] = t
				}
			med = c % 2 ? m[key, (c + 1) / 2] : (m[key, c / 2] + m[key, c / 2 + 1]) / 2
			printf "%s,%.2f,%s,%s,%d,%s\n", key, med, lo[key], hi[key], rounds[key], rep[key]
		}
	}'
}

# The ratio table, the within-kernel ratios and the targets, as markdown.
# Reads results.csv; the kernels in command-line order, REF the reference.
report() {
	awk -F, -v kernels="${KERNELS[*]}" -v ref="$REF" '
	NR == 1 { next }
	{
		if (!(($2) in seen)) { seen[$2] = 1; order[++n] = $2 }
		med[$1, $2] = $3; lo[$1, $2] = $4; hi[$1, $2] = $5
	}
	function have(k, c) { return ((k, c) in med) }
	function r(a, b) { return b > 0 ? a / b : 0 }
	# How a case is shown: ns with enough digits, loads in ms.
	function fmt(k, c) {
		if (!have(k, c))
			return "-"
		if (c ~ /^load_/)
			return sprintf("%.2f ms (%.2f-%.2f)", med[k, c] / 1e6,
				       lo[k, c] / 1e6, hi[k, c] / 1e6)
		return sprintf("%.2f (%.2f-%.2f)", med[k, c], lo[k, c], hi[k, c])
	}
	function verdict(ok) { return ok ? "**met**" : "**not met**" }
	END {
		nk = split(kernels, ks, " ")
		target = ks[1]
		if (target == ref && nk > 1)
			target = ks[2]
		printf "### Results (median, min-max; ns per op unless noted)\n\n"
		printf "| case |"
		for (i = 1; i <= nk; i++) printf " %s |", ks[i]
		for (i = 1; i <= nk; i++) if (ks[i] != ref) printf " %s/%s |", ks[i], ref
		printf "\n|---|"
		for (i = 1; i <= nk; i++) printf "---:|"
		for (i = 1; i <= nk; i++) if (ks[i] != ref) printf "---:|"
		printf "\n"
		for (j = 1; j <= n; j++) {
			c = order[j]
			printf "| %s |", c
			for (i = 1; i <= nk; i++) printf " %s |", fmt(ks[i], c)
			for (i = 1; i <= nk; i++) {
				if (ks[i] == ref) continue
				# below 1 ns (loop) a ratio is only noise
				if (have(ks[i], c) && have(ref, c) && med[ref, c] >= 1)
					printf " %.3f |", r(med[ks[i], c], med[ref, c])
				else
					printf " - |"
			}
			printf "\n"
		}

		printf "\n### Within-kernel ratios\n\n| ratio |"
		for (i = 1; i <= nk; i++) printf " %s |", ks[i]
		printf "\n|---|"
		for (i = 1; i <= nk; i++) printf "---:|"
		printf "\n"
		split("acquire_release/cached_get acquire_release/cached_load " \
		      "xchg_kptr/xchg_atomic", rs, " ")
		for (j = 1; j in rs; j++) {
			split(rs[j], ab, "/")
			printf "| %s |", rs[j]
			for (i = 1; i <= nk; i++) {
				if (have(ks[i], ab[1]) && have(ks[i], ab[2]) && med[ks[i], ab[2]] > 0)
					printf " %.2f |", r(med[ks[i], ab[1]], med[ks[i], ab[2]])
				else
					printf " - |"
			}
			printf "\n"
		}

		printf "\n### Targets (%s", target
		if (target != ref) printf ", against %s", ref
		printf ")\n\n"
		t = target
		for (j = 1; j <= 2; j++) {
			c = j == 1 ? "cached_get" : "cached_load"
			if (!have(t, c) || !have(t, "acquire_release")) continue
			# A cost within the noise of the subtraction is shown as
			# more than 1000x cheaper.
			if (med[t, c] > 0)
				s = sprintf("%.1fx", r(med[t, "acquire_release"], med[t, c]))
			else
				s = ">1000x"
			ok = med[t, c] <= 0 || r(med[t, "acquire_release"], med[t, c]) >= 10
			printf "- cached access (%s) >= 10x cheaper than acquire+release: %s: %s\n",
			       c, s, verdict(ok)
		}
		if (have(t, "xchg_kptr") && have(t, "xchg_atomic")) {
			x = r(med[t, "xchg_kptr"], med[t, "xchg_atomic"])
			printf "- bpf_kptr_xchg round trip within 1.5x of bare atomic xchg: %.2fx: %s",
			       x, verdict(x <= 1.5)
			# the series without the inlining patch: its "before"
			if (have("noinline", "xchg_kptr") && have("noinline", "xchg_atomic"))
				printf " (noinline, the helper call: %.2fx)",
				       r(med["noinline", "xchg_kptr"], med["noinline", "xchg_atomic"])
			printf "\n"
		}
		if (t != ref) {
			worst = 0; cnt = 0; logsum = 0; overl = 1
			for (j = 1; j <= n; j++) {
				c = order[j]
				if (c !~ /_(update|lookup)_(k1|k8|ref1|mix)$/) continue
				if (!have(t, c) || !have(ref, c) || med[ref, c] <= 0) continue
				x = r(med[t, c], med[ref, c])
				cnt++; logsum += log(x)
				if (x > worst) { worst = x; wc = c }
				if (x > 1.02 && lo[t, c] > hi[ref, c]) overl = 0
			}
			note = ""
			if (worst > 1.02 && overl)
				note = " (the ranges of every case over 1.02 overlap: within noise)"
			if (cnt)
				printf "- map update/lookup with kptrs no slower (ratio <= 1.02): " \
				       "worst %.3f (%s), geomean %.3f over %d cases: %s%s\n",
				       worst, wc, exp(logsum / cnt), cnt, verdict(worst <= 1.02), note
			split("load_progs load_selftest", lc, " ")
			for (j = 1; j in lc; j++) {
				c = lc[j]
				if (!have(t, c) || !have(ref, c)) continue
				x = r(med[t, c], med[ref, c])
				note = ""
				if (x > 1.0 && lo[t, c] <= hi[ref, c])
					note = " (ranges overlap: within noise)"
				printf "- verifier load time (%s) no worse: %.3f: %s%s\n", c, x,
				       verdict(x <= 1.0), note
			}
		}
	}' "$BENCH/results.csv"
}

# bench.png: ns per op per case (log scale), and the load times in ms, one
# bar per kernel with the min-max range as error bar.
chart() {
	local i k cols ops=$BENCH/ops.dat loads=$BENCH/loads.dat plot_ops="" plot_loads=""
	# Rows: case, then median min max per kernel. gnuplot cannot draw
	# values <= 0 on a log scale; a per-op cost at or below the noise of
	# the empty-run subtraction is drawn at 0.01.
	awk -F, -v kernels="${KERNELS[*]}" -v ops="$ops" -v loads="$loads" '
	NR == 1 { next }
	{
		if (!(($2) in seen)) { seen[$2] = 1; order[++n] = $2 }
		med[$1, $2] = $3; lo[$1, $2] = $4; hi[$1, $2] = $5
	}
	END {
		nk = split(kernels, ks, " ")
		for (j = 1; j <= n; j++) {
			c = order[j]
			if (c == "empty") continue
			load = c ~ /^load_/
			out = load ? loads : ops
			s = load ? 1e6 : 1
			printf "%s", c > out
			for (i = 1; i <= nk; i++) {
				if (!((ks[i], c) in med)) { printf " 0.01 0.01 0.01" > out; continue }
				m = med[ks[i], c] / s; a = lo[ks[i], c] / s; b = hi[ks[i], c] / s
				if (!load) { m = m < 0.01 ? 0.01 : m; a = a < 0.01 ? 0.01 : a; b = b < 0.01 ? 0.01 : b }
				printf " %g %g %g", m, a, b > out
			}
			printf "\n" > out
		}
	}' "$BENCH/results.csv"
	i=0
	for k in "${KERNELS[@]}"; do
		cols="$((2 + 3 * i)):$((3 + 3 * i)):$((4 + 3 * i))"
		[ $i -eq 0 ] && cols+=":xtic(1)"
		plot_ops+="${plot_ops:+, }'$ops' using $cols title '$k'"
		plot_loads+="${plot_loads:+, }'$loads' using $cols title '$k'"
		i=$((i + 1))
	done
	gnuplot <<-EOF
		set terminal pngcairo size 1600,1000 font ",10" noenhanced
		set output '$BENCH/bench.png'
		set multiplot layout 2,1 title "kptr benchmark (QEMU TCG, median with min-max)"
		set style data histogram
		set style histogram errorbars gap 2 lw 1
		set style fill solid 0.7 border -1
		set key top left
		set grid ytics
		set xtics rotate by -40 nomirror
		set bmargin 7
		set logscale y
		set ylabel "ns per op (log)"
		set title "per-operation cost, empty test_run iteration subtracted"
		plot $plot_ops
		unset logscale y
		set yrange [0:*]
		set ylabel "ms per load"
		set title "program load time"
		plot $plot_loads
		unset multiplot
	EOF
}

main() {
	local start total
	start=$(date +%s)
	[ $REPORT_ONLY -eq 1 ] || measure
	merge > "$BENCH/results.csv"
	report > "$BENCH/ratios.md"
	chart
	echo
	cat "$BENCH/ratios.md"
	total=$(( $(date +%s) - start ))
	echo
	echo "bench: results in $BENCH/results.csv, ratios.md, bench.png (${total}s)"
}

measure() {
	local k p order
	build_inputs
	mkdir -p "$BENCH"
	gcc -O2 -Wall -Werror "$ROOT/bench/tsc_khz.c" -o "$BENCH/tsc_khz"
	TSC_KHZ=${BENCH_TSC_KHZ:-$("$BENCH/tsc_khz")}
	echo "bench: host TSC $TSC_KHZ kHz, the guests' clock (tsc_early_khz)"
	for k in "${KERNELS[@]}"; do
		VARIANT=$k stage "build kptr_bench" build_bench "$k"
	done
	rm -rf "$BENCH"/pass-*
	# Passes alternate the kernels' order (A B, B A, ...), so that a drift
	# of the host's speed (other jobs on this machine) hits every kernel
	# alike instead of favouring the one that ran first.
	for p in $(seq 1 "$BENCH_PASSES"); do
		mkdir -p "$BENCH/pass-$p"
		order=("${KERNELS[@]}")
		if [ $((p % 2)) -eq 0 ]; then
			mapfile -t order < <(printf '%s\n' "${KERNELS[@]}" | tac)
		fi
		for k in "${order[@]}"; do
			VARIANT=$k stage "benchmark in QEMU, pass $p of $BENCH_PASSES" \
				run_bench "$k" "$p"
		done
	done
}

main
