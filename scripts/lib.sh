# Common helpers for the project's shell tooling; sourced, never run.
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
	upstream|baseline|patched|debug|noinline|hardened) ;;
	*) die "unknown variant '$1' (pick upstream, baseline, patched, debug, noinline or hardened)" ;;
	esac
}

# The patch layers a variant is made of, applied in this order.
variant_layers() {
	case "$1" in
	upstream) ;;
	baseline) echo "$ROOT/kernel/baseline" ;;
	patched|debug|noinline|hardened) echo "$ROOT/kernel/baseline"; echo "$ROOT/kernel/patches" ;;
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
# patched tree with IBT and the rest of the hardening distributions use.
variant_configs() {
	echo "$ROOT/kernel/config/kptr.config"
	[ "$1" != debug ] || echo "$ROOT/kernel/config/debug.config"
	[ "$1" != hardened ] || echo "$ROOT/kernel/config/hardened.config"
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
