#!/usr/bin/env bash
# Check that a patch layer is bisectable and clean: apply its patches one by
# one onto the layers below it, and after each build the kernel
# (incrementally, with ccache; any compiler warning fails), build that
# prefix's selftests the way make tests does (scripts/build-tests.sh: the BPF
# objects and skeletons, test_verifier, test_progs with the prog_tests of
# tests/ctests.* that exist at that prefix, bpf_testmod.ko), run
# checkpatch.pl --strict on the patch, and, for a patch that changes pages
# of Documentation/, build them with the kernel's Sphinx setup
# (scripts/check-docs.sh): a warning in a page it changed fails it. For the
# series (layer patches), each prefix's kernel then boots in QEMU and runs
# that prefix's own tests, which must all pass: its test_verifier and its
# test_progs (our prog_tests it has, and 6.1's map tests of
# tests/ctests.upstream, judged by scripts/judge.py). One line per patch
# says what failed.
#
#   check-series.sh baseline|patches
#
# Reads the layers (kernel/baseline, kernel/patches), tests/ctests.*.
# Writes build/bisect: the tree (src), kernel build (obj), selftests
# (tests), each patch's logs (build-N.log and kernel-N.log, tests-N.log,
# docs-N.log), the docs build (docs), each prefix's guest run (run-N/, with
# the matrix it was judged by).
#
# SERIES_FROM=N: apply patches 1..N-1 of the layer without building or
# checking them, and check from patch N on (after adding patches on top of
# a series whose prefixes were checked already). SERIES_ONLY="N M ...":
# apply every patch, check only the prefixes that end at patches N, M, ...
# (after changing a few patches of a series checked in full before; the
# prefixes between them build only as part of the next one checked).
# SERIES_RUN=0: build and
# check each prefix, boot none (the baseline layer is never booted: its
# prefixes are steps of a revert, and its end is what make check tests).
#
# Uses its own tree and object dir (build/bisect), so no variant is touched.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

LAYER=${1:-patches}
case "$LAYER" in
baseline) below=() ;;
patches) below=("$ROOT/kernel/baseline") ;;
*) die "unknown layer '$LAYER' (baseline or patches)" ;;
esac
SRC=$BUILD/bisect/src OBJ=$BUILD/bisect/obj TESTS=$BUILD/bisect/tests
# build-tests.sh takes a variant name for its defaults only; the tree, the
# kernel build and the output dir are the bisect ones
case "$LAYER" in baseline) tests_variant=baseline ;; *) tests_variant=patched ;; esac
export VARIANT=bisect
"$ROOT/scripts/prepare-tree.sh" upstream >/dev/null	# makes sure build/linux exists
tree_worktree "$SRC" pristine
tree_reset "$SRC"
for l in "${below[@]}"; do
	for p in $(layer_patches "$l"); do
		tree_am "$SRC" "$p" || die "${p#"$ROOT"/} does not apply"
	done
done

# The prog_tests of tests/ctests.* that this prefix has: a prefix before the
# patch that adds a test cannot build it, and need not.
prefix_ctests() {
	local t
	grep -hv '^#' "$ROOT"/tests/ctests.* | awk 'NF && !seen[$0]++' | while read -r t; do
		[ ! -f "$SRC/tools/testing/selftests/bpf/prog_tests/$t.c" ] || echo "$t"
	done
}

# The selftests of the tree as it is now, into a dir of their own (the
# selftests' make is incremental there too; the BPF objects are rebuilt
# anyway, as each prefix's kernel gives a new vmlinux.h). Not the project's
# guest programs: they are not part of the series.
build_prefix_tests() {
	local ctests
	ctests=$(prefix_ctests | tr '\n' ' ')
	echo "prog_tests: ${ctests:-none}"
	KERNEL_SRC=$SRC KERNEL_OBJ=$OBJ TESTS_OUT=$TESTS CTESTS=$ctests GUEST_PROGRAMS=0 \
		VARIANT=$tests_variant "$ROOT/scripts/build-tests.sh" "$tests_variant"
}

# Boot prefix N's kernel and run its own tests; all must pass. The two rows
# are the matrix's own kinds, so the judge counts each case against the
# runner's summary as make check does. 6.1's task_local_storage/exit_creds
# is left out as in tests/matrix (it flakes on 6.1 too).
run_prefix_tests() {
	local run=$BUILD/bisect/run-$1
	rm -rf "$run"
	mkdir -p "$run"
	cat > "$run/matrix" <<-EOF
	bisect test_verifier bisect test_verifier pass ./test_verifier
	bisect test_progs bisect test_progs pass timeout=1800 ./test_progs -d task_local_storage/exit_creds
	EOF
	python3 "$ROOT/scripts/matrix.py" "$run/matrix" plan bisect > "$run/plan.sh"
	local guest_failed=()
	KERNEL_IMAGE=$OBJ/arch/x86/boot/bzImage "$ROOT/scripts/run-guest.sh" bisect "$run" \
		"$run/plan.sh" bisect > "$run/guest.log" 2>&1 || guest_failed=(--guest-failed)
	python3 "$ROOT/scripts/judge.py" kernel "$run/matrix" bisect "$run" "${guest_failed[@]}" \
		> "$run/judge.log" 2>&1 || return 1
	local p f s
	read -r p f s < "$run/totals" || return 1
	echo "$p passed, $f failed, $s skipped"
	[ "$f" -eq 0 ] && [ "$p" -gt 0 ]
}

bad=0 n=0
from=${SERIES_FROM:-1}
boot=${SERIES_RUN:-1}
[ "$LAYER" = patches ] || boot=0
for p in $(layer_patches "$ROOT/kernel/$LAYER"); do
	n=$((n + 1))
	name=$(basename "$p")
	if ! tree_am "$SRC" "$p"; then
		echo "FAIL $name: does not apply"
		exit 1
	fi
	[ "$n" -ge "$from" ] || continue
	[ -z "${SERIES_ONLY:-}" ] || [[ " $SERIES_ONLY " == *" $n "* ]] || continue
	start=$(date +%s)
	# build-N.log: what build-kernel.sh says; kernel-N.log: the compiler's.
	# Its progress lines (every 20 s) also go to the terminal: the first
	# prefix's build takes minutes.
	# (pipefail: rc is the build's status)
	rc=0
	KERNEL_SRC=$SRC KERNEL_OBJ=$OBJ KERNEL_LOG=$BUILD/bisect/kernel-$n.log \
		"$ROOT/scripts/build-kernel.sh" 2>&1 | tee "$BUILD/bisect/build-$n.log" |
		{ grep --line-buffered -E '^    \[|waiting' || true; } || rc=$?
	if [ $rc -eq 0 ]; then
		build="builds in $(( $(date +%s) - start ))s"
		warnings=$(cat "$BUILD/bisect/kernel-$n.log" 2>/dev/null | grep -c 'warning:' || true)
		[ "$warnings" -eq 0 ] || { build="$build, $warnings compiler warnings"; bad=1; }
	else
		build="BUILD FAILED (build/bisect/build-$n.log)"
		bad=1
	fi
	log=$BUILD/bisect/tests-$n.log
	if [[ $build == "BUILD FAILED"* ]]; then
		tests="tests not built (no kernel)"
	elif build_prefix_tests > "$log" 2>&1; then
		tests="tests build"
	else
		tests="TESTS BUILD FAILED (build/bisect/tests-$n.log)"
		bad=1
	fi
	cp=$(cd "$SRC" && scripts/checkpatch.pl --strict -q "$p" 2>&1 | grep "^total:" || true)
	errors=$(echo "$cp" | sed -n 's/^total: \([0-9]*\) errors.*/\1/p')
	[ "${errors:-0}" -eq 0 ] || bad=1
	docs=
	if grep -q '^+++ b/Documentation/.*\.rst$' "$p"; then
		if OUT_DIR=$BUILD/bisect/docs "$ROOT/scripts/check-docs.sh" "$SRC" \
			> "$BUILD/bisect/docs-$n.log" 2>&1; then
			docs="; docs build without warnings"
		else
			docs="; DOCS WARNINGS (build/bisect/docs-$n.log)"
			bad=1
		fi
	fi
	ran=
	if [ "$boot" = 1 ]; then
		if [ "$tests" != "tests build" ]; then
			ran="; NOT RUN (no tests)"
			bad=1
		elif result=$(run_prefix_tests "$n"); then
			ran="; runs: $result"
		else
			ran="; RUN FAILED: ${result:-no result} (build/bisect/run-$n/judge.log)"
			bad=1
		fi
	fi
	echo "$name: $build; $tests; checkpatch: ${cp:-clean}$docs$ran"
done
which="every prefix"
[ -z "${SERIES_ONLY:-}" ] || which="prefixes $SERIES_ONLY (of $n)"
echo "$LAYER: $n patches, $([ $bad -eq 0 ] && echo "$which: each builds, with its selftests, checkpatch reports no errors and the docs build without warnings$([ "$boot" = 1 ] && echo "; each prefix passes its own tests")" || echo FAILED)"
exit $bad
