"""Varlen attention forward on the GPU: LibTorch's FlashAttention-2 (what the engine runs) against
cuDNN's SDPA with ragged offsets (aten::_cudnn_attention_forward with cumulative sequence lengths),
on IMDB-like lengths (what the serving engine's batches hold), bf16, BERT-base heads. Checks that
both give the same output, then times each (CUDA events, median of 20).

  python3 bench/serve/attention_probe.py [--lengths FILE] [--tokens 32768]
"""
import argparse
import random

import torch


def batch_lengths(path, tokens):
    if path:
        lengths = [int(l) for l in open(path) if l.strip()]
    else:
        rng = random.Random(0)
        lengths = [min(512, max(8, int(rng.lognormvariate(5.4, 0.6)))) for _ in range(4000)]
    out, total = [], 0
    for n in lengths:
        if total + n > tokens:
            break
        out.append(n)
        total += n
    return out


def timed(fn, reps=20):
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lengths", default="")
    p.add_argument("--tokens", type=int, default=32768)
    a = p.parse_args()
    lengths = batch_lengths(a.lengths, a.tokens)
    t, h, d = sum(lengths), 12, 64
    cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0)), dtype=torch.int32, device="cuda")
    mx = max(lengths)
    qkv = torch.randn(t, 3, h, d, device="cuda", dtype=torch.bfloat16)
    q, k, v = qkv.unbind(1)
    scale = d ** -0.5

    def flash():
        return torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, mx, mx, 0.0, False, False,
                                                       scale=scale)[0]

    def cudnn(qq=q, kk=k, vv=v):
        return torch.ops.aten._cudnn_attention_forward(qq, kk, vv, None, cu, cu, mx, mx, False, 0.0,
                                                       False, False, scale=scale)[0]

    ref = flash()
    flops = sum(4 * n * n * h * d for n in lengths)
    print(f"{len(lengths)} sequences, {t} tokens, max {mx}; torch {torch.__version__}, "
          f"cudnn {torch.backends.cudnn.version()}")
    ms = timed(flash)
    print(f"flash (FA2) strided q/k/v: {ms:.3f} ms, {flops / ms / 1e9:.0f} TFLOP/s")
    for name, args in [("strided", (q, k, v)),
                       ("contiguous", (q.contiguous(), k.contiguous(), v.contiguous()))]:
        try:
            out = cudnn(*args)
            err = (out.float() - ref.float()).abs().max().item()
            ms = timed(lambda: cudnn(*args))
            print(f"cudnn {name}: {ms:.3f} ms, {flops / ms / 1e9:.0f} TFLOP/s, max |diff| {err:.2e}")
        except Exception as e:  # noqa: BLE001 - a probe: report whatever refuses
            print(f"cudnn {name}: failed: {str(e).splitlines()[0][:300]}")


if __name__ == "__main__":
    main()
