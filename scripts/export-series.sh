#!/usr/bin/env bash
# Export the commits of a work tree as a patch layer:
#
#   export-series.sh TREE BASE [LAYER_DIR]
#
# TREE is a git worktree (e.g. one of build/linux, see README) whose commits
# BASE..HEAD are the layer; LAYER_DIR (default kernel/patches) gets one
# git format-patch file per commit, a series file listing them, and loses
# the patch files of an earlier export. If LAYER_DIR holds cover-letter.txt
# (a subject line, a blank line, the text), it becomes the layer's
# 0000-cover-letter.patch, with git's shortlog and diffstat, outside series.
# Reads TREE's commits; writes LAYER_DIR, and rewrites TREE's commits' dates
# (below).
#
# The files are reproducible: exporting the same commits again gives the
# same bytes, so a diff of the layer shows only real changes. For that the
# commits' author and committer dates are first set to one fixed date (the
# commits are rewritten in place, with no change to their content), the From
# lines carry no commit hash, and no signature is appended. Every commit
# gets the series' author (SERIES_AUTHOR): commits made while resolving a
# rebase would otherwise carry the build tree's local identity. The cover
# letter gets the same fixed date, and its "@BASE_TREE@" becomes the git
# tree id of BASE: unlike a commit id it depends only on the files, so it
# names the base on every machine.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

TREE=$1 BASE=$2 LAYER=${3:-$ROOT/kernel/patches}
FIXED_DATE=${FIXED_DATE:-"Thu, 1 Jan 2026 00:00:00 +0000"}
SERIES_AUTHOR=${SERIES_AUTHOR:-"Kptr Project <kptr@localhost>"}
author_name=${SERIES_AUTHOR% <*} author_email=${SERIES_AUTHOR##*<}
author_email=${author_email%>}
git -C "$TREE" rev-parse -q --verify "$BASE" >/dev/null || die "$BASE is not a commit of $TREE"
[ -z "$(git -C "$TREE" status --porcelain --untracked-files=no)" ] ||
	die "$TREE has uncommitted changes: commit them first"

# Fixed dates, by replaying the commits onto the base with the same trees
stamp() {
	local base=$1 c tip
	tip=$(git -C "$TREE" rev-parse "$base")
	for c in $(git -C "$TREE" rev-list --reverse "$base"..HEAD); do
		tip=$(GIT_AUTHOR_DATE="$FIXED_DATE" GIT_COMMITTER_DATE="$FIXED_DATE" \
			GIT_AUTHOR_NAME="$author_name" GIT_AUTHOR_EMAIL="$author_email" \
			GIT_COMMITTER_NAME="$author_name" GIT_COMMITTER_EMAIL="$author_email" \
			git -C "$TREE" commit-tree "$c^{tree}" -p "$tip" \
			-m "$(git -C "$TREE" log -1 --format=%B "$c")")
	done
	git -C "$TREE" reset -q --soft "$tip"
}
stamp "$BASE"

mkdir -p "$LAYER"
LAYER=$(cd "$LAYER" && pwd)	# git -C runs in TREE
rm -f "$LAYER"/[0-9][0-9][0-9][0-9]-*.patch
cover=()
[ -f "$LAYER/cover-letter.txt" ] && cover=(--cover-letter)
GIT_COMMITTER_NAME="$author_name" GIT_COMMITTER_EMAIL="$author_email" \
	git -C "$TREE" format-patch -q --zero-commit --no-signature --numbered \
	"${cover[@]}" -o "$LAYER" "$BASE"..HEAD
if [ ${#cover[@]} -gt 0 ]; then
	# git's template has placeholders for the subject and the text
	python3 - "$LAYER/0000-cover-letter.patch" "$LAYER/cover-letter.txt" \
		"$FIXED_DATE" "$(git -C "$TREE" rev-parse --short=12 "$BASE^{tree}")" <<'PY'
import re, sys
patch, text, date, base_tree = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3], sys.argv[4]
subject, _, body = text.partition("\n\n")
body = body.replace("@BASE_TREE@", base_tree)
p = open(patch).read()
p = re.sub(r"^Date: .*$", "Date: " + date, p, count=1, flags=re.M)
p = p.replace("*** SUBJECT HERE ***", subject.strip(), 1)
p = p.replace("*** BLURB HERE ***", body.rstrip("\n"), 1)
open(patch, "w").write(p)
PY
fi
(cd "$LAYER" && ls [0-9][0-9][0-9][0-9]-*.patch | grep -v '^0000-') > "$LAYER/series"
echo "exported $(wc -l < "$LAYER/series") patches of $TREE to ${LAYER#"$ROOT"/}"
