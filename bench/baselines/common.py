"""Shared pieces of the Python anchors: the token lengths, the step budget and the report line.

Both anchors train the BERT-base shape on the same token lengths as padless (a file with one
length per line, special tokens included, produced by the padless bench driver from IMDB) and with
the same per-step budget of token slots, so tokens/s compare like with like.
"""
import argparse
import json
import random
import time

import torch


def parse_args(description, strategies):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--lengths", required=True, help="file with one token length per line")
    p.add_argument("--max-len", type=int, default=512)
    p.add_argument("--budget", type=int, default=16384, help="token slots per step (b*s)")
    p.add_argument("--steps", type=int, default=60, help="timed steps per strategy")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--vocab", type=int, default=16000)
    p.add_argument("--strategies", default=",".join(strategies))
    p.add_argument("--checkpoint", action="store_true", help="per-layer activation checkpointing")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--json", default="", help="append one JSON line per strategy here")
    args = p.parse_args()
    # An unknown or empty name would silently run the default padding (e.g. "" from "a,,b").
    unknown = [s for s in args.strategies.split(",") if s not in strategies]
    if unknown:
        p.error(f"--strategies: unknown {unknown}; expected a comma list of {', '.join(strategies)}")
    return args


def load_lengths(path, max_len):
    with open(path) as f:
        lengths = [min(int(line), max_len) for line in f if line.strip()]
    if not lengths:
        raise SystemExit(f"{path}: no lengths")
    return lengths


def bert_base_flops_per_token(length, hidden=768, layers=12, ffn=3072):
    """Training FLOPs for one token of a sequence of `length`: 3 x forward, forward = 2 x matmul
    parameters + 4*L*H per layer (attention scores and weighted sum)."""
    matmul_params = layers * (4 * hidden * hidden + 2 * hidden * ffn)
    return 3 * (2 * matmul_params + layers * 4 * length * hidden)


def param_bytes(model):
    return sum(p.numel() * p.element_size() for p in model.parameters())


def time_steps(step_fn, batches, warmup, steps, grad_bytes=0):
    """Runs warmup then timed steps; returns (seconds, real_tokens, slots, static_bytes) of the
    timed part. static_bytes = weights + optimizer state (allocated right before the first timed
    step, when the optimizer state exists) + `grad_bytes` (gradients are set to None between
    steps, so the caller passes their size), the same accounting as the padless driver."""
    for i in range(warmup):
        step_fn(batches[i % len(batches)])
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    static_bytes = torch.cuda.memory_allocated() + grad_bytes
    real = slots = 0
    start = time.perf_counter()
    for i in range(steps):
        b = batches[(warmup + i) % len(batches)]
        step_fn(b)
        real += b["real"]
        slots += b["slots"]
    torch.cuda.synchronize()
    return time.perf_counter() - start, real, slots, static_bytes


def report(args, name, strategy, seconds, real, slots, flops, static_bytes=0, peak_tflops=0.0):
    row = {
        "impl": name,
        "strategy": strategy,
        "checkpoint": bool(args.checkpoint),
        "real_tokens_per_s": real / seconds,
        "padding_efficiency": real / slots,
        "step_ms": 1000 * seconds / args.steps,
        "tflops": flops / seconds / 1e12,
        "matmul_tflops": peak_tflops,
        "mfu": (flops / seconds / 1e12) / peak_tflops if peak_tflops else 0.0,
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
        "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
        "static_bytes": static_bytes,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(),
    }
    print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(row) + "\n")
    return row


def shuffled(lengths, seed):
    order = list(range(len(lengths)))
    random.Random(seed).shuffle(order)
    return order


def cpu_fp32_matmul_tflops(n=2048, reps=10):
    """The dense fp32 matmul rate of this CPU at torch's thread count, measured now: the CPU's MFU
    denominator (the serving target's fp32 runs are bounded by it)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(2):
        a @ b
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n ** 3 * reps / (time.perf_counter() - start) / 1e12


def bf16_matmul_tflops(n=8192, reps=20):
    """The dense bf16 matmul rate of this GPU, measured now (the MFU denominator)."""
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        a @ b
    end.record()
    torch.cuda.synchronize()
    return 2 * n ** 3 * reps / (start.elapsed_time(end) / 1000) / 1e12
