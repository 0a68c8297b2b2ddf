#!/usr/bin/env python3
"""Read a test matrix (tests/matrix): which suites run on which kernel and
what each must do. The one parser of the matrix: check.sh asks it for the
kernels, the test builds and each kernel's guest plan (all of a kernel's
suites, or the ones named: make check SUITES=...), judge.py for a row's
expectation. A row that is not valid stops everything with its line number.
Reads the matrix and tests/expected-failures/; writes nothing.

A row, split like a shell command line (quotes group words):

    KERNEL SUITE SOURCES KIND EXPECT [OPTION...] COMMAND...

KIND     test_verifier, test_progs (cases judged from the runner's output)
         or exit (one case: the program's exit status).
EXPECT   pass          every case passes (exit: status 0)
         fail          every case fails (exit: needs rc=N, see below)
         fail:@LIST    cases matching a regex of tests/expected-failures/LIST
                       fail, all others pass
         pass:@LIST    listed cases pass, all others fail
OPTIONs, words KEY=VALUE between EXPECT and the command:
  rc=N               exit rows: the status that means the expected failure
                     (1-123: 124 and up are timeouts and signals, 126 and 127
                     a missing program; none of these is ever a failure that
                     was expected). Required for an exit row expected to fail.
  output=REGEX       exit rows: a line of the program's output must match
                     REGEX (Python syntax; may be given more than once).
                     Every program here exits 1 on any failure, so a row
                     expected to fail names the line that says why.
  all-skipped=REASON runner rows: a run where every case skipped passes,
                     for this REASON (without it, such a run fails: it
                     proved nothing).
  timeout=SECONDS    the suite's time limit in the guest (default: the
                     SUITE_TIMEOUT environment variable, else 300).
"""
import os
import re
import shlex
import sys
from dataclasses import dataclass, field

KINDS = ("test_verifier", "test_progs", "exit")
OPTIONS = ("rc", "output", "all-skipped", "timeout")
DEFAULT_SUITE_TIMEOUT = 300
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LISTS_DIR = os.path.join(ROOT, "tests", "expected-failures")


class MatrixError(Exception):
    pass


@dataclass
class Row:
    kernel: str
    suite: str
    sources: str
    kind: str
    expect: str                 # pass or fail
    list_name: str = ""         # LIST of fail:@LIST / pass:@LIST
    rc: int = None              # rc=N
    outputs: list = field(default_factory=list)   # output=REGEX...
    all_skipped: str = ""       # all-skipped=REASON
    timeout: int = DEFAULT_SUITE_TIMEOUT
    command: list = field(default_factory=list)
    where: str = ""             # FILE:LINE, for messages

    @property
    def expect_text(self):
        """EXPECT as written in the matrix."""
        return f"{self.expect}:@{self.list_name}" if self.list_name else self.expect


def parse_row(text, where="", lists_dir=LISTS_DIR, default_timeout=None):
    """One matrix line (not a comment) to a Row; MatrixError if invalid."""
    if default_timeout is None:
        default_timeout = int(os.environ.get("SUITE_TIMEOUT", DEFAULT_SUITE_TIMEOUT))
    try:
        words = shlex.split(text, comments=True)
    except ValueError as e:
        raise MatrixError(f"{where}: {e}")
    if len(words) < 6:
        raise MatrixError(f"{where}: needs KERNEL SUITE SOURCES KIND EXPECT COMMAND")
    kernel, suite, sources, kind, expect = words[:5]
    row = Row(kernel, suite, sources, kind, expect, timeout=default_timeout, where=where)
    if kind not in KINDS:
        raise MatrixError(f"{where}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
    m = re.fullmatch(r"(pass|fail)(?::@([\w.-]+))?", expect)
    if not m:
        raise MatrixError(f"{where}: unknown expectation {expect!r}")
    row.expect, row.list_name = m.group(1), m.group(2) or ""
    if row.list_name:
        if kind == "exit":
            raise MatrixError(f"{where}: an exit row has no cases to list")
        if not os.path.isfile(os.path.join(lists_dir, row.list_name)):
            raise MatrixError(f"{where}: no list {os.path.join(lists_dir, row.list_name)}")
    rest = words[5:]
    while rest and re.fullmatch(r"(%s)=.*" % "|".join(map(re.escape, OPTIONS)), rest[0], re.S):
        key, value = rest.pop(0).split("=", 1)
        set_option(row, key, value, where)
    if not rest:
        raise MatrixError(f"{where}: no command")
    row.command = rest
    check_row(row)
    return row


def set_option(row, key, value, where):
    if key == "rc":
        if not re.fullmatch(r"[0-9]+", value) or not 1 <= int(value) <= 123:
            raise MatrixError(f"{where}: rc={value}: an expected failure's status is 1-123 "
                              "(124 and up: timeouts and signals; 126, 127: not run)")
        row.rc = int(value)
    elif key == "output":
        try:
            re.compile(value)
        except re.error as e:
            raise MatrixError(f"{where}: output={value!r}: {e}")
        row.outputs.append(value)
    elif key == "all-skipped":
        if not value.strip():
            raise MatrixError(f"{where}: all-skipped= needs a reason")
        row.all_skipped = value
    elif key == "timeout":
        if not re.fullmatch(r"[1-9][0-9]*", value):
            raise MatrixError(f"{where}: timeout={value}: seconds, a positive integer")
        row.timeout = int(value)


def check_row(row):
    w = row.where
    if row.kind == "exit":
        if row.all_skipped:
            raise MatrixError(f"{w}: all-skipped= is for test_verifier and test_progs rows")
        if row.expect == "fail" and row.rc is None:
            raise MatrixError(f"{w}: an exit row expected to fail must name the status "
                              "that means the expected failure (rc=N)")
        if row.expect == "pass" and row.rc is not None:
            raise MatrixError(f"{w}: rc= is for rows expected to fail (pass means 0)")
    elif row.rc is not None or row.outputs:
        raise MatrixError(f"{w}: rc= and output= are for exit rows")


def read_matrix(path, lists_dir=LISTS_DIR):
    """Every row of a matrix file, in order; MatrixError on the first bad one."""
    rows, seen = [], set()
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            row = parse_row(line, f"{path}:{n}", lists_dir)
            if (row.kernel, row.suite) in seen:
                raise MatrixError(f"{row.where}: suite {row.suite} twice for {row.kernel}")
            seen.add((row.kernel, row.suite))
            rows.append(row)
    return rows


def find_row(rows, kernel, suite):
    for row in rows:
        if row.kernel == kernel and row.suite == suite:
            return row
    raise MatrixError(f"no row for suite {suite} on kernel {kernel}")


def unique(items):
    return list(dict.fromkeys(items))


def with_filter(command, test_filter):
    """A test_progs command line with its -t selection replaced by
    TEST_FILTER: a second -t would add tests to the selection, not narrow
    it."""
    words = list(command)
    for i, w in enumerate(words[:-1]):
        if w == "-t":
            words[i + 1] = test_filter
            return words
    return words + ["-t", test_filter]


def plan_line(row, test_filter=""):
    """The guest's plan line for a row (see run_suite in guest/init).
    TEST_FILTER, if any, is the -t selection of test_progs rows."""
    command = row.command
    if test_filter and row.kind == "test_progs":
        command = with_filter(command, test_filter)
    words = ["run_suite", row.suite, str(row.timeout), f"/tests/{row.sources}"] + command
    return " ".join(shlex.quote(w) for w in words)


def select_rows(rows, kernel, suites=()):
    """The rows of KERNEL, only those of SUITES if any are named; a name
    that is no suite of that kernel is an error that lists them."""
    mine = [r for r in rows if r.kernel == kernel]
    if not suites:
        return mine
    names = [r.suite for r in mine]
    unknown = [s for s in suites if s not in names]
    if unknown:
        raise MatrixError(f"no suite {', '.join(unknown)} for kernel {kernel}; "
                          f"its suites: {' '.join(names)}")
    return [r for r in mine if r.suite in suites]


def main(argv):
    usage = ("usage: matrix.py MATRIX check | kernels | sources KERNEL [SUITE...]"
             " | plan KERNEL [SUITE...] | rows KERNEL [SUITE...]\n"
             "  the environment's TEST_FILTER is the -t selection of plan's test_progs rows")
    if len(argv) < 3:
        sys.exit(usage)
    path, what, args = argv[1], argv[2], argv[3:]
    try:
        rows = read_matrix(path)
        mine = select_rows(rows, args[0], args[1:]) if args else []
    except (MatrixError, OSError) as e:
        sys.exit(f"matrix: {e}")
    if what == "check" and not args:
        print(f"{path}: {len(rows)} rows")
    elif what == "kernels" and not args:
        print("\n".join(unique(r.kernel for r in rows)))
    elif what == "sources" and args:
        print("\n".join(unique(r.sources for r in mine)))
    elif what == "plan" and args:
        test_filter = os.environ.get("TEST_FILTER", "")
        print("\n".join(plan_line(r, test_filter) for r in mine))
    elif what == "rows" and args:
        # SUITE SOURCES KIND EXPECT, tab-separated, for check.sh's table
        for r in mine:
            print("\t".join([r.suite, r.sources, r.kind, r.expect_text]))
    else:
        sys.exit(usage)


if __name__ == "__main__":
    main(sys.argv)
