#!/usr/bin/env python3
"""The harness's own tests: host only, no kernel, a few seconds. Reads the
fixtures below, the project's scripts, matrices and lists; writes only
temporary dirs (each check's own, removed after it).

    harness.py                 every fixture and check; exit 1 on any failure
    harness.py --old MAIN_DIR  run the fixtures against the tools as they are
                               in MAIN_DIR (a checkout of an older main) and
                               list the fixtures they get wrong

A fixture (fixtures/*.fixture) is a guest run in miniature and the verdict it
must get. Header lines "KEY: VALUE" first, then sections "--- NAME":

    check:   suite (default), matrix, splats, regression or ktap (the
             suite's KTAP, judge.py's, must be the "--- ktap" section, and
             valid KTAP)
    hole:    the number of the issue-19 hole it proves (documentation)
    row:     the matrix row (suite, matrix)
    rc:      the suite's exit status (suite, regression); absent: none reported
    timeout: the limit the guest stopped the suite at (suite, regression)
    selector: the Caught-by tests (regression)
    output:  the Caught-output regex (regression)
    verdict: pass | fail (suite), ok | error (matrix), clean | KIND (splats),
             caught | missed (regression), same (ktap)
    counts:  "P F S" the judge must count (suite)
    says:    a text the judge's report must contain (may repeat)
    --- log       the suite's stdout (absent: no output reported)
    --- known     tests/known-failures/KIND for this run
    --- list NAME tests/expected-failures/NAME for this run
    --- console   the kernel console (splats, regression)
    --- ktap      the KTAP document of the suite (ktap)
"""
import contextlib
import difflib
import glob
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import judge  # noqa: E402
import matrix  # noqa: E402

SUITE = "s"     # the suite name fixtures' rows use for their files


class Fixture:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)[:-len(".fixture")]
        self.fields, self.sections = {}, {}
        section = None
        for line in open(path).read().split("\n"):
            if line.startswith("--- "):
                section = line[4:].strip()
                self.sections[section] = []
            elif section is not None:
                self.sections[section].append(line)
            elif line.strip() and not line.startswith("#"):
                key, _, value = line.partition(":")
                self.fields.setdefault(key.strip(), []).append(value.strip())
        for lines in self.sections.values():
            while lines and lines[-1] == "":
                lines.pop()     # the file's last newline

    def get(self, key, default=None):
        return self.fields.get(key, [default])[0]

    def text(self, section):
        return "".join(line + "\n" for line in self.sections[section])


def make_run(fx, tmp):
    """A run dir, known-failures dir and lists dir for a fixture."""
    run, known, lists = (os.path.join(tmp, d) for d in ("run", "known", "lists"))
    for d in (run, known, lists):
        os.makedirs(d)
    suite = fx.get("suite", SUITE)
    if "log" in fx.sections:
        open(os.path.join(run, f"{suite}.log"), "w").write(fx.text("log"))
    if fx.get("rc") not in (None, "none"):
        open(os.path.join(run, f"{suite}.rc"), "w").write(fx.get("rc") + "\n")
    if fx.get("timeout"):
        open(os.path.join(run, f"{suite}.timeout"), "w").write(fx.get("timeout") + "\n")
    if "console" in fx.sections:
        open(os.path.join(run, "console.log"), "w").write(fx.text("console"))
    for name in fx.sections:
        if name.startswith("list "):
            open(os.path.join(lists, name[5:]), "w").write(fx.text(name))
    return run, known, lists


def new_verdict(fx, tmp):
    """(verdict, counts or None, report text) from the tools of this tree."""
    check = fx.get("check", "suite")
    run, known, lists = make_run(fx, tmp)
    if check == "matrix":
        try:
            matrix.parse_row(fx.get("row"), "row", lists)
            return "ok", None, ""
        except matrix.MatrixError as e:
            return "error", None, str(e)
    if check == "splats":
        found = judge.find_splats(fx.sections["console"])
        return (found[0][1] if found else "clean"), None, repr(found)
    if check == "regression":
        caught, why = judge.judge_regression(run, fx.get("selector"), fx.get("suite", SUITE),
                                             fx.get("output"))
        return ("caught" if caught else "missed"), None, why
    row = matrix.parse_row(fx.get("row"), "row", lists)
    if "known" in fx.sections:
        open(os.path.join(known, row.kind), "w").write(fx.text("known"))
    v = judge.judge_suite(row, run, known, lists)
    if check == "ktap":
        got = judge.ktap_document([(row.suite, "ok", "", judge.verdict_tests(v))])
        problems = ktap_problems(got)
        if got != fx.sections["ktap"]:
            problems.append("differs from the fixture's:\n" + "\n".join(difflib.unified_diff(
                fx.sections["ktap"], got, "fixture", "judge.py", lineterm="")))
        return ("same" if not problems else "different"), \
            (v.passed, v.failed, v.skipped), "\n".join(problems)
    return ("fail" if v.failed else "pass"), (v.passed, v.failed, v.skipped), \
        "\n".join(v.problems)


# ------------------------------------------------------------------- KTAP
KTAP_RESULT = re.compile(r"(ok|not ok) (\d+)( [^#]*)?( # (SKIP|TODO|XFAIL|TIMEOUT|ERROR).*)?")


def ktap_problems(lines, depth=0):
    """What makes LINES no valid KTAP document (Documentation/dev-tools/
    ktap.rst), read on its own: the version line, a plan, results numbered
    1..N in order, subtests as indented documents before their parent's
    result, a parent "not ok" when a subtest is. Written apart from
    judge.py, so that the judge's writer is checked by another reader."""
    where = f"(depth {depth})"
    if not lines or lines[0] != "KTAP version 1":
        return [f"{where} does not start with 'KTAP version 1': {lines[:1]}"]
    problems, planned, number, i = [], None, 0, 1
    sub_failed = None           # None: no subtest before the next result
    while i < len(lines):
        line = lines[i]
        if line.startswith("    "):
            block = []
            while i < len(lines) and lines[i].startswith("    "):
                block.append(lines[i][4:])
                i += 1
            # "# Subtest: NAME" comes right after the nested version line
            body = [block[0]] + [ln for ln in block[1:2] if not ln.startswith("# Subtest:")] \
                + block[2:]
            problems += ktap_problems(body, depth + 1)
            sub_failed = any(re.match(r"not ok \d+", ln) for ln in body)
            continue
        i += 1
        if planned is None:
            m = re.fullmatch(r"1\.\.(\d+)", line)
            if not m:
                problems.append(f"{where} no plan after the version line: {line!r}")
                return problems
            planned = int(m.group(1))
            continue
        if line.startswith("#"):
            continue            # a diagnostic line
        m = KTAP_RESULT.fullmatch(line)
        if not m:
            problems.append(f"{where} neither a result nor a diagnostic: {line!r}")
            continue
        number += 1
        if int(m.group(2)) != number:
            problems.append(f"{where} result numbered {m.group(2)}, expected {number}")
        if sub_failed and m.group(1) == "ok":
            problems.append(f"{where} {line!r}: ok, but a subtest of it is not ok")
        sub_failed = None
    if planned is not None and number != planned:
        problems.append(f"{where} plan 1..{planned}, but {number} results")
    return problems


def check_suite_selection():
    """make check SUITES=... TEST_FILTER=...: matrix.py picks the named
    suites only, refuses a name the kernel has not (listing its suites), and
    a filter replaces test_progs' -t selection (a second -t would widen it)
    but leaves other rows alone."""
    problems = []
    rows = [matrix.parse_row(r, default_timeout=300) for r in (
        "k a k test_progs pass ./test_progs -v -t kptr_maps",
        "k b k exit pass ./kptr_demo -t x", "k c k test_progs pass ./test_progs")]
    picked = [r.suite for r in matrix.select_rows(rows, "k", ["c", "a"])]
    if picked != ["a", "c"]:
        problems.append(f"SUITES a c picked {picked}")
    try:
        matrix.select_rows(rows, "k", ["nope"])
        problems.append("an unknown suite was accepted")
    except matrix.MatrixError as e:
        if "its suites: a b c" not in str(e):
            problems.append(f"the error does not list the suites: {e}")
    plans = [matrix.plan_line(r, "kptr_maps/hash*") for r in rows]
    want = ["run_suite a 300 /tests/k ./test_progs -v -t 'kptr_maps/hash*'",
            "run_suite b 300 /tests/k ./kptr_demo -t x",
            "run_suite c 300 /tests/k ./test_progs -t 'kptr_maps/hash*'"]
    if plans != want:
        problems.append(f"plans with a filter: {plans}")
    return problems


def check_ktap_kernel():
    """judge.py kernel and ktap: a kernel's run of two suites and a guest
    that failed, then two kernels' results merged, are valid KTAP with the
    right results at each level."""
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "matrix")
        open(path, "w").write("k1 a k1 exit pass ./a\nk1 b k1 exit fail rc=1 ./b\n"
                              "k2 a k2 exit pass ./a\n")
        runs = []
        for kernel, rcs in (("k1", {"a": 0, "b": 0}), ("k2", {"a": 0})):
            run = os.path.join(tmp, "runs", kernel)
            runs.append(run)
            os.makedirs(run)
            for suite, rc in rcs.items():
                open(os.path.join(run, f"{suite}.log"), "w").write("")
                open(os.path.join(run, f"{suite}.rc"), "w").write(f"{rc}\n")
            with contextlib.redirect_stdout(io.StringIO()):
                totals = judge.judge_kernel(path, kernel, run, guest_failed=kernel == "k1")
            if totals != {"k1": (1, 2, 0), "k2": (1, 0, 0)}[kernel]:
                problems.append(f"{kernel}: totals {totals}")
        merged = os.path.join(tmp, "results.ktap")
        judge.main(["judge.py", "ktap", merged] + runs)
        lines = open(merged).read().splitlines()
        problems += ktap_problems(lines)
        for want in ("not ok 1 k1", "ok 2 k2", "        not ok 1 b", "    not ok 2 b",
                     "    not ok 3 guest", "        ok 1 a"):
            if want not in lines:
                problems.append(f"no line {want!r} in:\n      " + "\n      ".join(lines))
                break
    return problems


def run_fixture(fx):
    """Problems with a fixture's verdict under this tree's tools."""
    with tempfile.TemporaryDirectory() as tmp:
        got, counts, report = new_verdict(fx, tmp)
    problems = []
    if got != fx.get("verdict"):
        problems.append(f"verdict {got}, the fixture says {fx.get('verdict')}")
    want_counts = fx.get("counts")
    if want_counts and counts != tuple(int(x) for x in want_counts.split()):
        problems.append(f"counts {' '.join(map(str, counts))}, the fixture says {want_counts}")
    for text in fx.fields.get("says", []):
        if text not in report:
            problems.append(f"report lacks {text!r}")
    if problems:
        problems.append("report:\n      " + report.replace("\n", "\n      "))
    return problems


# ------------------------------------------------------------ the old tools
def old_verdict(fx, main_dir, tmp):
    """The verdict the tools of MAIN_DIR (main before issue 19) give."""
    check = fx.get("check", "suite")
    run, known, lists = make_run(fx, tmp)
    if check == "matrix":
        return "ok"             # its check.sh read rows with awk, unchecked
    if check == "ktap":
        return "no KTAP"        # it wrote none
    if check == "splats":
        return old_splats(fx, main_dir)
    if check == "regression":
        # check-regressions.sh: caught if rc != 0 (a missing rc is "none")
        # or its own splat regex matches anywhere on the console
        rc = fx.get("rc") or "none"
        console = fx.text("console") if "console" in fx.sections else ""
        splat = re.search(old_regression_splat(main_dir), console)
        return "caught" if rc != "0" or splat else "missed"
    words = fx.get("row").split()
    kind, expect = words[3], words[4]
    if "log" not in fx.sections:
        return "fail"           # its check.sh: "suite produced no output"
    root = os.path.join(tmp, "old")
    os.makedirs(os.path.join(root, "scripts"))
    shutil.copytree(lists, os.path.join(root, "tests", "expected-failures"))
    shutil.copy(os.path.join(main_dir, "scripts", "judge.sh"), os.path.join(root, "scripts"))
    known_file = os.path.join(tmp, "known-file")
    open(known_file, "w").write(fx.text("known") if "known" in fx.sections else "")
    out = subprocess.run(["bash", os.path.join(root, "scripts", "judge.sh"), kind,
                          os.path.join(run, f"{SUITE}.log"), expect, known_file],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return "error"
    p, f, s = out.stdout.split("\n")[-2].split()
    return "fail" if int(f) else "pass"


def old_regression_splat(main_dir):
    src = open(os.path.join(main_dir, "scripts", "check-regressions.sh")).read()
    return re.search(r"grep -Ec '([^']*)'", src).group(1)


def old_splats(fx, main_dir):
    """Both old lists: run-guest.sh's SPLAT and check-regressions.sh's."""
    src = open(os.path.join(main_dir, "scripts", "run-guest.sh")).read()
    run_guest = re.search(r"^SPLAT='([^']*)'", src, re.M).group(1)
    console = fx.text("console")
    hits = [bool(re.search(rx, console)) for rx in (run_guest, old_regression_splat(main_dir))]
    if hits == [False, False]:
        return "clean"
    if hits == [True, True]:
        return fx.get("verdict")    # both caught it (kinds did not exist)
    return "run-guest only" if hits[0] else "check-regressions only"


# ------------------------------------------------------------- other checks
def check_files():
    """The project's own matrices, lists and splat list parse, and every
    splat kind has a fixture."""
    problems = []
    for path in ("tests/matrix", "tests/matrix.debug"):
        try:
            matrix.read_matrix(os.path.join(ROOT, path))
        except matrix.MatrixError as e:
            problems.append(str(e))
    for path in glob.glob(os.path.join(ROOT, "tests", "known-failures", "*")):
        try:
            judge.read_known(path)
        except matrix.MatrixError as e:
            problems.append(str(e))
    kinds = [kind for kind, _ in judge.read_splat_patterns()]
    covered = {Fixture(p).get("verdict") for p in glob.glob(os.path.join(HERE, "fixtures", "*.fixture"))
               if Fixture(p).get("check") == "splats"}
    for kind in kinds:
        if kind not in covered:
            problems.append(f"tests/kernel-splats: kind {kind} has no fixture")
    # every make target the README shows has a rule: one lost in a merge
    # only said "Nothing to be done" (check-clients, 2026-12-07)
    makefile = open(os.path.join(ROOT, "Makefile")).read()
    rules = set(re.findall(r"(?m)^([a-z][a-z0-9-]*):", makefile))
    readme = open(os.path.join(ROOT, "README.md")).read()
    shown = set(re.findall(r"(?m)(?:^\s+|`)make ([a-z][a-z0-9-]*)", readme))
    for target in sorted(shown - {"htmldocs"}):     # htmldocs: the kernel's own
        if target not in rules:
            problems.append(f"README.md shows make {target}, and the Makefile has no rule for it")
    return problems


def check_guest_timeout():
    """guest/init under busybox sh: a hung suite is stopped at its limit,
    reported with @@timeout, split into NAME.timeout by lib.sh, and judged a
    failure naming the suite; a slow suite sends @@alive heartbeats, never
    inside its own report."""
    busybox = shutil.which("busybox")
    if not busybox:
        return ["busybox not found (apt-get install busybox-static)"]
    with tempfile.TemporaryDirectory() as tmp:
        chan, results, run = (os.path.join(tmp, d) for d in ("channel", "results", "run"))
        os.makedirs(results)
        os.makedirs(run)
        pids = os.path.join(tmp, "pids")
        # the hung suite: a child in the background, itself in the foreground
        script = (f". {ROOT}/guest/init; "
                  f"run_suite hung 1 /tmp sh -c 'sleep 60 & echo $! >> {pids}; "
                  f"echo $$ >> {pids}; exec sleep 60'; "
                  "run_suite quick 5 /tmp echo hello; "
                  "run_suite slow 10 /tmp sh -c 'sleep 3.5; echo done'")
        # CHAN is a file here: run_suite appends to it, as to the serial port
        env = dict(os.environ, GUEST_INIT_FUNCTIONS="1", CHAN=chan, RESULTS=results,
                   KILL_GRACE="1", HEARTBEAT="1")
        out = subprocess.run([busybox, "sh", "-c", script], env=env, capture_output=True,
                             text=True, timeout=30)
        subprocess.run(["bash", "-c", f'. "{ROOT}/scripts/lib.sh"; split_channel "$1" "$2"',
                        "-", chan, run], check=True)
        problems = []
        if "TIMED OUT" not in out.stdout:
            problems.append(f"guest/init did not say TIMED OUT: {out.stdout!r} {out.stderr!r}")
        rows = {r.suite: r for r in (
            matrix.parse_row("k hung k exit pass ./hung"), matrix.parse_row("k quick k exit pass echo"))}
        hung, quick = (judge.judge_suite(rows[s], run) for s in ("hung", "quick"))
        if not hung.failed or not any("suite hung timed out" in p for p in hung.problems):
            problems.append(f"the hung suite was judged {hung}")
        if quick.failed or quick.passed != 1:
            problems.append(f"the suite after the hung one was judged {quick}")
        if open(chan).read().count("@@alive slow\n") < 2:
            problems.append("no @@alive heartbeats of the slow suite on the channel")
        if open(os.path.join(run, "slow.log")).read().strip() != "done":
            problems.append(f"slow.log is not the suite's output: {open(os.path.join(run, 'slow.log')).read()!r}")
        # nothing of the hung suite may live on
        for pid in map(int, open(pids).read().split()):
            try:
                state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":    # a zombie is dead, waiting for its new parent
                problems.append(f"process {pid} of the hung suite survived")
                os.kill(pid, 9)
        return problems


# The guest of run_check_series: each suite of the plan reports a clean
# run, except test_progs when the booted prefix's tree has FAIL_RUN.
SERIES_GUEST_STUB = r"""
run=$2
tv='#0/p test OK
Summary: 1 PASSED, 0 SKIPPED, 0 FAILED'
tp='#1/1     kptr_maps/array:OK
#1       kptr_maps:OK
Summary: 1/1 PASSED, 0 SKIPPED, 0 FAILED'
rc=0
if [ -e "$BUILD_DIR/bisect/src/FAIL_RUN" ]; then
    tp='#1/1     kptr_maps/array:FAIL
#1       kptr_maps:FAIL
Summary: 0/0 PASSED, 0 SKIPPED, 1 FAILED'
    rc=1
fi
grep -q 'run_suite test_verifier .* ./test_verifier$' "$3" || exit 3
grep -q 'run_suite test_progs .* ./test_progs ' "$3" || exit 3
echo "$tv" > "$run/test_verifier.log"; echo 0 > "$run/test_verifier.rc"
echo "$tp" > "$run/test_progs.log"; echo $rc > "$run/test_progs.rc"
: > "$run/console.log"; echo 0 > "$run/verdict"
"""


def run_check_series(scripts_dir, tmp):
    """check-series.sh of SCRIPTS_DIR on a three-patch layer, with the
    kernel, test and docs builds and the guest stubbed: patch 2 breaks the
    selftests' build only, patch 3 adds a page with a warning and makes
    its prefix's test_progs fail in the guest. (exit status, output)"""
    root = os.path.join(tmp, "root")
    env = dict(os.environ, GIT_AUTHOR_NAME="h", GIT_AUTHOR_EMAIL="h@h", GIT_COMMITTER_NAME="h",
               GIT_COMMITTER_EMAIL="h@h", BUILD_DIR=os.path.join(root, "build"))
    env.pop("SERIES_FROM", None)

    def sh(cmd, cwd):
        subprocess.run(["bash", "-ec", cmd], cwd=cwd, env=env, check=True, capture_output=True)

    for d in ("scripts", "kernel/baseline", "kernel/patches", "tests", "build/linux", "tree"):
        os.makedirs(os.path.join(root, d))
    for f in ("check-series.sh", "lib.sh", "matrix.py", "judge.py"):
        shutil.copy(os.path.join(scripts_dir, f), os.path.join(root, "scripts"))
    os.makedirs(os.path.join(root, "tests", "known-failures"))
    shutil.copy(os.path.join(ROOT, "tests", "kernel-splats"), os.path.join(root, "tests"))
    stubs = {
        "run-guest.sh": SERIES_GUEST_STUB,
        "prepare-tree.sh": "exit 0",
        "build-kernel.sh": 'echo "kernel of $KERNEL_SRC built"',
        # the selftests of a prefix fail to build once a patch broke them
        "build-tests.sh": 'echo "CTESTS=$CTESTS"; [ ! -e "$KERNEL_SRC/BROKEN_TESTS" ]',
        # a page that says WARNING has one
        "check-docs.sh": '! grep -rq WARNING "$1/Documentation"',
    }
    for name, body in stubs.items():
        path = os.path.join(root, "scripts", name)
        open(path, "w").write("#!/usr/bin/env bash\n" + body + "\n")
        os.chmod(path, 0o755)
    open(os.path.join(root, "tests", "ctests.patched"), "w").write("kptr_maps\n")
    open(os.path.join(root, "kernel", "baseline", "series"), "w").write("")
    linux = os.path.join(root, "build", "linux")
    sh("git init -q . && mkdir scripts && printf '%s\\n' '#!/bin/sh' "
       "'echo \"total: 0 errors, 0 warnings, 1 lines checked\"' > scripts/checkpatch.pl && "
       "chmod +x scripts/checkpatch.pl && git add . && git commit -qm pristine && "
       "git tag pristine", linux)
    # the layer: patch 1 adds a prog_test, patch 2 breaks the tests' build
    sh("git worktree add -q --detach ../../tree pristine", linux)
    tree = os.path.join(root, "tree")
    sh("mkdir -p tools/testing/selftests/bpf/prog_tests && "
       "touch tools/testing/selftests/bpf/prog_tests/kptr_maps.c && git add . && "
       "git commit -qm 'selftests/bpf: add kptr_maps' && "
       "touch BROKEN_TESTS && git add . && git commit -qm 'bpf: break the selftests' && "
       "mkdir -p Documentation/bpf && echo WARNING > Documentation/bpf/kptrs.rst && "
       "rm BROKEN_TESTS && touch FAIL_RUN && "
       "git add . && git commit -qm 'Documentation/bpf: a page with a warning' && "
       f"git format-patch -q -3 -o {root}/kernel/patches && "
       f"(cd {root}/kernel/patches && ls *.patch > series)", tree)
    out = subprocess.run(["bash", os.path.join(root, "scripts", "check-series.sh"), "patches"],
                         env=env, capture_output=True, text=True, timeout=60)
    return out.returncode, out.stdout + out.stderr


def check_series():
    """check-series.sh builds each prefix's selftests and fails the patch
    that breaks them, checks the docs of a patch that changes a page, and
    boots each prefix to run its tests, failing the one whose test fails
    (the kernel, tests and docs builds and the guest are stubbed)."""
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = run_check_series(os.path.join(ROOT, "scripts"), tmp)
        tests_log = open(os.path.join(tmp, "root", "build", "bisect", "tests-1.log")).read()
    problems = []
    if "CTESTS=kptr_maps" not in tests_log:
        problems.append(f"patch 1's tests were not built with its prog_tests: {tests_log!r}")
    if rc == 0:
        problems.append("check-series passed a layer whose patch 2 breaks the selftests")
    if not re.search(r"^0001-\S+: builds in \d+s; tests build; checkpatch.*; "
                     r"runs: 2 passed, 0 failed, 0 skipped$", out, re.M):
        problems.append("patch 1 is not reported as building and passing its tests")
    if not re.search(r"^0002-\S+: builds in \d+s; TESTS BUILD FAILED.*; NOT RUN", out, re.M):
        problems.append("patch 2 is not reported as breaking the tests' build")
    if not re.search(r"^0003-\S+: .*; tests build;.*; RUN FAILED: 1 passed, 1 failed", out, re.M):
        problems.append("patch 3's failing test_progs in the guest is not reported")
    if re.search(r"^000[12]-.*docs", out, re.M):
        problems.append("the docs of a patch that changes no page were checked")
    if not re.search(r"^0003-\S+: .*; DOCS WARNINGS", out, re.M):
        problems.append("patch 3's page with a warning is not reported")
    if problems:
        problems.append("output:\n      " + out.replace("\n", "\n      "))
    return problems


def check_regressions_loop():
    """check-regressions.sh goes on past an injection whose kernel or
    bpf_testmod.ko does not build, reports it NOT RUN and fails; the others
    are judged as usual (the tree, builds and guest are stubbed: bug-a's
    test fails in the guest, bug-b's kernel does not build, bug-c's test
    passes, bug-d's module does not build)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        build = os.path.join(root, "build")
        env = dict(os.environ, GIT_AUTHOR_NAME="h", GIT_AUTHOR_EMAIL="h@h",
                   GIT_COMMITTER_NAME="h", GIT_COMMITTER_EMAIL="h@h", BUILD_DIR=build)
        for d in ("scripts", "tests/bug-injections", "build/linux", "build/patched/tests"):
            os.makedirs(os.path.join(root, d))
        for f in ("check-regressions.sh", "lib.sh", "judge.py", "matrix.py"):
            shutil.copy(os.path.join(ROOT, "scripts", f), os.path.join(root, "scripts"))
        shutil.copy(os.path.join(ROOT, "tests", "kernel-splats"), os.path.join(root, "tests"))
        stubs = {
            # the kernel with bug-b does not build
            "build-kernel.sh": '! grep -q bug-b "$KERNEL_SRC/file"',
            "build-tests.sh": '! grep -q bug-d "$KERNEL_SRC/file"',
            # the guest runs the named test: it fails on bug-a's kernel
            "run-guest.sh": r"""
r=OK; grep -q bug-a "$BUILD_DIR/inject/src/file" && r=FAIL
printf '#1/1     t/x:%s\n#1       t:%s\n' $r $r > "$2/regress.log"
[ $r = OK ]; echo $? > "$2/regress.rc"
echo "guest: suite regress: ./test_progs -t t" > "$2/console.log"
""",
        }
        for name, body in stubs.items():
            path = os.path.join(root, "scripts", name)
            open(path, "w").write("#!/usr/bin/env bash\n" + body + "\n")
            os.chmod(path, 0o755)
        test_progs = os.path.join(build, "patched", "tests", "test_progs")
        open(test_progs, "w").write("")
        os.chmod(test_progs, 0o755)
        subprocess.run(["bash", "-ec", "git init -q . && echo base > file && git add . && "
                        "git commit -qm pristine && git tag pristine && "
                        "git worktree add -q --detach ../patched/src pristine"],
                       cwd=os.path.join(build, "linux"), env=env, check=True, capture_output=True)
        for bug in ("bug-a", "bug-b", "bug-c", "bug-d"):
            open(os.path.join(root, "tests", "bug-injections", bug + ".patch"), "w").write(
                f"Caught-by: t/x\n--- a/file\n+++ b/file\n@@ -1 +1 @@\n-base\n+{bug}\n")
        r = subprocess.run(["bash", os.path.join(root, "scripts", "check-regressions.sh"),
                            "bug-a", "bug-b", "bug-c", "bug-d"], env=env, capture_output=True,
                           text=True, timeout=60)
    out = r.stdout + r.stderr
    problems = []
    if r.returncode == 0:
        problems.append("check-regressions passed with a kernel that does not build")
    for bug, says in (("bug-a", "caught"), ("bug-b", "NOT RUN: its kernel does not build"),
                      ("bug-c", "MISSED"), ("bug-d", "NOT RUN: its bpf_testmod.ko does not build")):
        if not re.search(rf"^  {bug} .*{says}", out, re.M):
            problems.append(f"{bug} is not reported as {says!r}")
    if problems:
        problems.append("output:\n      " + out.replace("\n", "\n      "))
    return problems


def run_script_case(label, argv, want_rc, says):
    """Run scripts/ARGV[0] with the rest of ARGV: the problems if it does not
    exit with WANT_RC or its output lacks one of the texts SAYS."""
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", argv[0])] + argv[1:],
                       capture_output=True, text=True)
    problems = []
    if r.returncode != want_rc:
        problems.append(f"{label}: exit {r.returncode}, want {want_rc}: {r.stdout}{r.stderr}")
    for text in says:
        if text not in r.stdout:
            problems.append(f"{label}: output lacks {text!r}: {r.stdout}{r.stderr}")
    return problems


def check_parity():
    """parity.py on two miniature check-full runs: a case that passes on the
    reference and fails, crashes, goes missing or splats on the other is a
    regression; one failing on both is listed with its cause; a denylist
    line whose tests pass on the reference is stale; a regressed case that
    fails in a rerun on the reference is flaky, one that passes every rerun
    there stays a regression unless it also passed enough reruns on the
    other (then it is listed as not reproduced)."""
    problems = []
    tp = lambda t, res, subs=(): "".join(f"#1/{i} {t}/{n}:{r}\n" for i, (n, r) in
                                         enumerate(subs, 1)) + f"#1 {t}:{res}\n"
    ref = {"a": (tp("a", "OK", [("x", "OK"), ("y", "OK")]), 0, None),
           "b": (tp("b", "OK"), 0, None), "c": (tp("c", "OK"), 0, None),
           "d": ("open: No such file or directory\n" + tp("d", "FAIL"), 1, None),
           "e": (tp("e", "OK"), 0, None), "f": (tp("f", "OK"), 0, None),
           "g": ("ip: command not found\n" + tp("g", "FAIL"), 1, None)}
    oth = dict(ref, a=(tp("a", "FAIL", [("x", "OK"), ("y", "FAIL")]), 1, None),
               b=("", None, "crashed"), c=(tp("c", "OK"), 0, "splat"),
               e=("", 0, None))
    cases = [
        ("regressions found", oth, "ip\tno netns", 1,
         ["REGRESSION a/y: OK -> FAIL", "REGRESSION a: OK -> FAIL", "REGRESSION b: OK -> CRASH",
          "REGRESSION c: OK -> SPLAT", "REGRESSION e: OK -> MISSING", "2 fail on both"]),
        ("same results pass", ref, "g\tno netns", 0, ["0 regressions", "0 stale"]),
        ("stale denylist line", ref, "f\tneeds a NIC", 1, ["STALE denylist line f"]),
    ]
    flaky_oth = dict(ref, f=(tp("f", "FAIL"), 1, None))
    one_run = lambda r: ("", None, "missing") if r == "MISSING" else (tp("f", r), int(r != "OK"), None)
    reruns = lambda up, pa: {"up": {"f": [one_run(r) for r in up]}, "pa": {"f": [one_run(r) for r in pa]}}
    cases += [
        ("flaky on the reference", flaky_oth, "g\tno netns", 0,
         ["0 regressions", "1 flaky on up"], reruns(["OK", "FAIL", "OK"], ["FAIL", "OK", "OK"])),
        ("reruns pass on the reference", flaky_oth, "g\tno netns", 1,
         ["REGRESSION f: OK -> FAIL", "0 flaky"], reruns(["OK"] * 3, ["OK", "FAIL", "OK"])),
        ("rerun boot died on the reference", flaky_oth, "g\tno netns", 1,
         ["REGRESSION f: OK -> FAIL", "0 flaky"], reruns(["OK", "MISSING"], ["FAIL", "FAIL"])),
        ("one failure, not reproduced", flaky_oth, "g\tno netns", 0,
         ["0 regressions", "1 not reproduced on pa", "NOT REPRODUCED f"],
         reruns(["OK"] * 3, ["OK"] * 3)),
        ("too few reruns to call it unreproduced", flaky_oth, "g\tno netns", 1,
         ["REGRESSION f: OK -> FAIL", "0 not reproduced"], reruns(["OK"] * 3, ["OK", "OK", "MISSING"])),
    ]
    cases = [c if len(c) == 6 else c + ({},) for c in cases]
    with tempfile.TemporaryDirectory() as tmp:
        def write_run(d, results):
            os.makedirs(os.path.join(d, "boot1"))
            console = ["guest: up"]
            with open(os.path.join(d, "suites"), "w") as f:
                for s, (log, rc, how) in results.items():
                    t = s.split("@")[0]     # a rerun's suite: test_progs.TEST@N
                    f.write(f"test_progs.{s} 600 ./test_progs -a {t}\n")
                    console.append(f"guest: suite test_progs.{s}: ./test_progs -a {t}")
                    if how == "missing":    # the guest never reported it
                        continue
                    if how == "crashed":
                        open(os.path.join(d, f"test_progs.{s}.crashed"), "w").write("boot1\n")
                        continue
                    if how == "splat":
                        console.append("[   1.0] BUG: KASAN: use-after-free in x+0x1/0x2")
                    open(os.path.join(d, f"test_progs.{s}.log"), "w").write(log)
                    open(os.path.join(d, f"test_progs.{s}.rc"), "w").write(f"{rc}\n")
            open(os.path.join(d, "boot1", "console.log"), "w").write("\n".join(console) + "\n")

        for label, other, deny, want_rc, says, rerun in cases:
            dirs = []
            for kname, results in (("up", ref), ("pa", other)):
                d = os.path.join(tmp, label.replace(" ", "_"), kname)
                write_run(d, results)
                for t, runs in rerun.get(kname, {}).items():
                    write_run(os.path.join(d, "rerun"), {f"{t}@{i}": r for i, r in enumerate(runs, 1)})
                dirs.append(f"{kname}={d}")
            denyf = os.path.join(tmp, label.replace(" ", "_"), "deny")
            open(denyf, "w").write(deny + "\n")
            problems += run_script_case(label, ["parity.py", "--min-reruns", "3", "--denylist", denyf,
                                                "--out", os.path.join(tmp, "p.md")] + dirs,
                                        want_rc, says)
            if label == "regressions found":    # what check-full.sh reruns
                problems += run_script_case("regressed tests", ["parity.py", "--regressed-tests"] + dirs,
                                            0, ["a\nb\nc\ne\n"])
            if label == "same results pass":    # nothing to rerun: not even an empty name
                r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "parity.py"),
                                    "--regressed-tests"] + dirs, capture_output=True, text=True)
                if r.stdout:
                    problems.append(f"no regressions, yet tests to rerun: {r.stdout!r}")
    return problems


def check_clients():
    """clients.py: a kernel passes only with a complete TAP (plan, every
    number, no "not ok", an exit status that agrees); two kernels must print
    the same output per check unless tests/clients/differences explains it."""
    problems = []
    tap = lambda *checks: "".join(
        "".join(f"# {line}\n" for line in out) + f"{res} {i} - {name}\n"
        for i, (name, res, out) in enumerate(checks, 1))
    good = tap(("a", "ok", ["x: N"]), ("b", "ok", ["(nil)"])) + "1..2\n"
    cases = [
        ("same output passes", good, 0, good, 0, "", 0, ["2 checks with the same output"]),
        ("not ok fails", good, 0,
         tap(("a", "ok", ["x: N"]), ("b", "not ok", ["0xffff"])) + "1..2\n", 1, "", 1,
         ["not ok b"]),
        ("no plan fails", good, 0, tap(("a", "ok", ["x: N"])), 1, "", 1, ["no plan line"]),
        ("status disagrees", good, 0, good, 1, "", 1, ["exit status 1 with 0 failed"]),
        ("output differs", good, 0, tap(("a", "ok", ["x: N"]), ("b", "ok", ["0x1"])) + "1..2\n",
         0, "", 1, ["b: output differs"]),
        ("explained difference", good, 0,
         tap(("a", "ok", ["x: N"]), ("b", "ok", ["0x1"])) + "1..2\n", 0, "b\twhy", 0,
         ["explained: why"]),
        ("stale difference", good, 0, good, 0, "zz\twhy", 1, ["differences names zz"]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for label, log_a, rc_a, log_b, rc_b, diffs, want_rc, says in cases:
            dirs = []
            for kname, log, rc in (("up", log_a, rc_a), ("pa", log_b, rc_b)):
                d = os.path.join(tmp, label.replace(" ", "_"), kname)
                os.makedirs(d)
                open(os.path.join(d, "clients.log"), "w").write(log)
                open(os.path.join(d, "clients.rc"), "w").write(f"{rc}\n")
                dirs.append(f"{kname}={d}")
            difff = os.path.join(tmp, label.replace(" ", "_"), "differences")
            open(difff, "w").write(diffs + "\n")
            problems += run_script_case(label, ["clients.py", "--differences", difff] + dirs,
                                        want_rc, says)
    return problems


def main(argv):
    fixtures = [Fixture(p) for p in sorted(glob.glob(os.path.join(HERE, "fixtures", "*.fixture")))]
    if len(argv) == 3 and argv[1] == "--old":
        print(f"{'fixture':40} {'hole':>4}  {'must be':10} {'old tools':22} wrong?")
        wrong = 0
        for fx in fixtures:
            with tempfile.TemporaryDirectory() as tmp:
                old = old_verdict(fx, argv[2], tmp)
            bad = old != fx.get("verdict")
            wrong += bad
            print(f"{fx.name:40} {fx.get('hole', '-'):>4}  {fx.get('verdict'):10} {old:22} "
                  f"{'WRONG' if bad else ''}")
        with tempfile.TemporaryDirectory() as tmp:
            rc, _ = run_check_series(os.path.join(argv[2], "scripts"), tmp)
        old = "pass" if rc == 0 else "fail"
        wrong += old != "fail"
        print(f"{'check-series (stubbed builds)':40} {12:>4}  {'fail':10} {old:22} "
              f"{'WRONG' if old != 'fail' else ''}")
        total = len(fixtures) + 1
        print(f"{wrong} of {total} fixtures get a wrong verdict from the old tools")
        return 0
    failed = 0
    for fx in fixtures:
        problems = run_fixture(fx)
        failed += bool(problems)
        print(f"{'ok  ' if not problems else 'FAIL'} {fx.name}")
        for p in problems:
            print(f"     {p}")
    checks = (("project files", check_files), ("guest timeout", check_guest_timeout),
              ("check-series: each patch's tests and docs", check_series),
              ("check-regressions: a kernel that does not build", check_regressions_loop),
              ("KTAP of a kernel's run and of several kernels", check_ktap_kernel),
              ("SUITES and TEST_FILTER", check_suite_selection),
              ("check-full's parity table", check_parity),
              ("check-clients' verdict", check_clients))
    for name, check in checks:
        problems = check()
        failed += bool(problems)
        print(f"{'ok  ' if not problems else 'FAIL'} {name}")
        for p in problems:
            print(f"     {p}")
    total = len(fixtures) + len(checks)
    print(f"harness: {total - failed} of {total} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
