#!/usr/bin/env python3
"""Tests of trace_summary.py on small hand-made traces (run by ctest as bench_trace_summary)."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_summary  # noqa: E402


def kernel(name, ts, dur):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur}


class SummariseTest(unittest.TestCase):
    def test_busy_idle_families_and_gaps(self):
        events = [kernel("sm90_xmma_gemm_bf16", 0, 10), kernel("vectorized_elementwise_kernel", 5, 10),
                  kernel("flash_fwd_kernel", 30, 10)]
        s = trace_summary.summarise(events, steps=1)
        self.assertEqual(s["wall_us"], 40)
        self.assertEqual(s["busy_us"], 25)  # 0-15 and 30-40: overlaps count once
        self.assertEqual(s["families"]["matmul"], [1, 10.0])
        self.assertEqual(s["families"]["attention"], [1, 10.0])
        self.assertEqual(dict(s["gaps"]), {"flash_fwd_kernel": [1, 15.0]})
        self.assertEqual(s["profiler_idle_us"], 0)

    def test_idle_inside_profiler_overhead_is_reported_apart(self):
        events = [kernel("gemm", 0, 10), kernel("gemm", 50, 10),
                  {"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "ts": 20, "dur": 20}]
        s = trace_summary.summarise(events, steps=1)
        self.assertEqual(s["wall_us"] - s["busy_us"], 40)
        self.assertEqual(s["profiler_idle_us"], 20)

    def test_a_trace_without_gpu_work_is_an_error(self):
        with self.assertRaises(ValueError):
            trace_summary.summarise([{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0,
                                      "dur": 5}], steps=1)

    def test_command_reads_gzip_and_rejects_broken_files(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trace_summary.py")
        with tempfile.TemporaryDirectory() as d:
            good = os.path.join(d, "t.json.gz")
            with gzip.open(good, "wt") as f:
                json.dump({"traceEvents": [kernel("gemm", 0, 10), kernel("gemm", 20, 10)]}, f)
            out = subprocess.run([sys.executable, script, good, "--steps", "1", "--csv",
                                  os.path.join(d, "o.csv")], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("kernels busy 0.02 ms", out.stdout)
            broken = os.path.join(d, "broken.json")
            with open(broken, "wb") as f:
                f.write(b"\x00\x01 not json")
            for path in (broken, os.path.join(d, "missing.json"), d):
                out = subprocess.run([sys.executable, script, path], capture_output=True, text=True)
                self.assertEqual(out.returncode, 1, path)
                self.assertIn("trace_summary:", out.stderr)


if __name__ == "__main__":
    unittest.main()
