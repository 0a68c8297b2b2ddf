#!/usr/bin/env bash
# Show that each regression test catches its bug: for every
# tests/bug-injections/NAME.patch, build our patched kernel with that bug put
# back, boot it, run the subtests the patch names and require them to run
# and FAIL (or the kernel to report a splat, tests/kernel-splats, while they
# run, e.g. an oops that ended them). A test that did not run, was skipped
# or timed out, and the kernel reported nothing, is not a catch; nor is a
# guest that hung.
# Injections under kasan/ are bugs only the debug kernel's checkers see
# (KASAN, kmemleak, lockdep; also no stack zeroing): their kernel gets the
# debug variant's config. Those under hardened/ show only in a hardened
# build's binary: its kernel gets the hardened config and, instead of a
# guest run, "Caught-by: check-ibt-dtors" runs scripts/check-ibt-dtors.py,
# which must fail. "Caught-by: exit: CMD" runs a guest program, which must
# exit 1 (and print a line matching the regex of a "Caught-output:" line,
# if there is one); "Caught-by: splat: CMD" runs one that only the
# kernel's report of the bug (KASAN, say) catches. Ends with a table; exit
# status 0 only if every injected bug was caught.
#
#   check-regressions.sh [NAME...]   (default: every injection, kasan/ and
#                                     hardened/ too)
#
# The patched kernel and its tests must be built (make tests). Each
# injection's kernel is an incremental build of build/inject/obj, or of
# build/inject/obj-debug for kasan/ ones.
#
# Reads tests/bug-injections/, the patched tree and tests (build/patched).
# Writes build/inject (the tree, kernel builds and their logs, each build's
# tests) and build/runs/regressions-DATE/NAME/ (each injection's guest run).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

INJ=$ROOT/tests/bug-injections
SRC=$BUILD/inject/src
OBJ=$BUILD/inject/obj
RUNS=$BUILD/runs/regressions-$(date +%Y%m%d-%H%M%S)
PATCHED=$(src_dir patched)
[ -x "$(test_dir patched)/test_progs" ] || die "build the patched tests first: make tests"

names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(cd "$INJ" && ls *.patch kasan/*.patch hardened/*.patch | sed 's/\.patch$//')

# A worktree of the patched tree, reset to it before each injection.
tree_worktree "$SRC" "$(git -C "$PATCHED" rev-parse HEAD)"

results=()
caught_all=0
# result VERDICT: the table's line for injection $n, whose tests are $tests
result() { results+=("$(printf '%-28s %-40s %s' "$n" "$tests" "$1")"); }
for n in "${names[@]}"; do
	patch=$INJ/$n.patch
	[ -f "$patch" ] || die "no injection $patch"
	# The subtests that must catch this bug, from the patch's "Caught-by:" line
	tests=$(sed -n 's/^Caught-by: *//p' "$patch" | head -1)
	[ -n "$tests" ] || die "$patch names no Caught-by: subtests"
	# the line a guest program prints when it sees this bug (optional)
	output=$(sed -n 's/^Caught-output: *//p' "$patch" | head -1)
	git -C "$SRC" reset -q --hard "$(git -C "$PATCHED" rev-parse HEAD)"
	git -C "$SRC" apply "$patch" || die "$n does not apply to the patched tree"
	# the variant named to build-kernel.sh only picks the config
	config=patched obj=$OBJ
	case "$n" in
	kasan/*) config=debug obj=$OBJ-debug ;;
	hardened/*) config=hardened obj=$OBJ-hardened ;;
	esac
	# A kernel that does not build proves nothing about its test; the
	# other injections still run, and the table says which one it was.
	if ! KERNEL_SRC=$SRC KERNEL_OBJ=$obj "$ROOT/scripts/build-kernel.sh" "$config"; then
		result "NOT RUN: its kernel does not build (above; ${obj#"$BUILD"/}.log)"
		caught_all=1
		continue
	fi
	# The patched tests, with a bpf_testmod.ko of this kernel build: a
	# module's BTF only fits the vmlinux it was built against. The dir's
	# name puts them at /tests/patched in the guest.
	tests_dir=$obj-tests/patched
	mkdir -p "$tests_dir"
	rsync -a --delete "$(test_dir patched)/" "$tests_dir/"
	if ! build_testmod_of "$SRC" "$obj" "$tests_dir"; then
		result "NOT RUN: its bpf_testmod.ko does not build"
		caught_all=1
		continue
	fi
	run=$RUNS/$n
	mkdir -p "$run"
	# Bugs only the hardened build's binary shows, caught by its check
	if [ "$tests" = check-ibt-dtors ]; then
		if check_ibt_dtors "$SRC" "$obj" "$tests_dir/bpf_testmod.ko" \
			> "$run/check.log" 2>&1; then
			verdict="MISSED: every destructor kept its ENDBR"
			caught_all=1
		elif [ $? -eq 1 ]; then
			verdict="caught: $(grep -m1 '^FAIL' "$run/check.log")"
		else
			verdict="MISSED: the build could not be checked ($run/check.log)"
			caught_all=1
		fi
		result "$verdict"
		continue
	fi
	# "Caught-by: exit: CMD" names a guest program instead of subtests
	case "$tests" in
	exit:*) cmd=${tests#exit:} ;;
	splat:*) cmd=${tests#splat:} ;;
	*) cmd="./test_progs -t $tests" ;;
	esac
	echo "run_suite regress ${SUITE_TIMEOUT:-600} /tests/patched $cmd" > "$run/plan.sh"
	# the guest's status is not used: a splat while the test ran counts too
	KERNEL_IMAGE=$obj/arch/x86/boot/bzImage GUEST_CMDLINE="${INJECT_CMDLINE:-}" \
		VARIANT=inject-$n "$ROOT/scripts/run-guest.sh" inject "$run" "$run/plan.sh" \
		"$tests_dir" || true
	rc=$(cat "$run/regress.rc" 2>/dev/null || echo none)
	splat=$({ python3 "$ROOT/scripts/judge.py" splats "$run/console.log" || true; } | wc -l)
	# Caught only if the named tests ran and failed, or the kernel reported
	# a splat while they ran (scripts/judge.py, judge_regression()).
	if verdict=$(python3 "$ROOT/scripts/judge.py" regression "$run" "$tests" \
		${output:+"$output"}); then :; else
		caught_all=1
	fi
	results+=("$(printf '%-28s %-40s rc=%-4s splats=%-3s %s' \
		"$n" "$tests" "$rc" "$splat" "$verdict")")
done
git -C "$SRC" reset -q --hard "$(git -C "$PATCHED" rev-parse HEAD)"

echo
echo "bug injections (each must be caught):"
printf '  %s\n' "${results[@]}"
echo "runs: $RUNS"
exit $caught_all
