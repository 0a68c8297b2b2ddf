#!/usr/bin/env bash
# Build a variant's kernel: build/VARIANT/obj/arch/x86/boot/bzImage, and
# vmlinux, whose BTF the tests compile against.
#
#   build-kernel.sh [VARIANT]
#
# Reads: the variant's tree build/VARIANT/src (made first by prepare-tree.sh
# from kernel/baseline and kernel/patches), its config fragments
# kernel/config/*.config. Writes: build/VARIANT/obj, the build's full output
# in build/VARIANT/obj.log (KERNEL_LOG; a progress line every 20 s on the
# terminal, its last lines on failure), the compiler cache (use_ccache in
# lib.sh: build/ccache, or the CCACHE_DIR you set).
#
# Config: allnoconfig plus the variant's kernel/config/*.config fragments
# (variant_configs), redone only when a fragment changed. Every requested
# option must survive olddefconfig. The *-full variants also merge the
# selftests' config files (variant_best_effort_configs), under ours; what
# of those does not survive is listed in build/VARIANT/obj/config-dropped. The build is skipped when no file of
# the tree is newer than the bzImage (KERNEL_FORCE_MAKE=1: run make anyway).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VARIANT=${1:-$VARIANT}
# KERNEL_SRC/KERNEL_OBJ: build an already prepared tree instead (check-series.sh)
[ -n "${KERNEL_SRC:-}" ] || check_variant "$VARIANT"
for t in gcc:gcc make:make flex:flex bison:bison bc:bc pahole:pahole \
	 ccache:ccache perl:perl; do
	need "${t%%:*}" "${t#*:}"
done
[ -f /usr/include/libelf.h ] || die "libelf.h missing: apt-get install libelf-dev"
[ -f /usr/include/openssl/ssl.h ] || die "openssl headers missing: apt-get install libssl-dev"

SRC=${KERNEL_SRC:-$(src_dir "$VARIANT")}
OBJ=${KERNEL_OBJ:-$(obj_dir "$VARIANT")}
mapfile -t FRAGMENTS < <(variant_configs "$VARIANT")
mapfile -t BEST_EFFORT < <(variant_best_effort_configs "$VARIANT")
[ -n "${EXTRA_CONFIG:-}" ] && FRAGMENTS+=("$EXTRA_CONFIG")

LOG=${KERNEL_LOG:-$OBJ.log}

kbuild_identity
use_ccache
KMAKE=(make -C "$SRC" O="$OBJ" -j"$JOBS" CC="ccache gcc" HOSTCC="ccache gcc")
# 6.1's scripts/pahole-flags.sh runs pahole 1.22-1.25 with -j, which
# orders vmlinux's BTF types differently on every link. Lookups by name
# (libbpf's of kfuncs, the kernel's of kptr types) scan the types in
# order, so loading the same object cost 8 % more instructions on one
# build of the series than on the one before (make bench's
# load_selftest). Without -j the order is the link order on every build.
if [ -f "$SRC/scripts/pahole-flags.sh" ]; then
	KMAKE+=(PAHOLE_FLAGS="$(PAHOLE=pahole sh "$SRC/scripts/pahole-flags.sh" |
		sed -E 's/(^| )-j( |$)/ /g; s/^ +| +$//g')")
fi

make_config() {
	mkdir -p "$OBJ"
	"${KMAKE[@]}" -s allnoconfig
	# ours last, so that where a best-effort fragment disagrees ours wins
	(cd "$OBJ" && "$SRC/scripts/kconfig/merge_config.sh" -m -O "$OBJ" \
		"$OBJ/.config" "${BEST_EFFORT[@]}" "${FRAGMENTS[@]}" >/dev/null)
	"${KMAKE[@]}" -s olddefconfig
	local f line missing=0
	: > "$OBJ/config-dropped"
	for f in "${BEST_EFFORT[@]}"; do
		grep '^CONFIG_' "$f" | while read -r line; do
			grep -qxF "$line" "$OBJ/.config" ||
				echo "$line (${f#"$BUILD"/}): now $(grep -E "^(# )?${line%%=*}[= ]" "$OBJ/.config" || echo absent)"
		done >> "$OBJ/config-dropped"
	done
	[ ! -s "$OBJ/config-dropped" ] ||
		echo "[$VARIANT] $(wc -l < "$OBJ/config-dropped") best-effort config lines not kept: $OBJ/config-dropped"
	for f in "${FRAGMENTS[@]}"; do
		while read -r line; do
			case "$line" in CONFIG_*) ;; *) continue ;; esac
			if ! grep -qxF "$line" "$OBJ/.config"; then
				echo "error: $line requested by ${f#"$ROOT"/} is not in the final .config" >&2
				missing=1
			fi
		done < "$f"
	done
	[ $missing -eq 0 ] || { rm -f "$OBJ/.config"; die "kernel config incomplete (see above)"; }
}

main() {
	local stamp
	[ -n "${KERNEL_SRC:-}" ] || "$ROOT/scripts/prepare-tree.sh" "$VARIANT"
	mkdir -p "$(dirname "$LOG")"
	: > "$LOG"
	stamp=$(cat "${BEST_EFFORT[@]}" "${FRAGMENTS[@]}" | sha256sum | cut -d' ' -f1)
	if [ ! -f "$OBJ/.config" ] || [ "$(cat "$OBJ/.config-stamp" 2>/dev/null)" != "$stamp" ]; then
		logged_stage "configure kernel" "$LOG" make_config
		echo "$stamp" > "$OBJ/.config-stamp"
	fi
	# Nothing in the tree (but the selftests, which the kernel does not
	# build from), nor the config, newer than the last bzImage:
	# nothing to build, so no need to wait for the machine's build lock
	# (the daily loop, while others build). A find of the tree takes a
	# second; kbuild's own walk 20-30 s.
	if [ -f "$OBJ/arch/x86/boot/bzImage" ] && [ -z "${KERNEL_FORCE_MAKE:-}" ] &&
	   [ ! "$OBJ/.config" -nt "$OBJ/arch/x86/boot/bzImage" ] &&
	   [ -z "$(find "$SRC" \( -path "$SRC/.git" -o -path "$SRC/tools/testing" \) -prune -o \
		   -newer "$OBJ/arch/x86/boot/bzImage" -print -quit)" ]; then
		echo "[$VARIANT] kernel up to date: $OBJ/arch/x86/boot/bzImage"
		return 0
	fi
	# One kernel build at a time on this machine, whoever starts it and
	# from whichever checkout: two would share 2 cores and each take twice
	# as long.
	exec 9>"${KERNEL_BUILD_LOCK:-/tmp/kptr-kernel-build.lock}"
	if ! flock -n 9; then
		local waited=$(date +%s)
		echo "[$VARIANT] waiting for another kernel build on this machine to end"
		# a line every 20 s, so that a wait is not taken for a hang
		until flock -w "${PROGRESS_SECONDS:-20}" 9; do
			echo "    [$VARIANT] still waiting for the other kernel build: $(elapsed "$waited")"
		done
		echo "[$VARIANT] waited $(elapsed "$waited")"
	fi
	# Not -s: kbuild's one line per object is what the progress line counts.
	logged_stage "build kernel" "$LOG" "${KMAKE[@]}" bzImage
	exec 9>&-
	echo "[$VARIANT] kernel: $OBJ/arch/x86/boot/bzImage"
}

main
