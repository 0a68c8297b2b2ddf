#!/usr/bin/env python3
"""Tests of scripts/bench_stats.py, host only, a second or two:
    python3 -m unittest discover -s tests/bench     (tests/bench/run-tests.sh)
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import bench_stats as bs  # noqa: E402


def rows(kernel, case, values, unit="ins"):
    return [(kernel, case, unit, i, float(v)) for i, v in enumerate(values)]


def write_pass(root, mode, p, kernel, lines):
    d = os.path.join(root, mode, f"pass-{p}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{kernel}.csv"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


class ParseTest(unittest.TestCase):
    def test_parses_result_lines(self):
        got = bs.parse_lines(["patched,hash_update_k0,ins,3,398.328\n", "\n"])
        self.assertEqual(got, [("patched", "hash_update_k0", "ins", 3, 398.328)])

    def test_refuses_anything_else(self):
        with self.assertRaises(ValueError):
            bs.parse_lines(["patched,hash_update_k0,ins,3,398.3", "kptr_bench: oops"])
        with self.assertRaises(ValueError):
            bs.parse_lines(["patched,hash_update_k0,ins,3"])  # cut short

    def test_kernel_names_with_dots(self):
        got = bs.parse_lines(["6.1.0-kptr,empty,ns,0,57"])
        self.assertEqual(got[0][0], "6.1.0-kptr")


class FoldTest(unittest.TestCase):
    def test_median_of_pass_medians_and_range_over_rounds(self):
        passes = {1: rows("p", "c", [10, 11, 12, 100]),   # median 11.5
                  2: rows("p", "c", [9, 10, 11]),          # median 10
                  3: rows("p", "c", [13, 14, 15])}         # median 14
        s = bs.fold(passes)[("p", "c")]
        self.assertEqual(s.median, 11.5)
        self.assertEqual((s.lo, s.hi, s.rounds), (9, 100, 10))
        self.assertEqual(s.pass_medians, [11.5, 10, 14])
        self.assertAlmostEqual(s.spread, (14 - 10) / 11.5)

    def test_one_pass_has_no_spread(self):
        s = bs.fold({1: rows("p", "c", [5, 6, 7])})[("p", "c")]
        self.assertEqual(s.spread, 0.0)


class DeterminismTest(unittest.TestCase):
    def test_counts_identical_and_within_a_thousandth(self):
        stats = bs.fold({
            1: rows("p", "a", [100]) + rows("p", "b", [1000]) + rows("p", "loop", [0.1]),
            2: rows("p", "a", [100]) + rows("p", "b", [1000.5]) + rows("p", "loop", [0.3]),
        })
        d = bs.determinism(stats)
        # the loop (below 1 unit) is left out
        self.assertEqual(d["cases"], 2)
        self.assertEqual(d["identical"], 1)
        self.assertEqual(d["within_0.1%"], 2)
        self.assertEqual(d["worst"][2], "b")

    def test_none_with_one_pass(self):
        self.assertIsNone(bs.determinism(bs.fold({1: rows("p", "a", [1, 2])})))


def stats_of(table):
    """{(kernel, case): value} -> folded stats of one pass, one round."""
    passes = {1: []}
    for (k, c), v in table.items():
        passes[1] += rows(k, c, [v])
    return bs.fold(passes)


class TargetTest(unittest.TestCase):
    def base(self):
        t = {}
        for k in ("patched", "upstream"):
            t[(k, "hash_update_k0")] = 398.0
            t[(k, "array_lookup_k0")] = 18.0
            t[(k, "hash_update_k1")] = 475.0
            t[(k, "load_progs")] = 1000.0
            t[(k, "vinsns_progs")] = 500.0
        t[("patched", "xchg_kptr")] = 11.5
        t[("patched", "xchg_atomic")] = 11.0
        t[("patched", "cached_load")] = 4.0
        t[("patched", "acquire_release")] = 42.0
        return t

    def find(self, targets, prefix):
        return next(t for t in targets if t.name.startswith(prefix))

    def test_equal_counts_meet_the_no_special_fields_target(self):
        ts = bs.decide_targets(stats_of(self.base()), None, "patched", "upstream")
        self.assertIs(self.find(ts, "maps without special fields").met, True)

    def test_one_instruction_more_misses_it(self):
        t = self.base()
        t[("patched", "hash_update_k0")] = 399.0
        ts = bs.decide_targets(stats_of(t), None, "patched", "upstream")
        nos = self.find(ts, "maps without special fields")
        self.assertIs(nos.met, False)
        self.assertIn("hash_update_k0", nos.detail)

    def test_kptr_maps_allow_two_percent(self):
        t = self.base()
        t[("patched", "hash_update_k1")] = 475.0 * 1.02
        ts = bs.decide_targets(stats_of(t), None, "patched", "upstream")
        self.assertIs(self.find(ts, "maps with kptr fields").met, True)
        self.assertIs(self.find(ts, "  value k1").met, True)
        t[("patched", "hash_update_k1")] = 475.0 * 1.021
        ts = bs.decide_targets(stats_of(t), None, "patched", "upstream")
        self.assertIs(self.find(ts, "maps with kptr fields").met, False)

    def test_xchg_and_cached_targets(self):
        ts = bs.decide_targets(stats_of(self.base()), None, "patched", "upstream")
        x = self.find(ts, "inlined bpf_kptr_xchg() <= 1.05x bare BPF_XCHG (instructions)")
        self.assertIs(x.met, True)          # 11.5 / 11 = 1.045
        c = self.find(ts, "cached test object")
        self.assertIs(c.met, True)          # 42 / 4 = 10.5
        task = self.find(ts, "cached task")
        self.assertIsNone(task.met)         # not measured: not decided

    def test_time_mode_xchg_is_decided_too(self):
        time = stats_of({("patched", "xchg_kptr"): 30.0, ("patched", "xchg_atomic"): 20.0})
        ts = bs.decide_targets(stats_of(self.base()), time, "patched", "upstream")
        self.assertIs(self.find(ts, "inlined bpf_kptr_xchg() <= 1.05x bare BPF_XCHG (time)").met,
                      False)

    def test_verifier_no_worse(self):
        t = self.base()
        t[("patched", "vinsns_progs")] = 501.0
        ts = bs.decide_targets(stats_of(t), None, "patched", "upstream")
        self.assertIs(self.find(ts, "verifier load_progs").met, True)
        self.assertIs(self.find(ts, "verifier vinsns_progs").met, False)
        self.assertIsNone(self.find(ts, "verifier load_selftest").met)


class GrowthTest(unittest.TestCase):
    def test_constant(self):
        self.assertTrue(bs.growth([1, 1000, 65536, 1000000], [143, 154, 145, 154]).startswith("constant"))
        self.assertEqual(bs.growth([0, 4, 8], [18.266, 18.266, 18.3]), "constant")

    def test_linear_with_slope(self):
        g = bs.growth(list(range(9)), [139 + 24 * n for n in range(9)])
        self.assertTrue(g.startswith("linear: 139 + 24 per unit"), g)

    def test_step_then_linear(self):
        g = bs.growth(list(range(9)), [139.3] + [174.3 + 24 * n for n in range(1, 9)])
        self.assertTrue(g.startswith("step, then linear: 139.3 at 0, then 174.3 + 24 per unit"), g)

    def test_near_linear_exponent_is_not_superlinear(self):
        g = bs.growth([1, 10, 100, 1000], [100, 800, 12000, 95000])
        self.assertTrue(g.startswith("~linear (x^1.0"), g)

    def test_superlinear_exponent(self):
        g = bs.growth([1, 10, 100, 1000], [1e5, 6e5, 1.3e7, 9.5e8])
        self.assertTrue(g.startswith("~x^1.33 (superlinear)"), g)

    def test_linear_fit(self):
        a, b, r2 = bs.linear_fit([0, 1, 2], [1, 3, 5])
        self.assertAlmostEqual(a, 1)
        self.assertAlmostEqual(b, 2)
        self.assertAlmostEqual(r2, 1)


class ReportTest(unittest.TestCase):
    def test_report_from_a_bench_dir(self):
        with tempfile.TemporaryDirectory() as d:
            for p in (1, 2):
                for k, extra in (("patched", 0), ("upstream", 0), ("upstream612", -20)):
                    lines = [f"{k},empty,ins,0,57", f"{k},hash_update_k0,ins,0,{398 + extra}",
                             f"{k},xchg_kptr,ins,0,16.375", f"{k},xchg_atomic,ins,0,11.281"]
                    lines += [f"{k},array_update_k{n},ins,0,{139 + 24 * n}" for n in range(9)]
                    write_pass(d, "icount", p, k, lines)
            write_pass(d, "time", 1, "patched", ["patched,xchg_kptr,ns,0,23", "patched,xchg_atomic,ns,0,23"])
            md, targets = bs.report(d, ["patched", "upstream", "upstream612"],
                                    "patched", "upstream", "upstream612")
            text = "\n".join(md)
            self.assertIn("identical", text)
            self.assertIn("| hash_update_k0 | ins |", text)
            self.assertIn("upstream612 is faster in 1", text)
            self.assertIn("array_update vs kptr fields", text)
            self.assertTrue(os.path.exists(os.path.join(d, "results.csv")))
            with open(os.path.join(d, "plots", "scripts")) as fh:
                gps = fh.read().split()
            self.assertTrue(gps and all(os.path.exists(g) for g in gps))
            x = [t for t in targets if "BPF_XCHG (time)" in t.name][0]
            self.assertIs(x.met, True)

    def test_empty_dir_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(SystemExit):
                bs.report(d, ["patched"], "patched", "upstream", "upstream612")


if __name__ == "__main__":
    unittest.main()
