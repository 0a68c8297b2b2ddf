#!/usr/bin/env python3
"""The statistics of make bench: fold the guest's rounds, compare kernels,
decide the targets, measure growth, and write the report and chart inputs.

bench.sh boots the kernels and collects what bench/kptr_bench prints, one
CSV line per round of a case:

    kernel,case,unit,round,value

into BENCH_DIR/MODE/pass-N/KERNEL.csv, MODE being "icount" (instruction
counts: the guest TSC ticks once per instruction) or "time" (TCG
wall-clock, noisy). This program reads them all and writes:

    BENCH_DIR/results.csv   mode,kernel,case,unit,median,min,max,rounds,
                            passes,pass_spread (one row per mode, kernel, case)
    BENCH_DIR/report.md     determinism, targets met / not met, the
                            comparisons, the scale table
    BENCH_DIR/plots/*.dat, *.gp   gnuplot inputs (bench.sh runs gnuplot)

    bench_stats.py BENCH_DIR --kernels "patched upstream ..." [--target
        patched] [--ref upstream] [--peer upstream612]

Statistics: a case's figure in one pass is the median of its rounds; over
passes, the median of the pass medians; min and max are over every round.
The pass spread, (max - min) / median of the pass medians, is the
determinism evidence in instruction mode.
"""

import argparse
import csv
import math
import os
import re
import statistics
import sys
from dataclasses import dataclass, field

MODES = ("icount", "time")
MODE_TITLE = {"icount": "instructions (deterministic)",
              "time": "TCG wall-clock ns (noisy)"}

# Cases of maps without special fields (ratio to upstream 6.1 <= 1.000)
NOSPECIAL_RE = re.compile(
    r"^(array|pcpu_array|hash|hash_np|lru|pcpu_hash|lru_pcpu|sk_storage)"
    r"_(update|lookup|delete)_k0$")
# Cases of maps with kptr fields (ratio to upstream 6.1 <= 1.02)
KPTR_MAP_RE = re.compile(
    r"^(array|pcpu_array|hash|hash_np|lru)_(update|lookup|delete)_(k1|k2|k4|k8|ref1|mix)$")
NOSPECIAL_MAX = 1.000
KPTR_MAP_MAX = 1.02
XCHG_MAX = 1.05
CACHED_MIN = 10.0
# (name, cached read case, acquire + read + release case)
CACHED_PAIRS = (("test object", "cached_load", "acquire_release"),
                ("task", "task_cached_load", "task_acquire_release"),
                ("cgroup", "cgroup_cached_load", "cgroup_acquire_release"))
VERIFIER_CASES = ("load_progs", "load_selftest", "vinsns_progs", "vinsns_selftest")

LINE_RE = re.compile(r"^[A-Za-z0-9_.-]+,[a-z0-9_]+,[a-z]+,[0-9]+,-?[0-9.]+(e[-+]?[0-9]+)?$")


@dataclass
class Stat:
    """One mode, kernel and case, all passes folded."""
    unit: str
    median: float
    lo: float
    hi: float
    rounds: int
    pass_medians: list = field(default_factory=list)

    @property
    def spread(self):
        """(max - min) / median of the pass medians; 0 with one pass."""
        if len(self.pass_medians) < 2 or self.median == 0:
            return 0.0
        return (max(self.pass_medians) - min(self.pass_medians)) / abs(self.median)


def parse_lines(lines, source="?"):
    """The guest's CSV lines -> [(kernel, case, unit, round, value)].
    Anything else (a stray message) is an error: a line the benchmark
    printed half is a broken run, not one to fold silently."""
    rows = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        if not LINE_RE.match(line):
            raise ValueError(f"{source}:{n}: not a result line: {line!r}")
        k, c, u, r, v = line.split(",")
        rows.append((k, c, u, int(r), float(v)))
    return rows


def load_dir(bench_dir):
    """{mode: {pass: [(kernel, case, unit, round, value)]}} from BENCH_DIR."""
    data = {}
    for mode in MODES:
        mdir = os.path.join(bench_dir, mode)
        if not os.path.isdir(mdir):
            continue
        for pdir in sorted(os.listdir(mdir)):
            m = re.match(r"^pass-([0-9]+)$", pdir)
            if not m:
                continue
            rows = []
            for f in sorted(os.listdir(os.path.join(mdir, pdir))):
                if f.endswith(".csv"):
                    path = os.path.join(mdir, pdir, f)
                    with open(path) as fh:
                        rows += parse_lines(fh, path)
            data.setdefault(mode, {})[int(m.group(1))] = rows
    return data


def fold(passes):
    """{pass: rows} -> {(kernel, case): Stat}"""
    per = {}
    for p, rows in sorted(passes.items()):
        for k, c, u, _r, v in rows:
            per.setdefault((k, c), {"unit": u, "passes": {}})["passes"].setdefault(p, []).append(v)
    out = {}
    for key, d in per.items():
        allv = [v for vs in d["passes"].values() for v in vs]
        meds = [statistics.median(vs) for _p, vs in sorted(d["passes"].items())]
        out[key] = Stat(d["unit"], statistics.median(meds), min(allv), max(allv),
                        len(allv), meds)
    return out


def ratio(stats, kernel, ref, case):
    a, b = stats.get((kernel, case)), stats.get((ref, case))
    if not a or not b or b.median <= 0:
        return None
    return a.median / b.median


def determinism(stats):
    """Over the cases measured in two or more passes: how many agree
    exactly, the largest pass spread and its case, the count within 0.1 %.
    Per-run figures near zero (below 1 unit: the loop) are left out, as a
    relative spread of nothing means nothing."""
    spreads = [(s.spread, k, c) for (k, c), s in stats.items()
               if len(s.pass_medians) >= 2 and abs(s.median) >= 1]
    if not spreads:
        return None
    spreads.sort(reverse=True)
    return {
        "cases": len(spreads),
        "identical": sum(1 for s, _k, _c in spreads if s == 0),
        "within_0.1%": sum(1 for s, _k, _c in spreads if s <= 0.001),
        "worst": spreads[0],
        "median_spread": statistics.median(s for s, _k, _c in spreads),
    }


@dataclass
class Target:
    name: str
    value: str
    met: object  # True, False or None (not decided: a case is missing)
    detail: str = ""


def verdict(met):
    return {True: "**met**", False: "**not met**", None: "not decided"}[met]


def decide_targets(stats, time_stats, target, ref):
    """The targets of issue 17, decided on instruction counts (stats);
    the xchg target also in time mode (time_stats)."""
    out = []
    cases = sorted({c for (_k, c) in stats})

    def ratio_target(name, regex, limit):
        rows = [(c, ratio(stats, target, ref, c)) for c in cases if regex.match(c)]
        rows = [(c, r) for c, r in rows if r is not None]
        if not rows:
            out.append(Target(name, "-", None, "no case measured on both kernels"))
            return []
        worst = max(rows, key=lambda cr: cr[1])
        bad = [f"{c} {r:.4f}" for c, r in rows if r > limit]
        detail = f"worst {worst[0]} {worst[1]:.4f} of {len(rows)} cases"
        if bad:
            detail += "; over: " + ", ".join(bad)
        out.append(Target(name, f"{worst[1]:.4f}", worst[1] <= limit, detail))
        return rows

    ratio_target(f"maps without special fields, {target}/{ref} <= {NOSPECIAL_MAX:.3f}",
                             NOSPECIAL_RE, NOSPECIAL_MAX)
    kptr = ratio_target(f"maps with kptr fields, {target}/{ref} <= {KPTR_MAP_MAX}",
                        KPTR_MAP_RE, KPTR_MAP_MAX)
    # the same, per number of fields and for the mixed value
    for v in ("k1", "k2", "k4", "k8", "ref1", "mix"):
        rows = [(c, r) for c, r in kptr if c.endswith("_" + v)]
        if rows:
            worst = max(rows, key=lambda cr: cr[1])
            out.append(Target(f"  value {v}: worst of {len(rows)} cases <= {KPTR_MAP_MAX}",
                              f"{worst[1]:.4f}", worst[1] <= KPTR_MAP_MAX, worst[0]))

    for mode, st in (("instructions", stats), ("time", time_stats)):
        if not st:
            continue
        a, b = st.get((target, "xchg_kptr")), st.get((target, "xchg_atomic"))
        if a and b and b.median > 0:
            x = a.median / b.median
            out.append(Target(f"inlined bpf_kptr_xchg() <= {XCHG_MAX}x bare BPF_XCHG ({mode})",
                              f"{x:.3f}x", x <= XCHG_MAX,
                              f"{a.median:.2f} vs {b.median:.2f} {a.unit}/op"))
        else:
            out.append(Target(f"inlined bpf_kptr_xchg() <= {XCHG_MAX}x bare BPF_XCHG ({mode})",
                              "-", None, "case missing"))

    for mode, st in (("instructions", stats), ("time", time_stats)):
        if not st:
            continue
        for what, cached, acq in CACHED_PAIRS:
            a, b = st.get((target, acq)), st.get((target, cached))
            name = (f"cached {what} kptr read >= {CACHED_MIN:g}x cheaper than "
                    f"acquire + read + release ({mode})")
            if not a or not b:
                out.append(Target(name, "-", None, "case missing"))
                continue
            if b.median <= 0:
                out.append(Target(name, "inf", True, f"{a.median:.2f} vs {b.median:.2f}"))
                continue
            x = a.median / b.median
            out.append(Target(name, f"{x:.1f}x", x >= CACHED_MIN,
                              f"{a.median:.2f} vs {b.median:.2f} {a.unit}/op"))

    for c in VERIFIER_CASES:
        r = ratio(stats, target, ref, c)
        name = f"verifier {c}, {target}/{ref} <= 1"
        if r is None:
            out.append(Target(name, "-", None, "case missing"))
            continue
        a, b = stats[(target, c)], stats[(ref, c)]
        out.append(Target(name, f"{r:.4f}", r <= 1.0,
                          f"{a.median:.0f} vs {b.median:.0f} {a.unit}"))
    return out


# The scale table: series of (x, case) per quantity.
def scale_series(stats, kernel):
    """{title: (xlabel, [(x, case, median)])} for one kernel."""
    series = {}

    def add(title, xlabel, points):
        pts = [(x, c, stats[(kernel, c)].median) for x, c in points if (kernel, c) in stats]
        if len(pts) >= 2:
            series[title] = (xlabel, pts)

    for op in ("array_update", "hash_update", "hash_delete", "array_lookup", "hash_lookup"):
        add(f"{op} vs kptr fields", "kptr fields", [(n, f"{op}_k{n}") for n in range(9)])
    for m in ("array", "hash"):
        add(f"{m}_update vs value size", "value bytes",
            [(n, f"{m}_update_v{n}") for n in (8, 64, 512, 4096)])
    for op in ("lookup", "update"):
        add(f"hash {op} vs map size", "elements",
            [(n, f"hsize_{op}_{name}") for n, name in
             ((1, "1"), (1000, "1k"), (65536, "64k"), (1000000, "1m"))])
    add("map free vs references held", "references",
        [(n, f"map_free_refs_{n}") for n in (1, 1000, 65536, 1000000)])
    add("verifier load vs kptr operations", "kptr operations",
        [(n, f"verifier_ops_{n}") for n in (1, 10, 100, 1000)])
    add("verified_insns vs kptr operations", "kptr operations",
        [(n, f"vinsns_ops_{n}") for n in (1, 10, 100, 1000)])
    return series


def linear_fit(xs, ys, weights=None):
    """Least squares y = a + b x -> (a, b, r2); weights per point."""
    w = weights or [1.0] * len(xs)
    sw = sum(w)
    mx = sum(wi * x for wi, x in zip(w, xs)) / sw
    my = sum(wi * y for wi, y in zip(w, ys)) / sw
    sxx = sum(wi * (x - mx) ** 2 for wi, x in zip(w, xs))
    if sxx == 0:
        return my, 0.0, 1.0
    b = sum(wi * (x - mx) * (y - my) for wi, x, y in zip(w, xs, ys)) / sxx
    a = my - b * mx
    ss_tot = sum(wi * (y - my) ** 2 for wi, y in zip(w, ys))
    ss_res = sum(wi * (y - a - b * x) ** 2 for wi, x, y in zip(w, xs, ys))
    return a, b, 1.0 if ss_tot == 0 else 1 - ss_res / ss_tot


def loglog_slope(xs, ys):
    """The exponent e of y ~ x^e over the points with x, y > 0, or None."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2 or pts[-1][0] - pts[0][0] < math.log(100):
        return None
    return linear_fit([p[0] for p in pts], [p[1] for p in pts])[1]


def fit_within(xs, ys):
    """a + b x weighted by 1/y^2 (a small y counts as much as a big one)
    and the largest relative miss of any point -> (a, b, worst)."""
    a, b, _r2 = linear_fit(xs, ys, [1 / y ** 2 for y in ys])
    return a, b, max(abs(y - a - b * x) / y for x, y in zip(xs, ys))


LINEAR_WITHIN = 0.02


def growth(xs, ys):
    """How y grows with x, in words, from the measured points:
    constant      y varies by 5 % or less, or, over two decades of x or
                  more, grows slower than x^0.05
    linear        a + b x fits every point within 2 %
    step, linear  the first point apart (a fixed cost that appears at the
                  first unit, e.g. the first kptr field), linear from there
    ~x^e          neither: e from a log-log fit over two decades or more;
                  ~linear for 0.9 <= e <= 1.1, superlinear above."""
    lo, hi = min(ys), max(ys)
    if hi <= 0 or (hi - lo) <= 0.05 * max(abs(hi), abs(lo)):
        return "constant"
    e = loglog_slope(xs, ys)
    if e is not None and e < 0.05:
        return f"constant (x^{e:.2f}, {lo:.4g} to {hi:.4g})"
    if lo > 0:
        a, b, worst = fit_within(xs, ys)
        if worst <= LINEAR_WITHIN:
            return f"linear: {a:.4g} + {b:.4g} per unit (every point within {100 * worst:.1f} %)"
        if len(xs) >= 4:
            a, b, worst = fit_within(xs[1:], ys[1:])
            if worst <= LINEAR_WITHIN:
                return (f"step, then linear: {ys[0]:.4g} at {xs[0]:g}, then {a:.4g} + "
                        f"{b:.4g} per unit (within {100 * worst:.1f} %)")
    if e is not None:
        if 0.9 <= e <= 1.1:
            return f"~linear (x^{e:.2f})"
        return f"~x^{e:.2f} (superlinear)" if e > 1 else f"~x^{e:.2f}"
    return "irregular"


def fmt(v, unit):
    if unit == "vinsns":
        return f"{v:.0f}"
    if abs(v) >= 1e5:
        return f"{v:.4g}"
    return f"{v:.2f}"


def cell(st):
    if st is None:
        return "-"
    if st.rounds > 1 and st.lo != st.hi:
        return f"{fmt(st.median, st.unit)} ({fmt(st.lo, st.unit)}-{fmt(st.hi, st.unit)})"
    return fmt(st.median, st.unit)


def results_table(stats, kernels, ref, target, peer):
    cases = []
    for (_k, c) in stats:
        if c not in cases:
            cases.append(c)
    cases.sort(key=case_order)
    ks = [k for k in kernels if any((k, c) in stats for c in cases)]
    cols = [(target, ref), (target, peer)] + [(k, ref) for k in ks if k not in (target, ref, peer)]
    cols = [(a, b) for a, b in cols if a in ks and b in ks and a != b]
    lines = ["| case | unit | " + " | ".join(ks) + " | " +
             " | ".join(f"{a}/{b}" for a, b in cols) + " |",
             "|---|---|" + "---:|" * (len(ks) + len(cols))]
    for c in cases:
        unit = next(stats[(k, c)].unit for k in ks if (k, c) in stats)
        row = [c, unit] + [cell(stats.get((k, c))) for k in ks]
        for a, b in cols:
            r = ratio(stats, a, b, c)
            # below 1 unit (the loop) a ratio says nothing
            ok = r is not None and stats[(b, c)].median >= 1
            row.append(f"{r:.4f}" if ok else "-")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def case_order(c):
    """Group the table: fixed cost, object cases, maps, loads, scale."""
    groups = [r"^(empty|loop)$", r"^(cached|acquire|xchg|contend)", r"^(task|cgroup|obj)_",
              r"_k0$", r"_(k[1-8]|ref1|mix)$", r"^(load|vinsns_(progs|selftest))",
              r"_v[0-9]+$", r"^hsize_", r"^map_free", r"^(verifier|vinsns)_ops"]
    for i, g in enumerate(groups):
        if re.search(g, c):
            return (i, natural(c))
    return (len(groups), natural(c))


def natural(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"([0-9]+)", s)]


def peer_lines(stats, target, peer, ref):
    """Our series against 6.12 where 6.12 is faster (ratio > 1.0)."""
    rows = []
    for (k, c), s in stats.items():
        if k != target or (peer, c) not in stats:
            continue
        r = ratio(stats, target, peer, c)
        if r is not None and stats[(peer, c)].median >= 1:
            rows.append((r, c))
    rows.sort(reverse=True)
    if not rows:
        return [f"No case measured on both {target} and {peer}."]
    faster = [(r, c) for r, c in rows if r > 1.0]
    gm = math.exp(sum(math.log(r) for r, _c in rows if r > 0) / len(rows))
    out = [f"{len(rows)} cases on both; geometric mean {target}/{peer} {gm:.3f}; "
           f"{peer} is faster in {len(faster)}:", ""]
    def vs_ref(c):
        r = ratio(stats, target, ref, c)
        return f"{r:.3f}" if r is not None else "-"

    out += [f"- {c}: {target}/{peer} {r:.3f} ({target}/{ref} {vs_ref(c)})"
            for r, c in faster[:40]]
    if len(faster) > 40:
        out.append(f"- ... and {len(faster) - 40} more (results.csv)")
    return out


def scale_lines(stats, kernels):
    out = ["| quantity | kernel | points (x: median) | growth |", "|---|---|---|---|"]
    for k in kernels:
        for title, (_xl, pts) in scale_series(stats, k).items():
            xs = [p[0] for p in pts]
            ys = [p[2] for p in pts]
            unit = stats[(k, pts[0][1])].unit
            pstr = ", ".join(f"{x:g}: {fmt(y, unit)}" for x, _c, y in pts)
            out.append(f"| {title} ({unit}) | {k} | {pstr} | {growth(xs, ys)} |")
    return out


def write_plots(stats, kernels, outdir, mode):
    """gnuplot data and one script per quantity; returns the script paths."""
    os.makedirs(outdir, exist_ok=True)
    by_title = {}
    for k in kernels:
        for title, (xl, pts) in scale_series(stats, k).items():
            by_title.setdefault(title, (xl, {}))[1][k] = pts
    scripts = []
    for title, (xl, per_kernel) in by_title.items():
        slug = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")
        plots = []
        for k, pts in per_kernel.items():
            dat = os.path.join(outdir, f"{mode}_{slug}_{k}.dat")
            with open(dat, "w") as fh:
                for x, _c, y in pts:
                    fh.write(f"{x} {y}\n")
            plots.append(f"'{dat}' using 1:2 with linespoints title '{k}'")
        unit = next(iter(stats[(k, pts[0][1])].unit for k, pts in per_kernel.items()))
        logx = max(x for pts in per_kernel.values() for x, _c, _y in pts) >= 1000
        gp = os.path.join(outdir, f"{mode}_{slug}.gp")
        with open(gp, "w") as fh:
            fh.write("set terminal pngcairo size 800,500 font ',10' noenhanced\n")
            fh.write(f"set output '{os.path.join(outdir, mode + '_' + slug + '.png')}'\n")
            fh.write(f"set title '{title} ({MODE_TITLE[mode]})'\n")
            fh.write(f"set xlabel '{xl}'\nset ylabel '{unit}'\nset grid\nset key top left\n")
            # points over decades: log-log, where x^e is a straight line
            if logx:
                fh.write("set logscale xy\n")
            else:
                fh.write("set yrange [0:*]\n")
            fh.write("plot " + ", ".join(plots) + "\n")
        scripts.append(gp)
    return scripts


def write_results_csv(path, all_stats):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["mode", "kernel", "case", "unit", "median", "min", "max",
                    "rounds", "passes", "pass_spread"])
        for mode, stats in all_stats.items():
            for (k, c), s in sorted(stats.items(), key=lambda kv: (kv[0][0], case_order(kv[0][1]))):
                w.writerow([mode, k, c, s.unit, f"{s.median:.3f}", f"{s.lo:.3f}",
                            f"{s.hi:.3f}", s.rounds, len(s.pass_medians), f"{s.spread:.6f}"])


def report(bench_dir, kernels, target, ref, peer):
    data = load_dir(bench_dir)
    if not data:
        raise SystemExit(f"bench_stats: no results under {bench_dir}/{{icount,time}}/pass-N")
    all_stats = {mode: fold(passes) for mode, passes in data.items()}
    write_results_csv(os.path.join(bench_dir, "results.csv"), all_stats)
    ic, tm = all_stats.get("icount", {}), all_stats.get("time", {})
    main = ic or tm
    md = []
    targets = decide_targets(main, tm if ic else None, target, ref)
    md += [f"### Targets ({target} against {ref}, "
           f"{'instruction counts' if ic else 'wall-clock: noisy'})", "",
           "| target | value | verdict | detail |", "|---|---:|---|---|"]
    md += [f"| {t.name} | {t.value} | {verdict(t.met)} | {t.detail} |" for t in targets]
    decided = [t for t in targets if not t.name.startswith("  ")]
    md += ["", f"{sum(t.met is True for t in decided)} of {len(decided)} targets met, "
           f"{sum(t.met is False for t in decided)} not met, "
           f"{sum(t.met is None for t in decided)} not decided.", ""]
    for mode, stats in all_stats.items():
        d = determinism(stats)
        npasses = len(data[mode])
        md += [f"### Determinism ({mode}, {npasses} passes)", ""]
        if d is None:
            md += ["One pass only: nothing to compare.", ""]
        else:
            s, k, c = d["worst"]
            md += [f"{d['cases']} kernel-case figures measured in every pass: "
                   f"{d['identical']} identical, {d['within_0.1%']} within 0.1 %; "
                   f"median spread {100 * d['median_spread']:.4f} %, largest "
                   f"{100 * s:.4f} % ({k} {c}).", ""]
    for mode, stats in all_stats.items():
        md += [f"### Results: {MODE_TITLE[mode]}", "",
               "Median of the pass medians (min-max over all rounds); per op "
               "unless the case is a load (per load of the set) or vinsns.", ""]
        md += results_table(stats, kernels, ref, target, peer) + [""]
    if peer in kernels:
        md += [f"### {target} against {peer} ({'instructions' if ic else 'time'})", ""]
        md += peer_lines(main, target, peer, ref) + [""]
    md += ["### Scale (instructions)" if ic else "### Scale (time)", ""]
    md += scale_lines(main, [k for k in kernels if k in (target, ref, peer)]) + [""]
    with open(os.path.join(bench_dir, "report.md"), "w") as fh:
        fh.write("\n".join(md))
    scripts = []
    for mode, stats in all_stats.items():
        scripts += write_plots(stats, [k for k in kernels if k in (target, ref, peer)],
                               os.path.join(bench_dir, "plots"), mode)
    with open(os.path.join(bench_dir, "plots", "scripts"), "w") as fh:
        fh.write("\n".join(scripts) + "\n")
    return md, targets


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench_dir")
    ap.add_argument("--kernels", required=True, help="space separated, table order")
    ap.add_argument("--target", default="patched")
    ap.add_argument("--ref", default="upstream")
    ap.add_argument("--peer", default="upstream612")
    a = ap.parse_args(argv)
    kernels = a.kernels.split()
    md, _t = report(a.bench_dir, kernels, a.target, a.ref, a.peer)
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
