#!/usr/bin/env python3
"""The parity table of make check-full: upstream 6.1's selftests on two
kernels, case by case.

    parity.py [--times FILE] [--denylist FILE] --out PARITY_MD
              REFERENCE=RUN_DIR OTHER=RUN_DIR
    parity.py --regressed-tests [--denylist FILE] REFERENCE=RUN_DIR OTHER=RUN_DIR

REFERENCE is the kernel whose results are the standard (upstream-full),
OTHER the one judged against it (patched-full). Each RUN_DIR is what
check-full.sh leaves for one kernel: `suites` (NAME LIMIT CMD per line, in
run order), each suite's NAME.log, NAME.rc, NAME.timeout (it hit its time
limit) or NAME.crashed (the guest died while it ran: the boot's name), and
bootN/console.log for each boot.

A case is a test_progs test ("btf") or subtest ("btf/BTF ID"), test_maps
as a whole, or a test_verifier case ("test_verifier: u DESCR"). Its result
on a kernel is OK, SKIP, FAIL, TIMEOUT (its suite was stopped at its limit),
CRASH (the guest died in its suite), MISSING (its suite ran but never
reported it) or SPLAT (OK by the runner, but a kernel splat of
tests/kernel-splats came while its suite ran: a splat fails every case of
that suite that did not fail anyway).

Verdict (exit status 0 when both hold):
  - no regression: no case that is OK or SKIP on REFERENCE fails (or is
    skipped where REFERENCE passed) on OTHER, unless the reruns prove it
    flaky on REFERENCE itself;
  - the denylist is true: every case it names fails on REFERENCE (a line
    whose tests pass there is stale, and an error).
Cases that fail on both are listed with their cause: the denylist's reason
when it has one, else the first line of the REFERENCE log that says why.

Reruns: a test_progs test with a regressed case is run again a few times
on both kernels (check-full.sh, from the list --regressed-tests prints),
each RUN_DIR/rerun holding suites "test_progs.TEST@N" as a run dir holds
its suites. A case that fails (or is skipped where it passed) in any rerun
on REFERENCE is flaky there, and timing in a TCG guest rather than our
series decides it: it is listed as flaky with both kernels' rerun counts,
not as a regression. A case that passes every rerun on REFERENCE stays a
regression, unless it passed every one of at least --min-reruns (10) reruns
on OTHER too: one failure in the full run, where both kernels run side by
side on two CPUs, that nothing reproduces is timing, not our series. Such a
case is listed, with its failure, as "not reproduced", never hidden. One
failed rerun on OTHER, or fewer reruns than that, keeps it a regression.

Writes PARITY_MD: totals, the regressions, the cases that fail on both
with causes, those that pass only on OTHER, the denylist, every case's
result on each kernel; and PARITY_MD with .tsv for .md, the same table for
programs.
"""
import argparse
import fnmatch
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judge  # noqa: E402

PASSING = ("OK", "SKIP")
# Lines of a test's log that say why it failed, best first.
CAUSE_HINTS = [
    re.compile(r"(?i)\b(not found|no such file|unknown|not supported|"
               r"operation not permitted|cannot|can't|couldn't|failed to|"
               r"invalid argument|timed out)\b"),
    re.compile(r"(?i)\b(fail|error|err)\b"),
]
SUITE_LINE = re.compile(r"guest: suite (\S+): ")


def read_suites(run_dir):
    with open(os.path.join(run_dir, "suites")) as f:
        return [line.split()[0] for line in f if line.strip()]


def exists(run_dir, name):
    return os.path.exists(os.path.join(run_dir, name))


def suite_splats(run_dir):
    """{suite: [splat lines]} from every boot's console: a splat belongs to
    the suite the guest had started last before it."""
    found = {}
    patterns = judge.read_splat_patterns()
    for boot in sorted(d for d in os.listdir(run_dir) if d.startswith("boot")):
        console = os.path.join(run_dir, boot, "console.log")
        if not os.path.exists(console):
            continue
        lines = judge.read_lines(console)
        suites = {}
        current = None
        for n, line in enumerate(lines, 1):
            m = SUITE_LINE.search(line)
            if m:
                current = m.group(1)
            suites[n] = current
        for n, _, line in judge.find_splats(lines, patterns):
            found.setdefault(suites[n] or "(boot)", []).append(line.strip())
    return found


def first_cause(detail):
    for rx in CAUSE_HINTS:
        for line in detail:
            if rx.search(line):
                return line.strip()[:160]
    lines = [line.strip() for line in detail if line.strip()]
    return lines[-1][:160] if lines else ""


def suite_cases(run_dir, suite):
    """[(case name, result, detail lines)] of one suite on one kernel."""
    log = os.path.join(run_dir, f"{suite}.log")
    lines = judge.read_lines(log) if os.path.exists(log) else []
    rc, timeout = judge.read_status(run_dir, suite)
    crashed = exists(run_dir, f"{suite}.crashed")
    stopped = "CRASH" if crashed else "TIMEOUT" if timeout else None
    cases = []
    if suite.startswith("test_progs."):
        test = suite.split(".", 1)[1].split("@", 1)[0]
        # the subtests as the judge parses them, and the test's own line
        # (the judge folds a test that has subtests into them)
        cases = [(c.name, c.result, c.detail) for c in judge.parse_test_progs(lines).cases
                 if c.name != test]
        own = [m for m in map(judge.TP_TEST.fullmatch, lines) if m and m.group(2) == test]
        tail = [line for line in lines if line.strip()][-20:]
        if stopped or not own:
            cases.append((test, stopped or "MISSING", tail))
        elif rc != 0 and own[-1].group(3) != "FAIL":
            cases.append((test, "FAIL", tail + [f"exit status {rc}"]))
        else:
            fails = [line for line in lines if line.strip()] if own[-1].group(3) == "FAIL" else []
            cases.append((test, own[-1].group(3), fails))
    elif suite == "test_maps":
        result = stopped or ("OK" if rc == 0 else "FAIL")
        cases.append(("test_maps", result, [line for line in lines if line.strip()][-20:]))
    elif suite == "test_verifier":
        parsed = judge.parse_test_verifier(lines)
        seen = {}
        for c in parsed.cases:
            name = f"test_verifier: {c.name}"
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                name += f" (#{seen[name]})"
            cases.append((name, c.result, c.detail))
        if stopped or not parsed.summary:
            cases.append(("test_verifier", stopped or "MISSING",
                          [line for line in lines if line.strip()][-20:]))
    else:
        raise SystemExit(f"parity.py: unknown suite {suite} in {run_dir}")
    return cases


def kernel_results(run_dir):
    """({case: (result, detail)}, [case order], {suite: splats})"""
    results, order = {}, []
    splats = suite_splats(run_dir)
    for suite in read_suites(run_dir):
        for name, result, detail in suite_cases(run_dir, suite):
            if result == "OK" and suite in splats:
                result, detail = "SPLAT", splats[suite][:5]
            if name not in results:
                order.append(name)
            results[name] = (result, detail)
    return results, order, splats


def rerun_results(run_dir):
    """{case: [result of each rerun]} of RUN_DIR/rerun (none: {})."""
    rerun = os.path.join(run_dir, "rerun")
    found = {}
    if not exists(rerun, "suites"):
        return found
    for suite in read_suites(rerun):
        for name, result, _ in suite_cases(rerun, suite):
            found.setdefault(name, []).append(result)
    return found


def failed_count(results, passed_first):
    """How many RESULTS fail: SKIP counts too where the case had passed.
    MISSING does not: a rerun boot that died or never started says nothing
    about the test, and must not turn a regression into a flake."""
    return sum(1 for r in results if r != "MISSING" and
               (r not in PASSING or (passed_first == "OK" and r == "SKIP")))


def read_denylist(path):
    """[(glob over test names, reason)]"""
    entries = []
    if not path or not os.path.exists(path):
        return entries
    for line in judge.read_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        pattern, _, reason = line.partition("\t")
        entries.append((pattern.strip(), reason.strip()))
    return entries


def denied(case, denylist):
    test = case.split("/", 1)[0]
    for pattern, reason in denylist:
        if fnmatch.fnmatchcase(test, pattern) or fnmatch.fnmatchcase(case, pattern):
            return pattern, reason
    return None


def md_escape(text):
    return text.replace("|", "\\|").replace("`", "'")


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--times")
    ap.add_argument("--denylist")
    ap.add_argument("--out")
    ap.add_argument("--min-reruns", type=int, default=10,
                    help="passing reruns on both kernels that make a single failure 'not reproduced'")
    ap.add_argument("--regressed-tests", action="store_true",
                    help="print the test_progs tests with a regressed case, one per line")
    ap.add_argument("kernels", nargs=2, metavar="KERNEL=RUN_DIR")
    args = ap.parse_args(argv)
    (ref_name, ref_dir), (oth_name, oth_dir) = (k.split("=", 1) for k in args.kernels)
    ref, ref_order, ref_splats = kernel_results(ref_dir)
    oth, oth_order, oth_splats = kernel_results(oth_dir)
    denylist = read_denylist(args.denylist)
    order = ref_order + [c for c in oth_order if c not in ref]

    both_ok, both_skip, regress, both_fail, only_oth, other = [], [], [], [], [], []
    for case in order:
        r = ref.get(case, ("MISSING", []))[0]
        o = oth.get(case, ("MISSING", []))[0]
        if r == "OK" and o == "OK":
            both_ok.append(case)
        elif r == "SKIP" and o == "SKIP":
            both_skip.append(case)
        elif r in PASSING and (o not in PASSING or (r == "OK" and o == "SKIP")):
            regress.append(case)
        elif r not in PASSING and o not in PASSING:
            both_fail.append(case)
        elif r not in PASSING and o in PASSING:
            only_oth.append(case)
        else:
            other.append(case)      # SKIP on the reference, OK on the other
    ref_rerun, oth_rerun = rerun_results(ref_dir), rerun_results(oth_dir)
    flaky = []      # (case, fails on ref reruns, ref reruns, fails on other, other reruns)
    for case in list(regress):
        runs = ref_rerun.get(case, [])
        bad = failed_count(runs, ref[case][0])
        if bad:
            regress.remove(case)
            oth_runs = oth_rerun.get(case, [])
            flaky.append((case, bad, len(runs), failed_count(oth_runs, ref[case][0]), len(oth_runs)))
    unreproduced = []   # (case, passing reruns on ref, passing reruns on other)
    for case in list(regress):
        passed = [sum(1 for r in runs.get(case, []) if r == ref[case][0])
                  for runs in (ref_rerun, oth_rerun)]
        fails_oth = failed_count(oth_rerun.get(case, []), ref[case][0])
        if min(passed) >= args.min_reruns and not fails_oth:
            regress.remove(case)
            unreproduced.append((case, passed[0], passed[1]))
    if args.regressed_tests:
        tests = sorted({c.split("/", 1)[0] for c in regress
                        if not c.startswith("test_verifier") and c != "test_maps"})
        for test in tests:
            print(test)
        return 0
    if not args.out:
        ap.error("--out is required")
    stale = [(p, why) for p, why in denylist
             if not any(denied(c, [(p, why)]) for c in order
                        if ref.get(c, ("MISSING",))[0] not in PASSING)]

    out = []
    w = out.append
    w(f"# Parity: upstream 6.1's selftests on {ref_name} and {oth_name}")
    w("")
    w("Written by scripts/parity.py (make check-full). Results: OK, SKIP, FAIL, "
      "TIMEOUT (the suite's time limit), CRASH (the guest died in it), MISSING "
      "(never reported), SPLAT (a kernel splat while it ran).")
    w("")
    if args.times and os.path.exists(args.times):
        w("| step | seconds |")
        w("|---|---|")
        for line in judge.read_lines(args.times):
            label, _, secs = line.rpartition(" ")
            w(f"| {label} | {secs} |")
        w("")
    w("| cases | count |")
    w("|---|---|")
    w(f"| pass on both | {len(both_ok)} |")
    w(f"| skipped on both | {len(both_skip)} |")
    w(f"| skipped on {ref_name}, pass on {oth_name} | {len(other)} |")
    w(f"| fail on both (cause below) | {len(both_fail)} |")
    w(f"| fail on {ref_name}, pass on {oth_name} | {len(only_oth)} |")
    w(f"| pass on {ref_name}, fail on {oth_name}, flaky on {ref_name} in reruns | {len(flaky)} |")
    w(f"| pass on {ref_name}, failed once on {oth_name}, not reproduced in reruns | "
      f"{len(unreproduced)} |")
    w(f"| **pass on {ref_name}, fail on {oth_name} (regressions)** | **{len(regress)}** |")
    w(f"| denylist lines (all must fail on {ref_name}) | {len(denylist)}, stale: {len(stale)} |")
    w(f"| all cases | {len(order)} |")
    w("")
    w(f"Verdict: {'PASS' if not regress and not stale else 'FAIL'}")
    w("")

    def case_row(case):
        r, rd = ref.get(case, ("MISSING", []))
        o, od = oth.get(case, ("MISSING", []))
        return r, rd, o, od

    w("## Regressions")
    w("")
    if not regress:
        w("None.")
    for case in regress:
        r, _, o, od = case_row(case)
        w(f"- `{md_escape(case)}`: {r} on {ref_name}, {o} on {oth_name}: "
          f"{md_escape(first_cause(od))}")
    w("")
    w(f"## Flaky on {ref_name}")
    w("")
    w(f"Passed on {ref_name} and failed on {oth_name} in the full run, then failed on "
      f"{ref_name} itself when run again: not a regression.")
    w("")
    for case, bad, n, obad, on in flaky:
        w(f"- `{md_escape(case)}`: reruns failed {bad} of {n} on {ref_name}, "
          f"{obad} of {on} on {oth_name}")
    if not flaky:
        w("None.")
    w("")
    w(f"## Failed once on {oth_name}, not reproduced")
    w("")
    w(f"Passed on {ref_name}, failed on {oth_name} in the full run, then passed every "
      f"rerun on both kernels (at least {args.min_reruns} each): the failure is listed, "
      f"not counted as a regression.")
    w("")
    for case, pr, po in unreproduced:
        r, _, o, od = case_row(case)
        w(f"- `{md_escape(case)}`: {r} on {ref_name}, {o} on {oth_name} "
          f"({md_escape(first_cause(od))}); reruns passed {pr} on {ref_name}, "
          f"{po} on {oth_name}")
    if not unreproduced:
        w("None.")
    w("")
    w("## Failing on both, and why")
    w("")
    w(f"Cause: the denylist's reason (tests/full-denylist), or the first line of the "
      f"{ref_name} log that says why.")
    w("")
    w(f"| case | {ref_name} | {oth_name} | cause |")
    w("|---|---|---|---|")
    for case in both_fail:
        r, rd, o, _ = case_row(case)
        d = denied(case, denylist)
        cause = f"denylist ({d[0]}): {d[1]}" if d else first_cause(rd)
        w(f"| `{md_escape(case)}` | {r} | {o} | {md_escape(cause)} |")
    w("")
    w(f"## Failing on {ref_name}, passing on {oth_name}")
    w("")
    for case in only_oth:
        r, rd, o, _ = case_row(case)
        w(f"- `{md_escape(case)}`: {r} / {o}: {md_escape(first_cause(rd))}")
    if not only_oth:
        w("None.")
    w("")
    w("## Denylist (tests/full-denylist)")
    w("")
    for p, why in denylist:
        mark = " **stale: passes on " + ref_name + "**" if (p, why) in stale else ""
        w(f"- `{p}`: {why}{mark}")
    if not denylist:
        w("Empty.")
    w("")
    w("## Kernel splats, by the suite that was running")
    w("")
    for name, splats in ((ref_name, ref_splats), (oth_name, oth_splats)):
        for suite, lines in sorted(splats.items()):
            w(f"- {name}, {suite}: {md_escape(lines[0])} ({len(lines)} lines)")
    if not ref_splats and not oth_splats:
        w("None.")
    w("")
    w("## Every case")
    w("")
    w(f"| case | {ref_name} | {oth_name} |")
    w("|---|---|---|")
    tsv = [f"case\t{ref_name}\t{oth_name}"]
    for case in order:
        r, _, o, _ = case_row(case)
        w(f"| `{md_escape(case)}` | {r} | {o} |")
        tsv.append(f"{case}\t{r}\t{o}")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")
    with open(re.sub(r"\.md$", "", args.out) + ".tsv", "w") as f:
        f.write("\n".join(tsv) + "\n")

    print(f"parity: {len(both_ok)} pass on both, {len(both_skip)} skipped on both, "
          f"{len(both_fail)} fail on both, {len(only_oth)} pass only on {oth_name}, "
          f"{len(flaky)} flaky on {ref_name}, "
          f"{len(unreproduced)} not reproduced on {oth_name}, "
          f"{len(regress)} regressions, {len(stale)} stale denylist lines; "
          f"table: {args.out}")
    for case in regress:
        r, _, o, od = case_row(case)
        print(f"  REGRESSION {case}: {r} -> {o}: {first_cause(od)}")
    for case, pr, po in unreproduced:
        print(f"  NOT REPRODUCED {case}: failed once on {oth_name}, then passed "
              f"{pr} reruns on {ref_name} and {po} on {oth_name}")
    for p, _ in stale:
        print(f"  STALE denylist line {p}: passes on {ref_name}")
    return 0 if not regress and not stale else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
