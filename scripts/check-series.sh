#!/usr/bin/env bash
# Check that a patch layer is bisectable and clean: apply its patches one by
# one onto the layers below it, build the kernel after each (incrementally,
# with ccache), and run checkpatch.pl --strict on each patch.
#
#   check-series.sh baseline|patches
#
# SERIES_FROM=N: apply patches 1..N-1 of the layer without building or
# checking them, and check from patch N on (after adding patches on top of
# a series whose prefixes were checked already).
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
SRC=$BUILD/bisect/src OBJ=$BUILD/bisect/obj
export VARIANT=bisect
"$ROOT/scripts/prepare-tree.sh" upstream >/dev/null	# makes sure build/linux exists
if [ ! -e "$SRC/.git" ]; then
	mkdir -p "$BUILD/bisect"
	git -C "$BUILD/linux" worktree add -q --detach "$SRC" pristine
fi
git -C "$SRC" reset -q --hard pristine
git -C "$SRC" clean -q -fdx
for l in "${below[@]}"; do
	for p in $(layer_patches "$l"); do
		git -C "$SRC" am -q "$p" || die "${p#"$ROOT"/} does not apply"
	done
done

bad=0 n=0
from=${SERIES_FROM:-1}
for p in $(layer_patches "$ROOT/kernel/$LAYER"); do
	n=$((n + 1))
	name=$(basename "$p")
	if ! git -C "$SRC" am -q "$p"; then
		git -C "$SRC" am --abort || true
		echo "FAIL $name: does not apply"
		exit 1
	fi
	[ "$n" -ge "$from" ] || continue
	start=$(date +%s)
	if KERNEL_SRC=$SRC KERNEL_OBJ=$OBJ "$ROOT/scripts/build-kernel.sh" > "$BUILD/bisect/build-$n.log" 2>&1; then
		build="builds in $(( $(date +%s) - start ))s"
		warnings=$(grep -c 'warning:' "$BUILD/bisect/build-$n.log" || true)
		[ "$warnings" -eq 0 ] || { build="$build, $warnings compiler warnings"; bad=1; }
	else
		build="BUILD FAILED (build/bisect/build-$n.log)"
		bad=1
	fi
	cp=$(cd "$SRC" && scripts/checkpatch.pl --strict -q "$p" 2>&1 | grep "^total:" || true)
	errors=$(echo "$cp" | sed -n 's/^total: \([0-9]*\) errors.*/\1/p')
	[ "${errors:-0}" -eq 0 ] || bad=1
	echo "$name: $build; checkpatch: ${cp:-clean}"
done
echo "$LAYER: $n patches, $([ $bad -eq 0 ] && echo "every prefix builds and checkpatch reports no errors" || echo FAILED)"
exit $bad
