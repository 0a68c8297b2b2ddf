#!/usr/bin/env python3
"""Judge make check-clients: the TAP that tests/clients/run-clients.sh
printed on each kernel, and, with two kernels, whether the checks' outputs
are the same on both.

    clients.py [--differences FILE] KERNEL=RUN_DIR [KERNEL=RUN_DIR]

RUN_DIR holds the guest's clients.log, clients.rc (and clients.timeout,
guest-failed when the run went wrong). A kernel passes when the TAP has
its plan line, one result per number from 1 to the plan, no "not ok", the
script's exit status agrees, and the guest reported without a splat. Two
kernels must print the same normalized output for every check (ids and
times are already placeholders); a check whose output may differ, or that
runs on one kernel only, is named in FILE with why ("CHECK<TAB>reason"),
and its difference is still shown.
Exit status 0 when all of that holds. Writes nothing: the verdict and the
differences go to stdout.
"""
import difflib
import os
import re
import sys

RESULT = re.compile(r"^(not ok|ok) (\d+) - (\S+)(?: \((.*)\))?$")
PLAN = re.compile(r"^1\.\.(\d+)$")


def parse_tap(lines):
    """[(name, ok, why, output lines)], plan or None, problems."""
    checks, plan, problems, output = [], None, [], []
    for line in lines:
        m = RESULT.match(line)
        if m:
            number = int(m.group(2))
            if number != len(checks) + 1:
                problems.append(f"result {number} after {len(checks)} results")
            checks.append((m.group(3), m.group(1) == "ok", m.group(4) or "", output))
            output = []
        elif PLAN.match(line):
            plan = int(PLAN.match(line).group(1))
        elif line.startswith("# "):
            output.append(line[2:])
        elif line == "#":
            output.append("")
        elif line.strip():
            problems.append(f"line outside TAP: {line[:100]}")
    if plan is None:
        problems.append("no plan line (1..N): the script did not finish")
    elif plan != len(checks):
        problems.append(f"plan says {plan} checks, {len(checks)} results")
    return checks, plan, problems


def read(path, default=None):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return default


def judge_kernel(name, run_dir):
    """Print the kernel's results; return (checks, ok)."""
    log = read(os.path.join(run_dir, "clients.log"))
    if log is None:
        print(f"{name}: no clients.log: the guest never ran the checks")
        return [], False
    checks, _, problems = parse_tap(log.splitlines())
    rc = (read(os.path.join(run_dir, "clients.rc"), "") or "").strip()
    failed = [c for c in checks if not c[1]]
    if os.path.exists(os.path.join(run_dir, "clients.timeout")):
        problems.append("the checks hit their time limit")
    if rc != ("0" if not failed else "1"):
        problems.append(f"exit status {rc or 'none'} with {len(failed)} failed checks")
    if os.path.exists(os.path.join(run_dir, "guest-failed")):
        problems.append("the guest run failed (a splat or no verdict: see its console.log)")
    for check, _, why, output in failed:
        print(f"{name}: not ok {check}: {why}")
        for line in output[-15:]:
            print(f"    {line}")
    for p in problems:
        print(f"{name}: {p}")
    print(f"{name}: {len(checks) - len(failed)} passed, {len(failed)} failed")
    return checks, not failed and not problems


def read_differences(path):
    allowed = {}
    for line in (read(path, "") or "").splitlines():
        if line.strip() and not line.startswith("#"):
            check, _, why = line.partition("\t")
            allowed[check.strip()] = why.strip()
    return allowed


def compare(kernels, allowed):
    """Print where the two kernels' outputs differ; False if unexplained."""
    (a, a_checks), (b, b_checks) = kernels
    outs_a = {c[0]: c[3] for c in a_checks}
    outs_b = {c[0]: c[3] for c in b_checks}
    ok, same = True, 0
    for check in [c[0] for c in a_checks] + [c for c in outs_b if c not in outs_a]:
        if check not in outs_a or check not in outs_b:
            why = allowed.get(check)
            print(f"{check}: only on {a if check in outs_a else b}"
                  + (f" (explained: {why})" if why else ""))
            ok = ok and bool(why)
            continue
        if outs_a[check] == outs_b[check]:
            same += 1
            continue
        why = allowed.get(check)
        print(f"{check}: output differs" + (f" (explained: {why})" if why else ""))
        for line in difflib.unified_diff(outs_a[check], outs_b[check], a, b, lineterm=""):
            print(f"    {line}")
        ok = ok and bool(why)
    for check in allowed:
        if check not in outs_a and check not in outs_b:
            print(f"differences names {check}, which is no check")
            ok = False
    print(f"{a} vs {b}: {same} checks with the same output")
    return ok


def main(argv):
    args = list(argv)
    allowed = {}
    if args[:1] == ["--differences"]:
        allowed = read_differences(args[1])
        args = args[2:]
    if not 1 <= len(args) <= 2 or not all("=" in a for a in args):
        sys.exit(__doc__)
    kernels, ok = [], True
    for arg in args:
        name, run_dir = arg.split("=", 1)
        checks, kernel_ok = judge_kernel(name, run_dir)
        kernels.append((name, checks))
        ok = ok and kernel_ok
    if len(kernels) == 2:
        ok = compare(kernels, allowed) and ok
    print("clients: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
