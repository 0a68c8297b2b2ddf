#!/usr/bin/env bash
# Make build/VARIANT/src: Debian's linux-source-6.1 with the variant's patch
# layers applied with git am, in series order.
#
#   prepare-tree.sh [VARIANT]
#
# Reads: /usr/src/linux-source-6.1.tar.xz (TARBALL), the variant's layers
# (kernel/baseline, kernel/patches: series files and patches). Writes:
# build/linux (the extracted tree, once), build/VARIANT/src (a worktree of
# it), build/VARIANT/layers.stamp (what was applied), build/linux.log and
# build/VARIANT/prepare.log (the extraction's and the patches' output).
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

# need_tarball TARBALL PACKAGE [GROUP]: install PACKAGE when TARBALL is
# missing, through the one list of packages (install-deps.sh GROUP), which
# asks for root only if it must.
need_tarball() {
	[ -f "$1" ] || "$ROOT/scripts/install-deps.sh" ${3:+"$3"} ||
		die "could not install $2"
	[ -f "$1" ] || die "$1 still missing after installing $2"
}

extract_pristine() {
	local repo=$BUILD/linux
	need_tarball "$TARBALL" linux-source-6.1
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

# Resetting to pristine and applying again gives every file the layers
# touch a new mtime, and a change to one selftest then rebuilds the whole
# kernel (bpf.h is in the series). So the mtimes of the files the old
# layers changed are saved first, and each file whose content the new
# layers leave as it was gets its mtime back: make then rebuilds only what
# really changed. Only for a tree that matched its commit (nothing edited by
# hand), whose objects were built from exactly that content.
apply_layers() {
	local tree=$1 p old mtime name kept
	local -A saved=() changed=()
	old=$(git -C "$tree" rev-parse -q --verify HEAD) || old=
	if [ -n "$old" ] && [ "$old" != "$(git -C "$tree" rev-parse pristine)" ] &&
		git -C "$tree" diff --quiet HEAD; then
		while read -r mtime name; do
			saved[$name]=$mtime
		done < <(git -C "$tree" diff --name-only --diff-filter=AM pristine "$old" |
			(cd "$tree" && xargs -r -d '\n' stat -c '%Y %n'))
	fi
	tree_reset "$tree"
	for p in $(variant_patches "$VARIANT"); do
		echo "applying ${p#"$ROOT"/}"
		tree_am "$tree" "$p" || exit 1
	done
	[ ${#saved[@]} -gt 0 ] || return 0
	while read -r name; do
		changed[$name]=1
	done < <(git -C "$tree" diff --name-only "$old" HEAD)
	kept=0
	for name in "${!saved[@]}"; do
		[ -z "${changed[$name]:-}" ] && [ -f "$tree/$name" ] || continue
		touch -m -d "@${saved[$name]}" "$tree/$name"
		kept=$((kept + 1))
	done
	echo "$kept files as they were keep their mtimes; ${#changed[@]} files changed"
}

# A peer kernel (upstream612): its own tarball, extracted once, no layers.
prepare_peer() {
	local tree=$1
	need_tarball "$TARBALL_612" linux-source-6.12 peer
	rm -rf "$tree"
	mkdir -p "$tree"
	tar -xf "$TARBALL_612" -C "$tree" --strip-components=1
	touch "$tree/.extracted"
	echo "[$VARIANT] extracted $(basename "$TARBALL_612")"
}

main() {
	local tree stamp stampfile
	tree=$(src_dir "$VARIANT")
	if is_peer_variant "$VARIANT"; then
		if [ -f "$tree/Makefile" ] && [ -f "$tree/.extracted" ]; then
			echo "[$VARIANT] tree up to date ($(make -s -C "$tree" kernelversion))"
			return 0
		fi
		mkdir -p "$BUILD/$VARIANT"
		: > "$BUILD/$VARIANT/prepare.log"
		logged_stage "extract the peer's tree" "$BUILD/$VARIANT/prepare.log" \
			prepare_peer "$tree"
		return 0
	fi
	stampfile=$BUILD/$VARIANT/layers.stamp
	if git -C "$BUILD/linux" rev-parse -q --verify pristine >/dev/null 2>&1; then
		extract_pristine
	else
		# minutes: 1.3 GB of tree into a git repo
		mkdir -p "$BUILD"
		: > "$BUILD/linux.log"
		logged_stage "extract $(basename "$TARBALL") into build/linux" \
			"$BUILD/linux.log" extract_pristine
	fi
	if [ ! -e "$tree/.git" ]; then
		tree_worktree "$tree" pristine
		rm -f "$stampfile"
	fi
	stamp=$(layers_stamp)
	if [ "$(cat "$stampfile" 2>/dev/null)" = "$stamp" ]; then
		echo "[$VARIANT] tree up to date ($(git -C "$tree" rev-list --count pristine..HEAD) patches)"
		return 0
	fi
	rm -f "$stampfile"
	mkdir -p "$BUILD/$VARIANT"
	: > "$BUILD/$VARIANT/prepare.log"
	logged_stage "apply patch layers" "$BUILD/$VARIANT/prepare.log" apply_layers "$tree"
	echo "$stamp" > "$stampfile"
	echo "[$VARIANT] $(git -C "$tree" rev-list --count pristine..HEAD) patches applied"
}

main
