#!/usr/bin/env bash
# Judge one suite's output against what it was expected to do.
#
#   judge.sh KIND LOG EXPECT KNOWN
#
# KIND    test_verifier or test_progs: how test cases are printed in LOG;
#         exit: a single case, judged by the exit code in LOG's .rc file.
# EXPECT  pass: every case must pass (or skip);
#         fail: every case must fail (the baseline kernel must reject it);
#         fail:@LIST: cases whose name matches one of the regexes in
#         tests/expected-failures/LIST must fail, all others pass;
#         pass:@LIST: the other way round (listed cases pass, others fail).
# KNOWN   file of cases known to fail for a documented reason, one per line:
#         "NAME<TAB>reason". They count as skipped; one that passes is an error,
#         so the list cannot go stale.
#
# Prints one line per unexpected result and a final "P F S" line (passed,
# failed, skipped counts) for the caller to add up.
set -euo pipefail

KIND=$1 LOG=$2 EXPECT=$3 KNOWN=${4:-/dev/null}
[ -f "$KNOWN" ] || KNOWN=/dev/null
XFAIL=/dev/null
case "$EXPECT" in
fail:@*|pass:@*)
	XFAIL=$(cd "$(dirname "$0")/.." && pwd)/tests/expected-failures/${EXPECT#*:@}
	[ -f "$XFAIL" ] || { echo "judge: no list $XFAIL" >&2; exit 2; }
	EXPECT=${EXPECT%%:*}-listed ;;
pass|fail) ;;
*) echo "judge: unknown expectation $EXPECT" >&2; exit 2 ;;
esac

if [ "$KIND" = exit ]; then
	rc=$(cat "${LOG%.log}.rc" 2>/dev/null || echo missing)
	case "$EXPECT:$rc" in
	pass:0) echo "1 0 0" ;;
	fail:0) echo "  unexpected exit code 0 (expected to fail)"; echo "0 1 0" ;;
	*:missing) echo "  no exit code reported"; echo "0 1 0" ;;
	pass:*) echo "  unexpected exit code $rc (expected 0)"; echo "0 1 0" ;;
	fail:*) echo "1 0 0" ;;
	esac
	exit 0
fi

case "$KIND" in
# "#12/p some descr OK" (also FAIL, SKIP; a FAIL is followed by details)
test_verifier) CASES='^#[0-9]+\/[up] .* (OK|FAIL|SKIP)( \\([^()]*\\))?$' ;;
# "#3/2     map_kptr/sub:OK" for subtests, "#3       map_kptr:OK" for a test
# without subtests (a test with subtests is judged by its subtests).
test_progs) CASES='^#[0-9]+(\/[0-9]+)? +[^ ].*:(OK|FAIL|SKIP)$' ;;
*) echo "judge: unknown kind $KIND" >&2; exit 2 ;;
esac

awk -v kind="$KIND" -v cases="$CASES" -v expect="$EXPECT" -v known="$KNOWN" -v xfail="$XFAIL" '
BEGIN {
	FS = "\t"
	while ((getline line < known) > 0) {
		if (line ~ /^#/ || line == "") continue
		split(line, f, "\t"); isknown[f[1]] = f[2]
	}
	mode = expect; nre = 0
	while ((getline line < xfail) > 0)
		if (line !~ /^#/ && line != "") xre[++nre] = line
}
/^Summary: / { summary = 1 }
# test_progs prints the output of failed tests again after this line
/^All error logs:$/ { repeat = 1 }
repeat { next }
$0 ~ cases {
	line = $0
	if (kind == "test_verifier") {
		# "... SKIP (unsupported map type 17)": the reason is not the name
		sub(/ \([^()]*\)$/, "", line)
		n = split(line, w, " "); res = w[n]
		name = line; sub(/^#[0-9]+\//, "", name); sub(/ [A-Z]+$/, "", name)
		# the mode letter (u/p) is part of the name: "p descr"
		name = substr(name, 1, 1) " " substr(name, 3)
	} else {
		res = line; sub(/.*:/, "", res)
		name = line; sub(/^#[0-9]+(\/[0-9]+)? +/, "", name); sub(/:[A-Z]+$/, "", name)
		id = line; sub(/ .*/, "", id)
		if (id !~ /\//) { top[name] = res; next }
		hassub[substr(name, 1, index(name, "/") - 1)] = 1
	}
	judge(name, res)
}
function listed(name,   i) {
	for (i = 1; i <= nre; i++) if (name ~ xre[i]) return 1
	return 0
}
function judge(name, res,   want) {
	if (res == "SKIP") { skipped++; return }
	want = mode
	if (mode == "fail-listed") want = listed(name) ? "fail" : "pass"
	if (mode == "pass-listed") want = listed(name) ? "pass" : "fail"
	if (name in isknown) {
		seenknown[name] = 1
		if (res == "FAIL") { skipped++; return }
		printf "  known failure now passes, remove it from the list: %s\n", name
		failed++; return
	}
	if (want == "pass" && res == "OK") passed++
	else if (want == "fail" && res == "FAIL") passed++
	else {
		printf "  unexpected %s (expected to %s): %s\n", res, want, name
		failed++
	}
}
END {
	for (t in top) if (!(t in hassub)) judge(t, top[t])
	if (!summary) {
		print "  the runner never printed its Summary line: it died or hung"
		failed++
	}
	if (passed + failed + skipped == 0) {
		print "  no test cases found in the output"; failed = 1
	}
	printf "%d %d %d\n", passed, failed, skipped
}' "$LOG"
