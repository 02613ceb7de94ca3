#!/usr/bin/env python3
"""Where a training step's GPU time goes, from a padless_bench_e2e --trace_dir trace.

Sums the kernels of a PyTorch profiler (Kineto) Chrome trace per family (matmul, attention,
LayerNorm, ...) and per kernel, and measures how long the GPU sat idle between them, per step.

  python3 bench/e2e/trace_summary.py TRACE.json[.gz] --steps 3 [--top 25] [--csv OUT.csv]
"""
import argparse
import collections
import csv
import gzip
import json
import re
import sys

# First match wins: kernel name pattern -> family.
FAMILIES = [
    (r"flash|fmha|attention", "attention"),
    (r"gemm|xmma|cutlass|nvjet|cublas|splitK", "matmul"),
    (r"layer_norm|LayerNorm|layernorm", "layer_norm"),
    (r"dropout|fused_dropout", "dropout"),
    (r"gelu|GeluCUDAKernel", "gelu"),
    (r"adam|multi_tensor|foreach", "optimizer"),
    (r"reduce_kernel|Reduce", "reduction"),
    (r"copy|Copy|cast|Memcpy|memcpy", "copy_cast"),
    (r"[Ee]mbedding|index|gather|scatter", "embedding_index"),
    (r"elementwise|vectorized|unrolled", "elementwise"),
]
GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def family(name):
    for pattern, fam in FAMILIES:
        if re.search(pattern, name):
            return fam
    return "other"


def union_length(intervals):
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def summarise(events, steps):
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES]
    if not gpu:
        raise ValueError("the trace holds no GPU kernels (a CPU run, or CUDA tracing was off)")
    spans = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in gpu]
    wall = max(s for _, s in spans) - min(s for s, _ in spans)
    busy = union_length(spans)
    per_family = collections.defaultdict(lambda: [0, 0.0])
    per_kernel = collections.defaultdict(lambda: [0, 0.0])
    for e in gpu:
        name = e.get("name", "?")
        for table, key in ((per_family, family(name)), (per_kernel, name)):
            table[key][0] += 1
            table[key][1] += float(e.get("dur", 0))
    overhead = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
                for e in events if e.get("ph") == "X" and e.get("cat") == "overhead"]
    return {"wall_us": wall / steps, "busy_us": busy / steps, "launches": len(gpu) / steps,
            "families": per_family, "kernels": per_kernel, "gaps": idle_gaps(gpu),
            "profiler_idle_us": idle_during(spans, overhead) / steps}


def idle_during(busy_spans, windows):
    """GPU idle time inside `windows` (the profiler's own overhead events: CUPTI buffer requests,
    lazy kernel loading), which an unprofiled run does not have."""
    idle = 0.0
    for start, stop in windows:
        inside = [(max(a, start), min(b, stop)) for a, b in busy_spans if b > start and a < stop]
        idle += (stop - start) - union_length(inside)
    return idle


def idle_gaps(gpu, at_least_us=5.0):
    """Idle stretches of the GPU (no operation running), each named by the operation after it:
    the one the host was late to launch."""
    gaps = collections.defaultdict(lambda: [0, 0.0])
    end = None
    for e in sorted(gpu, key=lambda e: float(e["ts"])):
        start = float(e["ts"])
        if end is not None and start - end >= at_least_us:
            gaps[e.get("name", "?")][0] += 1
            gaps[e.get("name", "?")][1] += start - end
        stop = start + float(e.get("dur", 0))
        end = stop if end is None else max(end, stop)
    return gaps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--steps", type=int, default=3, help="steps the trace holds (--trace_steps)")
    ap.add_argument("--top", type=int, default=25, help="kernels listed by name")
    ap.add_argument("--csv", help="also write family and kernel rows to this CSV")
    args = ap.parse_args()
    try:
        opener = gzip.open if args.trace.endswith(".gz") else open
        with opener(args.trace, "rt") as f:
            events = json.load(f)["traceEvents"]
        s = summarise(events, max(args.steps, 1))
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"trace_summary: {args.trace}: {e}", file=sys.stderr)
        return 1
    per_step = lambda us: us / args.steps / 1000.0  # noqa: E731
    print(f"per step: GPU span {s['wall_us'] / 1000:.2f} ms, kernels busy {s['busy_us'] / 1000:.2f} ms, "
          f"idle {(s['wall_us'] - s['busy_us']) / 1000:.2f} ms (of which "
          f"{s['profiler_idle_us'] / 1000:.2f} ms during the profiler's own overhead), "
          f"{s['launches']:.0f} GPU operations")
    print(f"{'family':<18}{'count/step':>11}{'ms/step':>9}")
    rows = []
    for name, (count, us) in sorted(s["families"].items(), key=lambda kv: -kv[1][1]):
        print(f"{name:<18}{count / args.steps:>11.0f}{per_step(us):>9.3f}")
        rows.append(("family", name, count / args.steps, per_step(us)))
    print(f"\ntop {args.top} kernels")
    kernels = sorted(s["kernels"].items(), key=lambda kv: -kv[1][1])
    for name, (count, us) in kernels[: args.top]:
        print(f"{per_step(us):8.3f} ms {count / args.steps:5.0f}x  {name[:110]}")
    rows += [("kernel", n, c / args.steps, per_step(us)) for n, (c, us) in kernels]
    print(f"\nidle gaps (>= 5 us) by the operation that ended them, top {args.top}")
    gaps = sorted(s["gaps"].items(), key=lambda kv: -kv[1][1])
    for name, (count, us) in gaps[: args.top]:
        print(f"{per_step(us):8.3f} ms {count / args.steps:5.0f}x  {name[:110]}")
    rows += [("gap_before", n, c / args.steps, per_step(us)) for n, (c, us) in gaps]
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["kind", "name", "count_per_step", "ms_per_step"])
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
