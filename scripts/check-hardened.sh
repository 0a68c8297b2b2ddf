#!/usr/bin/env bash
# Build the hardened variant (patched + kernel/config/hardened.config: IBT
# and more) and check that every kptr destructor keeps its ENDBR in it
# (scripts/check-ibt-dtors.py): QEMU does not emulate IBT, so the only
# place a sealed destructor shows is the binary.
#
#   check-hardened.sh        exit status 0 when every destructor is fine
#
# Reads the hardened tree (build/hardened/src, made by prepare-tree.sh);
# writes its kernel build, build/hardened/obj (and obj.log), and that
# build's bpf_testmod.ko in build/hardened/obj-testmod.
#
# KERNEL_SRC/KERNEL_OBJ: check another prepared tree (check-regressions.sh
# does the same for its hardened/ injections through lib.sh's
# build_testmod_of and check_ibt_dtors)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SRC=${KERNEL_SRC:-$(src_dir hardened)}
OBJ=${KERNEL_OBJ:-$(obj_dir hardened)}
VARIANT=hardened "$ROOT/scripts/build-kernel.sh" hardened
build_testmod_of "$SRC" "$OBJ" "$OBJ-testmod"
check_ibt_dtors "$SRC" "$OBJ" "$OBJ-testmod/bpf_testmod.ko"
