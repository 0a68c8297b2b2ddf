#!/usr/bin/env bash
# Check that the Documentation pages some commits of a kernel tree change
# build with the kernel's own Sphinx setup (make htmldocs SPHINXDIRS=...,
# fresh, so every page is read again) without a warning or an error.
# Warnings of pages the commits did not touch are the tree's own (6.1's
# Documentation/bpf has some) and are not counted.
#
#   check-docs.sh TREE [RANGE]     RANGE: git revisions, default HEAD~1..HEAD
#
# Reads TREE (a git worktree of build/linux). Writes OUT_DIR (default
# build/docs): the HTML and the build's log, build.log. Prints the
# warnings of the changed pages; exit status 1 if there is one, 0 if none
# or no page changed. Needs python3-sphinx (install-deps.sh docs).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

TREE=$(cd "$1" && pwd) RANGE=${2:-HEAD~1..HEAD}
OUT=${OUT_DIR:-$BUILD/docs}
need sphinx-build python3-sphinx

mapfile -t pages < <(git -C "$TREE" diff --name-only "$RANGE" -- 'Documentation/*.rst')
if [ ${#pages[@]} -eq 0 ]; then
	echo "docs: no page changed"
	exit 0
fi
# SPHINXDIRS: the top dirs of Documentation/ that hold them
dirs=$(printf '%s\n' "${pages[@]}" | awk -F/ 'NF > 2 { print $2 }' | sort -u | tr '\n' ' ')
mkdir -p "$OUT"
# -E: read every page again, or an unchanged page's warnings would not
# show up a second time
if ! make -C "$TREE" O="$OUT" SPHINXDIRS="${dirs:-.}" SPHINXOPTS="-E" htmldocs \
	> "$OUT/build.log" 2>&1; then
	echo "docs: the Sphinx build failed ($OUT/build.log):"
	tail -20 "$OUT/build.log"
	exit 1
fi
pattern=$(printf '%s\n' "${pages[@]}" | sed 's/[.]/[.]/g' | paste -sd'|')
warnings=$(grep -E "(^|/)($pattern)(:[0-9]+)?: *(WARNING|ERROR|SEVERE|CRITICAL)" "$OUT/build.log" |
	sed "s|^$TREE/||" | sort -u || true)
if [ -n "$warnings" ]; then
	echo "docs: warnings or errors in ${pages[*]}: $(echo "$warnings" | wc -l)"
	echo "$warnings" | sed 's/^/  /'
	exit 1
fi
echo "docs: ${pages[*]} build without warnings"
