#!/usr/bin/env bash
# Make build/src/VARIANT: Debian's linux-source-6.1 with the variant's patch
# layers applied with git am, in series order.
#
# The tarball is extracted once into build/linux, a git repo whose commit
# tagged "pristine" is the untouched tree; each variant is a worktree of it.
# A variant is re-applied only when its layers changed, and then by resetting
# to pristine and applying again: git only rewrites the files that differ, so
# make rebuilds only what the patches touch.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

VARIANT=${1:-$VARIANT}
check_variant "$VARIANT"
need git git
need xz xz-utils

extract_pristine() {
	local repo=$BUILD/linux
	if [ ! -f "$TARBALL" ]; then
		echo "$TARBALL missing: installing linux-source-6.1"
		need apt-get apt
		apt-get install -y linux-source-6.1 >/dev/null ||
			die "could not install linux-source-6.1"
	fi
	[ -f "$TARBALL" ] || die "$TARBALL still missing after installing linux-source-6.1"
	if git -C "$repo" rev-parse -q --verify pristine >/dev/null 2>&1; then
		return 0
	fi
	rm -rf "$repo"
	mkdir -p "$repo"
	tar -xf "$TARBALL" -C "$repo" --strip-components=1
	git -C "$repo" init -q
	git -C "$repo" config user.name "kptr build"
	git -C "$repo" config user.email "kptr-build@localhost"
	git -C "$repo" config core.autocrlf false
	git -C "$repo" config gc.auto 0
	git -C "$repo" add -A -f
	git -C "$repo" commit -q -m "Debian linux-source-6.1 ($(basename "$TARBALL"))"
	git -C "$repo" tag pristine
}

# Everything that decides a variant's tree: the patch files, in order.
layers_stamp() {
	variant_patches "$VARIANT" | while read -r p; do
		echo "${p#"$ROOT"/} $(sha256sum < "$p")"
	done | sha256sum | cut -d' ' -f1
}

apply_layers() {
	local tree=$1 p
	git -C "$tree" reset -q --hard pristine
	git -C "$tree" clean -q -fdx
	for p in $(variant_patches "$VARIANT"); do
		if ! git -C "$tree" am -q --whitespace=nowarn "$p" >/dev/null 2>&1; then
			git -C "$tree" am --abort >/dev/null 2>&1 || true
			echo "error: patch does not apply: ${p#"$ROOT"/}" >&2
			echo "--- rejected hunks:" >&2
			git -C "$tree" apply --check -v "$p" 2>&1 |
				grep -v '^Checking\|^Hunk.*succeeded' >&2 || true
			exit 1
		fi
	done
}

main() {
	local tree stamp stampfile
	tree=$(src_dir "$VARIANT")
	stampfile=$BUILD/$VARIANT/layers.stamp
	stage extract extract_pristine
	if [ ! -e "$tree/.git" ]; then
		mkdir -p "$(dirname "$tree")"
		git -C "$BUILD/linux" worktree prune
		git -C "$BUILD/linux" worktree add -q --detach "$tree" pristine
		rm -f "$stampfile"
	fi
	stamp=$(layers_stamp)
	if [ "$(cat "$stampfile" 2>/dev/null)" = "$stamp" ]; then
		echo "[$VARIANT] tree up to date ($(git -C "$tree" rev-list --count pristine..HEAD) patches)"
		return 0
	fi
	rm -f "$stampfile"
	stage "apply patch layers" apply_layers "$tree"
	echo "$stamp" > "$stampfile"
	echo "[$VARIANT] $(git -C "$tree" rev-list --count pristine..HEAD) patches applied"
}

main
