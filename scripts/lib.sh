# Common helpers for the project's shell tooling; sourced, never run.
# Reads nothing at source time but the environment; the functions below say
# what they read and write. Sets ROOT, BUILD (build/, or $BUILD_DIR),
# VARIANT, TARBALL, CLANG, LLVM_STRIP, JOBS.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build}
VARIANT=${VARIANT:-patched}
TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
CLANG=${CLANG:-clang-19}
LLVM_STRIP=${LLVM_STRIP:-llvm-strip-19}
JOBS=${JOBS:-$(nproc)}

# Where each variant lives: build/VARIANT/{src,obj,tests}, so that switching
# variants never throws away another variant's build. The source is always
# ../src from the object dir: with CCACHE_BASEDIR=$BUILD the compiler command
# lines are the same for every variant, so unchanged files hit the cache.
src_dir()  { echo "$BUILD/$1/src"; }
obj_dir()  { echo "$BUILD/$1/obj"; }
test_dir() { echo "$BUILD/$1/tests"; }

die() { echo "error: $*" >&2; exit 1; }

check_variant() {
	case "$1" in
	upstream|baseline|patched|debug|noinline|hardened|upstream612) ;;
	upstream-full|patched-full) ;;
	*) die "unknown variant '$1' (pick upstream, baseline, patched, debug, noinline, hardened, upstream612, upstream-full or patched-full)" ;;
	esac
}

# upstream612 is no layer on 6.1: Debian's linux-source-6.12 as it is, a
# peer kernel for make bench (the state of the art our series is compared
# with). Its tree is a plain extraction of this tarball.
TARBALL_612=${TARBALL_612:-/usr/src/linux-source-6.12.tar.xz}
is_peer_variant() { [ "$1" = upstream612 ]; }

# The patch layers a variant is made of, applied in this order.
variant_layers() {
	case "$1" in
	upstream|upstream-full) ;;
	baseline) echo "$ROOT/kernel/baseline" ;;
	patched|debug|noinline|hardened|patched-full) echo "$ROOT/kernel/baseline"; echo "$ROOT/kernel/patches" ;;
	esac
}

# The patches of its layers a variant leaves out, as an extended regex on
# their file names: noinline is our series without the JIT inlining of
# bpf_kptr_xchg(), the "before" of that patch for make bench.
variant_skips() {
	case "$1" in
	noinline) echo 'Inline-bpf_kptr_xchg|bpf_kptr_xchg-is-inlined' ;;
	esac
}

# The patch files of a variant: every layer's, in order, less its skips.
variant_patches() {
	local layer skip
	skip=$(variant_skips "$1")
	for layer in $(variant_layers "$1"); do
		layer_patches "$layer"
	done | awk -v skip="$skip" 'skip == "" || $0 !~ skip'
}

# Config fragments of a variant, on top of allnoconfig: debug is the patched
# tree with the kernel's memory, lock and RCU checkers on, hardened the
# patched tree with IBT and the rest of the hardening distributions use,
# the *-full variants get what make check-clients needs of the selftests'
# config that allnoconfig would drop.
variant_configs() {
	echo "$ROOT/kernel/config/kptr.config"
	[ "$1" != debug ] || echo "$ROOT/kernel/config/debug.config"
	[ "$1" != hardened ] || echo "$ROOT/kernel/config/hardened.config"
	! is_full_variant "$1" || echo "$ROOT/kernel/config/full.config"
}

# The *-full variants (make check-full) are upstream and patched with the
# configuration upstream's BPF selftests are meant to run on: the tree's own
# tools/testing/selftests/bpf/config and config.x86_64, merged onto ours.
# Those two are taken as they come, so unlike variant_configs an option of
# theirs that olddefconfig drops is only listed (build/VARIANT/obj/
# config-dropped), not an error. Both variants read the pristine tree's
# copies, so their configs cannot differ.
is_full_variant() { case "$1" in *-full) return 0 ;; esac; return 1; }
variant_best_effort_configs() {
	local dir=$BUILD/linux/tools/testing/selftests/bpf
	is_full_variant "$1" || return 0
	echo "$dir/config"
	echo "$dir/config.x86_64"
}

# Our own tests (the patched tree's selftests) built against patched-full's
# kernel, for make check-full's own suites and make check-clients. The dir
# is named patched, so tests/matrix's /tests/patched paths hold.
OWN_FULL_TESTS=$BUILD/patched-full/own-tests/patched
build_own_full_tests() {
	KERNEL_SRC=$(src_dir patched-full) KERNEL_OBJ=$(obj_dir patched-full) \
		TESTS_OUT=$OWN_FULL_TESTS TESTS_LOG=$OWN_FULL_TESTS.log \
		VARIANT=patched "$ROOT/scripts/build-tests.sh" patched
}

# Print the patch files of a layer in series order (comments and blanks skipped).
layer_patches() {
	local layer=$1 p
	[ -f "$layer/series" ] || return 0
	while read -r p _; do
		case "$p" in ''|'#'*) continue ;; esac
		[ -f "$layer/$p" ] || die "$layer/series names $p, which does not exist"
		echo "$layer/$p"
	done < "$layer/series"
}

# need TOOL PACKAGE: fail early, naming the Debian package that provides TOOL.
need() {
	command -v "$1" >/dev/null 2>&1 ||
		die "'$1' not found: install the Debian package '$2' (apt-get install $2)"
}

# stage NAME CMD...: a one-line header, the command, then how long it took.
stage() {
	local name=$1 start rc
	shift
	echo "==> [$VARIANT] $name"
	start=$(date +%s)
	# A subshell with errexit of its own: with "cmd || rc=$?" bash would
	# ignore set -e inside cmd and carry on past a failing step.
	set +e
	(set -e; "$@")
	rc=$?
	set -e
	if [ $rc -eq 0 ]; then
		echo "<== [$VARIANT] $name: $(( $(date +%s) - start ))s"
	else
		echo "<== [$VARIANT] $name: FAILED after $(( $(date +%s) - start ))s"
	fi
	return $rc
}

# logged_stage NAME LOG CMD...: like stage, but the command's output goes
# to LOG (appended: the caller starts it afresh) and a progress line comes
# every PROGRESS_SECONDS (default 20): the stage, the objects built so far
# (the "  CC      kernel/bpf/verifier.o" lines kbuild and the selftests'
# make print), the elapsed time and the last object (for a stage that
# builds none, its last line). On failure the last
# LOG_TAIL (default 40) lines of LOG are printed; its path either way.
logged_stage() {
	local name=$1 log=$2 start rc ticker from n
	shift 2
	echo "==> [$VARIANT] $name (log: $log)"
	mkdir -p "$(dirname "$log")"
	touch "$log"
	# this stage's lines of LOG are the ones after FROM
	from=$(wc -l < "$log")
	start=$(date +%s)
	progress_ticker "$name" "$log" "$start" "$from" &
	ticker=$!
	set +e
	(set -e; "$@") >> "$log" 2>&1
	rc=$?
	set -e
	kill "$ticker" 2>/dev/null
	wait "$ticker" 2>/dev/null || true
	if [ $rc -eq 0 ]; then
		n=$(objects_built "$log" "$from")
		echo "<== [$VARIANT] $name: $(elapsed "$start")$([ "$n" -eq 0 ] || echo ", $n objects built")"
	else
		echo "<== [$VARIANT] $name: FAILED after $(elapsed "$start"); the last ${LOG_TAIL:-40} lines of $log:"
		tail -n "${LOG_TAIL:-40}" "$log" | sed 's/^/    /'
	fi
	return $rc
}

# A line of a build log that says an object was built: kbuild's quiet
# lines ("  CC      kernel/bpf/verifier.o", "  AS      ...", "  CC [M]  ...")
# and the selftests' ("  CLNG-BPF [test_maps] map_kptr.bpf.o").
OBJECT_LINE='^  [A-Z][A-Z0-9_-]*( \[M\])? +.*\.o$'
# objects_built LOG [FROM]: how many objects LOG says were built after its
# line FROM
objects_built() { tail -n +"$(( ${2:-0} + 1 ))" "$1" 2>/dev/null | grep -cE "$OBJECT_LINE" || true; }

elapsed() {
	local s=$(( $(date +%s) - $1 ))
	if [ $s -ge 60 ]; then echo "$((s / 60))m$((s % 60))s"; else echo "${s}s"; fi
}

# progress_ticker NAME LOG START FROM: logged_stage's progress line, until
# killed. The sleep runs in the background so that the TERM ends it at once.
progress_ticker() {
	local n last
	set +e
	trap 'kill $! 2>/dev/null; exit 0' TERM
	while sleep "${PROGRESS_SECONDS:-20}" & wait $!; do
		n=$(objects_built "$2" "$4")
		if [ "$n" -gt 0 ]; then
			last=$(tail -n +"$(( $4 + 1 ))" "$2" | grep -E "$OBJECT_LINE" | tail -1 | awk '{print $NF}')
			echo "    [$VARIANT] $1: $n objects built, $(elapsed "$3"), last: $last"
		else
			# a stage that builds no objects: its last line says where it is
			last=$(tail -n +"$(( $4 + 1 ))" "$2" | grep -v '^[[:space:]]*$' | tail -1 | cut -c1-100)
			echo "    [$VARIANT] $1: $(elapsed "$3")${last:+, last: $last}"
		fi
	done
}

# kbuild_identity: a fixed build identity for every make in a kernel's obj
# dir, so that ccache hits across variants and rebuilds, and so that a make
# there (bpf_testmod.ko's modules_prepare) does not rewrite
# include/generated/compile.h, which would relink vmlinux on the next build.
kbuild_identity() {
	export KBUILD_BUILD_TIMESTAMP="Thu Jan  1 00:00:00 UTC 2022"
	export KBUILD_BUILD_USER=kptr KBUILD_BUILD_HOST=qemu
}

# use_ccache: the compiler cache for kernel and module builds. An existing
# CCACHE_DIR is the user's and is used as it is: we never change its
# settings. Otherwise the cache is build/ccache, with its own ccache.conf
# and size limit (CCACHE_SIZE, default 5G), so that nothing under $HOME is
# touched. A developer with a warm cache elsewhere (the default one is
# ~/.cache/ccache) exports CCACHE_DIR=~/.cache/ccache to use it, or copies
# it into build/ccache once.
use_ccache() {
	if [ -z "${CCACHE_DIR:-}" ]; then
		export CCACHE_DIR=$BUILD/ccache
		mkdir -p "$CCACHE_DIR"
		[ -f "$CCACHE_DIR/ccache.conf" ] ||
			echo "max_size = ${CCACHE_SIZE:-5G}" > "$CCACHE_DIR/ccache.conf"
	fi
	# Paths below BUILD are hashed relative to it, so that every variant
	# and every checkout shares the cache; see src_dir.
	export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=true
}

# tree_worktree DIR COMMIT: make DIR a detached worktree of build/linux at
# COMMIT if it is not one yet (the variants' trees, check-series' bisect
# tree, check-regressions' injection tree). An existing one is left as it
# is: its owner resets it. build/linux must exist (prepare-tree.sh).
tree_worktree() {
	[ ! -e "$1/.git" ] || return 0
	git -C "$BUILD/linux" rev-parse -q --verify pristine >/dev/null ||
		die "$BUILD/linux has no pristine tree: run scripts/prepare-tree.sh upstream first"
	mkdir -p "$(dirname "$1")"
	# a worktree whose dir was deleted by hand still holds its name
	git -C "$BUILD/linux" worktree prune
	git -C "$BUILD/linux" worktree add -q --detach "$1" "$2"
}

# tree_reset DIR: a variant's or check-series' tree back to the pristine
# 6.1, nothing else in it (not even build output or untracked files).
tree_reset() {
	git -C "$1" reset -q --hard pristine
	git -C "$1" clean -q -fdx
}

# tree_am DIR PATCH: apply one patch of a layer as a commit. If it does not
# apply, DIR is left as before it, the hunks git rejects go to stderr, and
# the status is 1.
tree_am() {
	git -C "$1" am -q --whitespace=nowarn "$2" >/dev/null 2>&1 && return 0
	git -C "$1" am --abort >/dev/null 2>&1 || true
	echo "error: patch does not apply: ${2#"$ROOT"/}" >&2
	echo "--- rejected hunks:" >&2
	git -C "$1" apply --check -v "$2" 2>&1 |
		grep -v '^Checking\|^Hunk.*succeeded' >&2 || true
	return 1
}

# build_testmod_of SRC OBJ OUT [VARIANT]: bpf_testmod.ko of SRC's
# selftests, built against the kernel build OBJ (a module fits only the
# vmlinux it was built against), into OUT (also OUT.log); VARIANT (default
# patched) names the tree in the progress lines. For a kernel that has no
# tests of its own: bug injections, the hardened build, patched-full
# running upstream's.
build_testmod_of() {
	mkdir -p "$3"
	KERNEL_SRC=$1 KERNEL_OBJ=$2 TESTS_OUT=$3 MODULE_ONLY=1 \
		"$ROOT/scripts/build-tests.sh" "${4:-patched}"
}

# check_ibt_dtors SRC OBJ MODULE: the hardened check of a kernel build (make
# check-hardened, and the hardened/ injections of make check-regressions):
# every kptr destructor SRC registers, bpf_testmod's too (patch 26
# registers one), keeps its ENDBR in OBJ's vmlinux or MODULE. The exit
# status is scripts/check-ibt-dtors.py's (1: a sealed destructor).
check_ibt_dtors() {
	python3 "$ROOT/scripts/check-ibt-dtors.py" --src "$1" --vmlinux "$2/vmlinux" --module "$3"
}

# build_bpf_skel TESTS BPF_C OBJ_DIR [CFLAG...]: a BPF program compiled the
# way the selftests compile theirs, by clang-19 against the vmlinux.h of
# TESTS (a build-tests.sh output dir) with the CFLAGs added, into
# OBJ_DIR/NAME.bpf.o, and its libbpf skeleton OBJ_DIR/NAME.skel.h generated
# by that dir's bpftool (NAME: BPF_C without .bpf.c).
build_bpf_skel() {
	local tests=$1 bpf=$2 obj=$3 name
	shift 3
	name=$(basename "$bpf" .bpf.c)
	mkdir -p "$obj"
	"$CLANG" -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -Wall -Werror \
		"$@" -I"$tests/tools/include" -c "$bpf" -o "$obj/$name.bpf.o" || return
	"$tests/tools/sbin/bpftool" gen skeleton "$obj/$name.bpf.o" name "$name" \
		> "$obj/$name.skel.h"
}

# link_skel_loader TESTS LOADER_C OBJ_DIR OUT: a user-space loader that
# includes skeletons of OBJ_DIR (build_bpf_skel), linked with the libbpf.a
# of TESTS into OUT.
link_skel_loader() {
	local tests=$1 loader=$2 obj=$3 out=$4
	gcc -g -O2 -Wall -Werror -I"$obj" -I"$tests/tools/include" "$loader" \
		"$tests/tools/build/libbpf/libbpf.a" -lelf -lz -lpthread -o "$out"
}

# build_skel_program TESTS BPF_C LOADER_C OBJ_DIR OUT: one BPF program and
# its loader (the guest programs of build-tests.sh); the benchmark, with two
# programs for one loader and per-kernel flags, calls the two steps itself.
build_skel_program() {
	# || return: a caller's "if" or "||" turns set -e off in here
	build_bpf_skel "$1" "$2" "$4" || return
	link_skel_loader "$1" "$3" "$4" "$5"
}

# split_channel CHANNEL_LOG RUN_DIR: the guest's report (guest/init) into
# RUN_DIR's NAME.log, NAME.rc, NAME.timeout and verdict files.
split_channel() {
	local dir=$2
	rm -f "$dir"/*.rc "$dir"/*.timeout "$dir/verdict"
	awk -v dir="$dir" '
		/^@@file / { out = dir "/" $2 ".log"; printf "" > out; next }
		/^@@end$/  { close(out); out = ""; next }
		out != ""  { print >> out; next }
		/^@@rc /   { print $3 > (dir "/" $2 ".rc"); close(dir "/" $2 ".rc"); next }
		/^@@timeout / { print $3 > (dir "/" $2 ".timeout"); close(dir "/" $2 ".timeout"); next }
		/^@@verdict / { print $2 > (dir "/verdict") }
	' "$1"
}
