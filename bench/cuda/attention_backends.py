#!/usr/bin/env python3
"""Varlen attention backends of LibTorch on one packed batch, forward + backward, timed with CUDA
events in the same run: flash (at::_flash_attention_forward/backward, what padless's fused layer
calls) against cuDNN's fused attention (at::_cudnn_attention_forward/backward with cumulative
sequence lengths, the ragged layout PyTorch uses for nested tensors).

BERT-base shapes: a 16384-token budget packed greedily from lengths drawn with a fixed seed to
look like IMDB after truncation at 512 (median ~230, a tail clipped at 512), 12 heads of 64.
Before timing, the outputs and gradients of the two backends are compared without dropout.

usage (on the GPU machine): python3 bench/cuda/attention_backends.py [--steps 50] [--dropout 0.1]
  [--lengths FILE]  (sequence lengths, one per line, taken in order up to --budget: e.g. the
  lengths padless_bench_serve --lengths_out wrote, for the serving engine's batches)

Measured on the H200 (torch 2.11.0+cu130, cuDNN 9.19, 2026-12-02; 69 sequences, 16258 tokens):
flash 0.149 ms forward, 0.496 ms forward + backward (0.550 with dropout 0.1), i.e. 6.6 ms per
BERT-base step; cuDNN's ragged path 71 ms forward and 149 ms forward + backward, with dk off by
1e7 against flash (out and dv agreed to 4e-3). So cuDNN attention is no option for packed batches
in this LibTorch; the fused layer stays on flash.
"""
import argparse
import math
import statistics

import torch

aten = torch.ops.aten


def packed_lengths(budget, max_len, seed):
    gen = torch.Generator().manual_seed(seed)
    lengths = []
    while True:
        length = int(min(max_len, max(16, math.exp(5.45 + 0.62 * torch.randn(1, generator=gen).item()))))
        if sum(lengths) + length > budget:
            return lengths
        lengths.append(length)


def file_lengths(path, budget):
    """The file's lengths in order, as many as fit `budget` tokens."""
    lengths = []
    for line in open(path):
        if not line.strip():
            continue
        if sum(lengths) + int(line) > budget:
            break
        lengths.append(int(line))
    return lengths


def flash(q, k, v, cu, max_len, p, grad_out):
    out, lse, rng, unused, _ = aten._flash_attention_forward(q, k, v, cu, cu, max_len, max_len, p, False, False)
    if grad_out is None:
        return out, None
    grads = aten._flash_attention_backward(grad_out, q, k, v, out, lse, cu, cu, max_len, max_len, p, False,
                                           rng, unused)
    return out, grads


def cudnn(q, k, v, cu, max_len, p, grad_out):
    # The backward goes through autograd: _cudnn_attention_backward's attn_bias is a non-optional
    # Tensor in the schema, which C++ passes undefined and Python cannot.
    leaves = [t.detach().requires_grad_(grad_out is not None) for t in (q, k, v)]
    out = aten._cudnn_attention_forward(*leaves, None, cu, cu, max_len, max_len, True, p, False, False)[0]
    if grad_out is None:
        return out, None
    return out, torch.autograd.grad(out, leaves, grad_out)


def time_ms(fn, steps):
    for _ in range(5):
        fn()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=int, default=16384)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--head_dim", type=int, default=64)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--lengths", default="", help="lengths file (default: drawn, IMDB-like)")
    args = parser.parse_args()
    torch.manual_seed(0)
    lengths = (file_lengths(args.lengths, args.budget) if args.lengths
               else packed_lengths(args.budget, 512, seed=1))
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32, device="cuda")
    total, max_len = int(cu[-1]), max(lengths)
    print(f"{len(lengths)} sequences, {total} tokens, max {max_len}, median {statistics.median(lengths)}; "
          f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    shape = (total, args.heads, args.head_dim)
    q, k, v, grad_out = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(4))

    ref_out, ref_grads = flash(q, k, v, cu, max_len, 0.0, grad_out)
    try:
        out, grads = cudnn(q, k, v, cu, max_len, 0.0, grad_out)
    except RuntimeError as err:  # an unsupported configuration: say so and stop
        print(f"cudnn varlen failed: {err}")
        return
    for name, a, b in [("out", out, ref_out)] + list(zip(("dq", "dk", "dv"), grads, ref_grads)):
        diff = (a.float() - b.float()).abs().max().item()
        scale = b.float().abs().max().item()
        print(f"cudnn vs flash {name}: max |diff| {diff:.3g} (max |flash| {scale:.3g})")

    for p in sorted({0.0, args.dropout}):
        for name, fn in (("flash", flash), ("cudnn", cudnn)):
            fwd = time_ms(lambda: fn(q, k, v, cu, max_len, p, None), args.steps)
            both = time_ms(lambda: fn(q, k, v, cu, max_len, p, grad_out), args.steps)
            print(f"dropout {p}: {name:5s} forward {fwd:.3f} ms, forward + backward {both:.3f} ms; "
                  f"x12 layers {12 * both:.2f} ms/step")


if __name__ == "__main__":
    main()
