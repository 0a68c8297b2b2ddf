#!/usr/bin/env python3
"""Judge what the guest reported: one suite against its matrix row, a console
log for kernel splats, a bug injection's run for check-regressions; and
write the results as KTAP, the kernel selftests' format.

    judge.py suite MATRIX KERNEL SUITE RUN_DIR
        RUN_DIR holds SUITE.log (stdout), SUITE.rc (exit status) and, if the
        guest stopped it at its time limit, SUITE.timeout. Prints one line
        per problem (indented), for runner suites a "runner: Summary: ..."
        line, and last "P F S" (passed, failed, skipped cases).
    judge.py kernel MATRIX KERNEL RUN_DIR [--guest-failed] [SUITE...]
        Every suite of KERNEL's guest run (or the ones named), as check.sh
        shows them: each one's problems and a line with its counts. Writes
        RUN_DIR/SUITE.judge (what "suite" prints), RUN_DIR/results.ktap (a
        KTAP document: one test per suite, its cases as subtests) and
        RUN_DIR/totals ("P F S"). --guest-failed: the boot itself failed
        (no verdict, a kernel splat): one more failure, test "guest".
    judge.py ktap OUT RUN_DIR...
        The results.ktap of several kernels' runs as one KTAP document OUT,
        one test per kernel (named after its RUN_DIR), its suites nested.
    judge.py splats CONSOLE_LOG
        Prints each line that is a kernel splat (tests/kernel-splats) with
        its kind; exit status 1 if there is one.
    judge.py regression RUN_DIR SELECTOR [OUTPUT]
        A check-regressions run: was the bug caught by the test_progs tests
        that SELECTOR (-t syntax) names, by the guest program of "exit: CMD"
        (exit status 1 and, if given, a line matching the regex OUTPUT), or
        by a kernel report ("splat: CMD", or any selector)? Prints
        "caught: ..." (status 0) or "MISSED: ..." (status 1).

Reads RUN_DIRs (what the guest reported, split by lib.sh's split_channel),
the matrix, tests/known-failures/, tests/expected-failures/ and
tests/kernel-splats; writes only what "kernel" and "ktap" say above.

Nothing the runners print is taken on trust: every case line is parsed
(a line that is none of the runner's own forms is a failure), the counts are
checked against the runner's Summary line and its exit status, a test_progs
test that failed outside its subtests fails, a suite that skipped everything
fails, and a regex of an expected-failures list that matches no case fails.
"""
import os
import re
import signal
import sys
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import matrix  # noqa: E402

ROOT = matrix.ROOT
KNOWN_DIR = os.path.join(ROOT, "tests", "known-failures")
SPLATS_FILE = os.path.join(ROOT, "tests", "kernel-splats")


@dataclass
class Case:
    name: str
    result: str                 # OK, FAIL or SKIP
    detail: list = field(default_factory=list)   # the runner's lines about it
    why: str = ""               # why the judge calls it FAIL, if the runner did not
    skips: int = 0              # test_verifier: SKIP it counted for this case


@dataclass
class RunnerLog:
    cases: list
    summary: tuple              # the runner's figures from its Summary line, or None
    summary_line: str
    counted: tuple              # the same figures, counted by the judge
    problems: list              # failures that are no single case's


def read_lines(path):
    with open(path, errors="replace") as f:
        return [line.rstrip("\r\n") for line in f]


# ---------------------------------------------------------------- test_verifier
# test_verifier.c prints "#N/u DESCR " or "#N/p DESCR " and then, on the same
# line and maybe the next ones, what do_test_single() printed:
#   SKIP                                        (unprivileged runs disabled)
#   SKIP (unsupported map type N)               (fixup; one per missing map)
#   SKIP (unsupported program type N) | SKIP (program uses an unsupported feature)
#   Failed to create ...! | Failed to load kptr test BTF: ...   (fixup
#        errors: the case goes on, its result comes on the next line)
#   Failed to load BTF spec: '...'              (from load_btf_for_test():
#        counted as an error, no FAIL, the case ends there; from a fixup
#        such as create_map_spin_lock(): the case goes on, its result comes
#        on the next line)
#   FAIL                                        (details on the next lines)
#   FAIL: can't get xlated program | FAIL: can't find ... | FAIL: found ...
#   one word per test run: "Did not run the program (not supported|no
#        permission) " or "FAIL retval A != B (run i/n) " or "FAIL: Unexpected
#        bpf_prog_test_run error (E) (run i/n) ", then "[N cases ]OK[ (NOTE:
#        not executed due to unknown alignment)]" if no run failed.
TV_CASE = re.compile(r"#(\d+)/([up]) (.*)")
TV_SUMMARY = re.compile(r"Summary: (\d+) PASSED, (\d+) SKIPPED, (\d+) FAILED")
TV_SKIP = re.compile(r"SKIP( \((unsupported map type \d+|unsupported program type \d+"
                     r"|program uses an unsupported feature)\))?")
TV_MAP_SKIP = re.compile(r"SKIP \(unsupported map type \d+\)")
TV_FIXUP_ERROR = re.compile(r"Failed to (create .*|load kptr test BTF: .*)")
TV_FAIL = re.compile(r"FAIL(: .*)?")
TV_BTF_SPEC = re.compile(r"Failed to load BTF spec: .*")
TV_RUN = (r"(Did not run the program \((not supported|no permission)\)"
          r"|FAIL retval -?\d+ != -?\d+ \(run \d+/\d+\)"
          r"|FAIL: Unexpected bpf_prog_test_run error \([^()]*\) \(run \d+/\d+\))")
TV_RUNS = re.compile(r"(?P<runs>(%s ?)*)(?P<ok>(\d+ cases )?OK"
                     r"( \(NOTE: not executed due to unknown alignment\))?)?" % TV_RUN)
# a whole output line of do_test_single() (descr excluded)
TV_OUTPUT = re.compile("|".join("(%s)" % r.pattern for r in
                                (TV_SKIP, TV_FIXUP_ERROR, TV_FAIL, TV_BTF_SPEC,
                                 TV_RUNS)))


def tv_result(outputs):
    """OK/FAIL/SKIP, why, SKIP count from do_test_single()'s lines for a case."""
    map_skips = sum(1 for o in outputs if TV_MAP_SKIP.fullmatch(o))
    outputs = [o for o in outputs if o.strip()]
    for i, o in enumerate(outputs):
        if TV_FIXUP_ERROR.fullmatch(o) or TV_MAP_SKIP.fullmatch(o):
            continue            # fixup: maps and BTF made before the load
        if TV_BTF_SPEC.fullmatch(o):
            if i + 1 < len(outputs):
                continue        # a fixup's BTF: the case went on
            return "FAIL", "", 0    # the test's own BTF: an error
        if map_skips:
            break               # a map type is missing: the case is skipped
        if TV_SKIP.fullmatch(o):
            return "SKIP", "", 1
        if TV_FAIL.fullmatch(o):
            return "FAIL", "", 0
        m = TV_RUNS.fullmatch(o)
        if m and "FAIL" in m.group("runs"):
            return "FAIL", "", 0
        if m and m.group("ok"):
            return "OK", "", 0
        return "FAIL", f"no result after {o!r}: the runner stopped here", 0
    if map_skips:
        return "SKIP", "", map_skips
    return "FAIL", "no result: the runner stopped here", 0


def runner_summary(summaries, pattern, problems):
    """The counts of a runner's last Summary line (None if it printed
    none) and the line itself. A runner prints exactly one: more than one
    means the log holds two runs, which the judge reports as a problem."""
    if len(summaries) > 1:
        problems.append(f"the runner printed {len(summaries)} Summary lines")
    if not summaries:
        return None, ""
    line = summaries[-1]
    return tuple(int(x) for x in pattern.fullmatch(line).groups()), line


def parse_test_verifier(lines):
    cases, problems, summaries = [], [], []
    current = None              # (case, its output lines)
    blocks = []
    for line in lines:
        m = TV_CASE.fullmatch(line)
        if m:
            mode, text = m.group(2), m.group(3)
            # DESCR is the shortest prefix after which the line is one of the
            # runner's outputs (no descr contains OK, FAIL or SKIP words).
            descr, first = None, None
            for i, ch in enumerate(text):
                if ch == " " and TV_OUTPUT.fullmatch(text[i + 1:]):
                    descr, first = text[:i], text[i + 1:]
                    break
            if descr is None:
                case = Case(f"{mode} {text}", "FAIL", why="not a test_verifier case line")
                cases.append(case)
                current = None
                continue
            current = (Case(f"{mode} {descr}", ""), [first] if first else [])
            blocks.append(current)
            cases.append(current[0])
            continue
        if TV_SUMMARY.fullmatch(line):
            summaries.append(line)
            current = None
            continue
        if current is not None:
            current[1].append(line)
    for case, outputs in blocks:
        case.result, case.why, case.skips = tv_result(outputs)
        case.detail = outputs
    ok = sum(c.result == "OK" for c in cases)
    failed = sum(c.result == "FAIL" for c in cases)
    skipped = sum(c.skips for c in cases if c.result == "SKIP")
    summary, summary_line = runner_summary(summaries, TV_SUMMARY, problems)
    return RunnerLog(cases, summary, summary_line, (ok, skipped, failed), problems)


def tv_expected_rc(summary):
    return 1 if summary[2] else 0


TV_FIGURES = "PASSED, SKIPPED, FAILED"


# ------------------------------------------------------------------ test_progs
# test_progs.c prints each test as "#N     NAME:OK|FAIL|SKIP" after its
# subtests, "#N/M   NAME/SUB:OK|FAIL|SKIP" (SUB may hold any character), the
# captured output of a failed test before it, then "All error logs:" and the
# failed tests again, and last "Summary: T/S PASSED, K SKIPPED, F FAILED":
# T tests without error, S subtests passed, K skipped subtests (and tests
# without subtests that skipped), F tests with an error.
TP_TEST = re.compile(r"#(\d+) +([^\s/:]+):(OK|FAIL|SKIP)")
TP_SUBTEST = re.compile(r"#(\d+)/(\d+) +([^\s/:]+)/(.*):(OK|FAIL|SKIP)")
TP_SUMMARY = re.compile(r"Summary: (\d+)/(\d+) PASSED, (\d+) SKIPPED, (\d+) FAILED")


def parse_test_progs(lines):
    tests, subtests, order, problems, summaries = {}, {}, [], [], []
    repeat = False
    logbuf = []
    for line in lines:
        if TP_SUMMARY.fullmatch(line):
            summaries.append(line)
            continue
        if line == "All error logs:":
            repeat = True       # failed tests again: already counted
        if repeat:
            continue
        m = TP_SUBTEST.fullmatch(line)
        if m:
            num, sub, test, name, res = m.groups()
            c = Case(f"{test}/{name}", res, detail=logbuf)
            subtests.setdefault(num, []).append(c)
            logbuf = []
            if num not in order:
                order.append(num)
            continue
        m = TP_TEST.fullmatch(line)
        if m:
            num, test, res = m.groups()
            if num in tests:
                problems.append(f"test #{num} {test} reported twice")
            tests[num] = Case(test, res, detail=logbuf)
            logbuf = []
            if num not in order:
                order.append(num)
            continue
        logbuf.append(line)
    cases = []
    for num in order:
        subs, test = subtests.get(num, []), tests.get(num)
        cases += subs
        if test is None:
            name = subs[0].name.split("/")[0]
            problems.append(f"test #{num} {name} has subtest results but no result of "
                            "its own: the runner stopped before it finished")
        elif not subs:
            cases.append(test)
        elif test.result == "FAIL" and not any(s.result == "FAIL" for s in subs):
            # its subtests passed, so it failed in its own code (setup,
            # checks between subtests): that is a failing case of its own
            cases.append(Case(test.name, "FAIL", test.detail,
                              why="failed outside its subtests"))
    tops = list(tests.values())
    counted = (
        sum(t.result != "FAIL" for t in tops),
        sum(s.result == "OK" for subs in subtests.values() for s in subs),
        sum(s.result == "SKIP" for subs in subtests.values() for s in subs)
        + sum(t.result == "SKIP" for n, t in tests.items() if n not in subtests),
        sum(t.result == "FAIL" for t in tops),
    )
    summary, summary_line = runner_summary(summaries, TP_SUMMARY, problems)
    return RunnerLog(cases, summary, summary_line, counted, problems)


def tp_expected_rc(summary):
    tests_ok, _, skipped, failed = summary
    if tests_ok + skipped + failed == 0:
        return 2                # EXIT_NO_TEST
    return 1 if failed else 0


TP_FIGURES = "tests PASSED/subtests PASSED, SKIPPED, FAILED"

RUNNERS = {
    "test_verifier": (parse_test_verifier, tv_expected_rc, TV_FIGURES),
    "test_progs": (parse_test_progs, tp_expected_rc, TP_FIGURES),
}


# ---------------------------------------------------------------- expectations
def read_known(path):
    """Known failures: "NAME<TAB>REASON[<TAB>REGEX]" (REGEX: what its
    failure output must show, so it cannot fail for another reason)."""
    known = {}
    if path and os.path.isfile(path):
        for n, line in enumerate(read_lines(path), 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) < 2 or not parts[1].strip():
                raise matrix.MatrixError(f"{path}:{n}: NAME<TAB>REASON[<TAB>REGEX] expected")
            known[parts[0]] = (parts[1], re.compile(parts[2]) if len(parts) > 2 else None)
    return known


def read_list(path):
    return [line for line in read_lines(path) if line and not line.startswith("#")]


def describe_status(rc):
    if rc == 124:
        return "124 (timed out)"
    if rc in (126, 127):
        return f"{rc} (the program could not be run)"
    if rc > 128:
        try:
            name = signal.Signals(rc - 128).name
        except ValueError:
            name = f"signal {rc - 128}"
        return f"{rc} (killed by {name})"
    return str(rc)


@dataclass
class Verdict:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    problems: list = field(default_factory=list)
    runner_summary: str = ""
    # one (name, "ok" | "not ok" | "skip", note) per count, in order: the
    # suite's KTAP test points
    results: list = field(default_factory=list)

    def ok(self, name):
        self.passed += 1
        self.results.append((name, "ok", ""))

    def skip(self, name, why=""):
        self.skipped += 1
        self.results.append((name, "skip", why))

    def fail(self, msg, name=None):
        """A failure: a case's (NAME) or the suite's own (the message names it)."""
        self.failed += 1
        self.problems.append(msg)
        self.results.append((name or msg, "not ok", msg))


def read_status(run_dir, suite):
    """(exit status or None, time limit it hit or None)"""
    rc = timeout = None
    try:
        rc = int(open(os.path.join(run_dir, f"{suite}.rc")).read().strip())
    except (OSError, ValueError):
        pass
    try:
        timeout = open(os.path.join(run_dir, f"{suite}.timeout")).read().strip() or "?"
    except OSError:
        pass
    return rc, timeout


def judge_suite(row, run_dir, known_dir=KNOWN_DIR, lists_dir=matrix.LISTS_DIR):
    v = Verdict()
    log = os.path.join(run_dir, f"{row.suite}.log")
    rc, timeout = read_status(run_dir, row.suite)
    if timeout is not None:
        v.fail(f"suite {row.suite} timed out: the guest stopped it after its limit "
               f"of {timeout} s")
    if not os.path.isfile(log):
        v.fail(f"suite {row.suite} reported no output: it never finished")
        return v
    if rc is None and timeout is None:
        v.fail(f"suite {row.suite} reported no exit status: it never finished")
    lines = read_lines(log)
    if row.kind == "exit":
        judge_exit(row, rc, lines, v)
    else:
        judge_runner(row, rc, lines, v, timeout is not None,
                     read_known(os.path.join(known_dir, row.kind)), lists_dir)
    return v


def judge_exit(row, rc, lines, v):
    missing = [r for r in row.outputs if not any(re.search(r, line) for line in lines)]
    if rc is None:
        return
    if row.expect == "pass" and rc != 0:
        v.fail(f"exit status {describe_status(rc)}, expected 0", row.suite)
    elif row.expect == "fail" and rc == 0:
        v.fail(f"exit status 0, expected {row.rc}: it did not fail", row.suite)
    elif row.expect == "fail" and rc != row.rc:
        v.fail(f"exit status {describe_status(rc)}, expected {row.rc}: "
               "that is not the failure expected", row.suite)
    elif missing:
        v.fail("no output line matches " + ", ".join(repr(r) for r in missing), row.suite)
    else:
        v.ok(row.suite)


def judge_runner(row, rc, lines, v, timed_out, known, lists_dir):
    parse, expected_rc, figures = RUNNERS[row.kind]
    log = parse(lines)
    regexes = []
    if row.list_name:
        regexes = [(r, re.compile(r)) for r in read_list(os.path.join(lists_dir, row.list_name))]
    used, seen_known = set(), set()
    for case in log.cases:
        for text, rx in regexes:
            if rx.search(case.name):
                used.add(text)
        listed = any(rx.search(case.name) for _, rx in regexes)
        want = row.expect
        if row.list_name and not listed:
            want = "pass" if row.expect == "fail" else "fail"
        why = f" ({case.why})" if case.why else ""
        if case.name in known:
            seen_known.add(case.name)
            reason, rx = known[case.name]
            if case.result == "SKIP":
                v.skip(case.name)
            elif case.result == "OK":
                v.fail(f"known failure now passes, remove it from the list: {case.name}",
                       case.name)
            elif rx and not any(rx.search(line) for line in case.detail):
                v.fail(f"known failure fails for another reason than /{rx.pattern}/: "
                       f"{case.name}{why}", case.name)
            else:
                v.skip(case.name, f"known failure: {reason}")
            continue
        if case.result == "SKIP":
            v.skip(case.name)
        elif (want, case.result) in (("pass", "OK"), ("fail", "FAIL")):
            v.ok(case.name)
        else:
            v.fail(f"unexpected {case.result} (expected to {want}): {case.name}{why}",
                   case.name)
    for text, _ in regexes:
        if text not in used:
            v.fail(f"stale list: /{text}/ of {row.list_name} matches no case of this run")
    for name in known:
        if name not in seen_known:
            # one file serves every suite of the kind: each of them runs the
            # whole table, so a name missing here is a name that changed
            v.fail(f"known failure not in this run (renamed or removed?): {name}")
    for p in log.problems:
        v.fail(p)
    if not log.cases:
        v.fail("no test cases found in the output")
    elif all(c.result == "SKIP" for c in log.cases) and not row.all_skipped:
        v.fail(f"every case was skipped: the suite proved nothing "
               "(a matrix row may allow that with all-skipped=REASON)")
    if timed_out:
        return
    v.runner_summary = log.summary_line
    if log.summary is None:
        v.fail("the runner never printed its Summary line: it died or hung")
    elif log.summary != log.counted:
        v.fail(f"the runner's Summary ({figures}) says {fmt(log.summary)}, "
               f"its case lines say {fmt(log.counted)}")
    if rc is None:
        return
    if log.summary is not None and rc != expected_rc(log.summary):
        v.fail(f"exit status {describe_status(rc)} does not match its Summary "
               f"(expected {expected_rc(log.summary)})")
    elif log.summary is None and rc != 0:
        v.fail(f"exit status {describe_status(rc)}")


def fmt(figures):
    return " ".join(str(x) for x in figures)


# ---------------------------------------------------------------------- splats
def read_splat_patterns(path=SPLATS_FILE):
    """[(kind, regex)] from tests/kernel-splats ("KIND<TAB>REGEX" lines)."""
    patterns = []
    for line in read_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        kind, rx = line.split("\t", 1)
        patterns.append((kind, re.compile(rx.strip("\t"))))
    return patterns


def find_splats(lines, patterns=None):
    """[(line number, kind, line)] for each console line that is a splat."""
    patterns = patterns or read_splat_patterns()
    found = []
    for n, line in enumerate(lines, 1):
        for kind, rx in patterns:
            if rx.search(line):
                found.append((n, kind, line))
                break
    return found


# ----------------------------------------------------------------- regressions
def glob_match(text, pat):
    """test_progs' glob_match(): '*' is the only wildcard."""
    rx = ".*".join(re.escape(p) for p in pat.split("*"))
    return re.fullmatch(rx, text, re.S) is not None


def selected(case_name, selector):
    """Does test_progs -t SELECTOR pick this case? -t wraps each part in '*'."""
    test_sel, _, sub_sel = selector.partition("/")
    test, _, sub = case_name.partition("/")
    if not glob_match(test, f"*{test_sel}*"):
        return False
    return not sub_sel or (bool(sub) and glob_match(sub, f"*{sub_sel}*"))


def judge_regression(run_dir, selector, suite="regress", output=None):
    """(caught?, why) for one bug injection's guest run.

    selector: test_progs tests (caught if one of them failed), "exit: CMD"
    (caught if CMD exited 1, and when output, a regex, is given, printed a
    line it matches: the failure the bug causes, not any failure) or
    "splat: CMD" (caught only by a kernel report while CMD ran); a kernel
    report while the test ran catches the bug in every case."""
    rc, timeout = read_status(run_dir, suite)
    log = os.path.join(run_dir, f"{suite}.log")
    if timeout is not None:
        return False, f"the test timed out after {timeout} s"
    console = os.path.join(run_dir, "console.log")
    lines = read_lines(console) if os.path.isfile(console) else []
    # only what the kernel reported once the test had started is the bug's
    start = next((i for i, line in enumerate(lines) if line.startswith(f"guest: suite {suite}:")),
                 None)
    splats = find_splats(lines[start:]) if start is not None else []
    if rc is None or not os.path.isfile(log):
        # The guest boots with oops=panic: an oops in the test's own
        # syscall panics the kernel before the suite can report a status.
        # The test had started and the kernel died reporting it: a catch.
        # Without the start line or the panic, nothing proves the test ran.
        panicked = start is not None and any("Kernel panic - not syncing" in line
                                             for line in lines[start:])
        if splats and panicked:
            n, kind, line = splats[0]
            return True, f"kernel {kind} while it ran, which panicked the guest: {line.strip()}"
        return False, "the test never ran to its end (no exit status reported)"
    missed_why = None
    if selector.startswith("exit:"):
        # a guest program, judged by its exit status: 1 is its failure;
        # crashes and the like are no proof that it saw the bug
        if rc == 1 and output is None:
            return True, f"{selector[5:].strip()} exited 1"
        if rc == 1:
            hit = next((line for line in read_lines(log) if re.search(output, line)), None)
            if hit is not None:
                return True, f"{selector[5:].strip()} exited 1: {hit.strip()}"
            missed_why = (f"it exited 1, but printed no line matching {output!r}: "
                          "a failure other than the bug's")
    elif selector.startswith("splat:"):
        pass                    # only the kernel's report below counts
    else:
        cases = [c for c in parse_test_progs(read_lines(log)).cases
                 if selected(c.name, selector)]
        ran = [c for c in cases if c.result != "SKIP"]
        if not ran:
            # An oops kills the test in the middle: its report is the catch
            # then, but only if the suite came to its end (exit status).
            if splats:
                n, kind, line = splats[0]
                return True, (f"kernel {kind} while it ran, which ended it "
                              f"(exit status {describe_status(rc)}): {line.strip()}")
            return False, f"no test matching {selector} ran (exit status {describe_status(rc)})"
        failed = [c.name for c in ran if c.result == "FAIL"]
        if failed:
            return True, "failed: " + ", ".join(failed)
    if splats:
        n, kind, line = splats[0]
        return True, f"kernel {kind} while it ran: {line.strip()}"
    if missed_why:
        return False, missed_why + ", and the kernel reported nothing"
    if selector.startswith("exit:"):
        return False, (f"it exited {describe_status(rc)}, not its failure status 1, "
                       "and the kernel reported nothing")
    if selector.startswith("splat:"):
        return False, (f"the kernel reported nothing while it ran (it exited "
                       f"{describe_status(rc)}; only a kernel report catches this bug)")
    return False, "its tests ran and passed, and the kernel reported nothing"


# ------------------------------------------------------------------------ KTAP
# Documentation/dev-tools/ktap.rst: "KTAP version 1", a plan "1..N", one
# "ok N NAME" / "not ok N NAME" line per test, "# SKIP" directives, "#"
# diagnostic lines, and subtests as an indented KTAP document of their own
# before their parent's result line.
KTAP_INDENT = "    "


def ktap_name(name):
    """A test name on one line, without the '#' that starts a directive."""
    return " ".join(name.replace("#", "No.").split()) or "(unnamed)"


def ktap_point(number, name, result, note=""):
    """The lines of one test point: diagnostics first, then its result."""
    lines = [f"# {line}" for line in note.splitlines() if result == "not ok"]
    if result == "skip":
        skip = f" # SKIP {ktap_name(note)}" if note else " # SKIP"
        return lines + [f"ok {number} {ktap_name(name)}{skip}"]
    return lines + [f"{result} {number} {ktap_name(name)}"]


def ktap_document(tests):
    """A KTAP document of TESTS: (name, result, note, children) each, where
    children is a list of the same (a test with subtests) or None. A test
    with subtests fails when one of them does."""
    lines = ["KTAP version 1", f"1..{len(tests)}"]
    for number, (name, result, note, children) in enumerate(tests, 1):
        if children is not None:
            sub = ktap_document(children)
            lines += [KTAP_INDENT + sub[0], f"{KTAP_INDENT}# Subtest: {ktap_name(name)}"]
            lines += [KTAP_INDENT + line for line in sub[1:]]
            if any(c[1] == "not ok" for c in children):
                result = "not ok"
        lines += ktap_point(number, name, result, note)
    return lines


def verdict_tests(v):
    """A suite's Verdict as ktap_document's tests."""
    return [(name, result, note, None) for name, result, note in v.results]


def ktap_top_results(lines):
    """{name: "ok" | "not ok"} of the top-level tests of a KTAP document."""
    tops = {}
    for line in lines:
        m = re.fullmatch(r"(ok|not ok) \d+ ([^#]*?)( # .*)?", line)
        if m:
            tops[m.group(2)] = m.group(1)
    return tops


def merge_ktap(docs):
    """One KTAP document of [(name, lines of a KTAP document)]: each
    document becomes the subtests of a test NAME."""
    lines = ["KTAP version 1", f"1..{len(docs)}"]
    for number, (name, doc) in enumerate(docs, 1):
        lines += [KTAP_INDENT + doc[0], f"{KTAP_INDENT}# Subtest: {ktap_name(name)}"]
        lines += [KTAP_INDENT + line for line in doc[1:]]
        failed = "not ok" in ktap_top_results(doc).values()
        lines.append(f"{'not ok' if failed else 'ok'} {number} {ktap_name(name)}")
    return lines


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))


def judge_kernel(matrix_path, kernel, run_dir, suites=(), guest_failed=False):
    """check.sh's judging of one kernel's guest run: prints a line per
    suite (its problems above it), writes SUITE.judge, results.ktap and
    totals into RUN_DIR; returns (passed, failed, skipped)."""
    rows = matrix.select_rows(matrix.read_matrix(matrix_path), kernel, suites)
    tests, totals = [], [0, 0, 0]
    for row in rows:
        v = judge_suite(row, run_dir)
        report = [f"  {p}" for p in v.problems]
        if v.runner_summary:
            report.append(f"runner: {v.runner_summary}")
        write_lines(os.path.join(run_dir, f"{row.suite}.judge"),
                    report + [f"{v.passed} {v.failed} {v.skipped}"])
        for p in v.problems:
            print(f"  {p}")
        print(f"{kernel:9} {row.suite:20} {row.sources:9} expect {row.expect_text:12} "
              f"{v.passed:5d} passed, {v.failed} failed, {v.skipped} skipped  "
              f"{v.runner_summary}".rstrip())
        tests.append((row.suite, "ok", "", verdict_tests(v)))
        totals = [a + b for a, b in zip(totals, (v.passed, v.failed, v.skipped))]
    if guest_failed:
        why = ("the guest run failed: no verdict, or a kernel splat on the console "
               f"({os.path.join(run_dir, 'console.log')})")
        print(f"{kernel}: {why}; counted as one failure")
        tests.append(("guest", "not ok", why, None))
        totals[1] += 1
    write_lines(os.path.join(run_dir, "results.ktap"), ktap_document(tests))
    write_lines(os.path.join(run_dir, "totals"), [" ".join(map(str, totals))])
    return tuple(totals)


# ------------------------------------------------------------------------ main
def main(argv):
    what, args = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    try:
        if what == "suite" and len(args) == 4:
            path, kernel, suite, run_dir = args
            row = matrix.find_row(matrix.read_matrix(path), kernel, suite)
            v = judge_suite(row, run_dir)
            for p in v.problems:
                print(f"  {p}")
            if v.runner_summary:
                print(f"runner: {v.runner_summary}")
            print(v.passed, v.failed, v.skipped)
            return 0
        if what == "kernel" and len(args) >= 3:
            path, kernel, run_dir = args[:3]
            rest = args[3:]
            guest_failed = "--guest-failed" in rest
            suites = [a for a in rest if a != "--guest-failed"]
            judge_kernel(path, kernel, run_dir, suites, guest_failed)
            return 0
        if what == "ktap" and len(args) >= 2:
            docs = [(os.path.basename(os.path.normpath(d)),
                     read_lines(os.path.join(d, "results.ktap"))) for d in args[1:]]
            write_lines(args[0], merge_ktap(docs))
            return 0
        if what == "splats" and len(args) == 1:
            if not os.path.isfile(args[0]):
                print(f"judge: no console log {args[0]}", file=sys.stderr)
                return 2
            splats = find_splats(read_lines(args[0]))
            for n, kind, line in splats:
                print(f"{args[0]}:{n}: {kind}: {line}")
            return 1 if splats else 0
        if what == "regression" and len(args) in (2, 3):
            caught, why = judge_regression(args[0], args[1], output=(args[2:] or [None])[0])
            print(f"{'caught' if caught else 'MISSED'}: {why}")
            return 0 if caught else 1
    except (matrix.MatrixError, OSError) as e:
        print(f"judge: {e}", file=sys.stderr)
        return 2
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
