#!/usr/bin/env bash
# Build build/obj/VARIANT/arch/x86/boot/bzImage (and vmlinux, whose BTF the
# tests compile against) from the variant's prepared tree.
#
# Config: allnoconfig plus the variant's kernel/config/*.config fragments
# (variant_configs), redone only when a fragment changed. Every requested option must survive olddefconfig.
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
[ -n "${EXTRA_CONFIG:-}" ] && FRAGMENTS+=("$EXTRA_CONFIG")

# Fixed build identity so that ccache hits across variants and rebuilds.
export KBUILD_BUILD_TIMESTAMP="Thu Jan  1 00:00:00 UTC 2022"
export KBUILD_BUILD_USER=kptr KBUILD_BUILD_HOST=qemu
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
export CCACHE_BASEDIR=$BUILD CCACHE_NOHASHDIR=true
KMAKE=(make -C "$SRC" O="$OBJ" -j"$JOBS" CC="ccache gcc" HOSTCC="ccache gcc")

make_config() {
	mkdir -p "$OBJ"
	"${KMAKE[@]}" -s allnoconfig
	(cd "$OBJ" && "$SRC/scripts/kconfig/merge_config.sh" -m -O "$OBJ" \
		"$OBJ/.config" "${FRAGMENTS[@]}" >/dev/null)
	"${KMAKE[@]}" -s olddefconfig
	local f line missing=0
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
	ccache -M 20G >/dev/null
	stamp=$(cat "${FRAGMENTS[@]}" | sha256sum | cut -d' ' -f1)
	if [ ! -f "$OBJ/.config" ] || [ "$(cat "$OBJ/.config-stamp" 2>/dev/null)" != "$stamp" ]; then
		stage "configure kernel" make_config
		echo "$stamp" > "$OBJ/.config-stamp"
	fi
	# One kernel build at a time on this machine, whoever starts it and
	# from whichever checkout: two would share 2 cores and each take twice
	# as long.
	exec 9>"${KERNEL_BUILD_LOCK:-/tmp/kptr-kernel-build.lock}"
	flock 9
	stage "build kernel" "${KMAKE[@]}" -s bzImage
	exec 9>&-
	echo "[$VARIANT] kernel: $OBJ/arch/x86/boot/bzImage"
}

main
