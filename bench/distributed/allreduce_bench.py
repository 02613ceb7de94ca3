#!/usr/bin/env python3
"""All-reduce cost of one padless data-parallel step, alone: BERT-base's gradients (98.3M
parameters with the 16k vocabulary) in 25 MiB buckets, as dist::GradientReducer sends them, over
NCCL. Run under torchrun; rank 0 prints one JSON line.

  torchrun --nproc-per-node 2 bench/distributed/allreduce_bench.py --dtype bf16
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist

PARAMS = 98_330_882
BUCKET_BYTES = 25 << 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="bf16")
    ap.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    per_bucket = BUCKET_BYTES // torch.tensor([], dtype=dtype).element_size()
    sizes = [min(per_bucket, PARAMS - i) for i in range(0, PARAMS, per_bucket)]
    buckets = [torch.randn(n, device="cuda").to(dtype) for n in sizes]
    for _ in range(5):
        for b in buckets:
            dist.all_reduce(b)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.iters):
        works = [dist.all_reduce(b, async_op=True) for b in buckets]
        for w in works:
            w.wait()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - start) * 1000 / args.iters
    if dist.get_rank() == 0:
        n = dist.get_world_size()
        nbytes = PARAMS * buckets[0].element_size()
        print(json.dumps({"world": n, "dtype": args.dtype, "buckets": len(buckets),
                          "bytes": nbytes, "ms_per_step": round(ms, 3),
                          "bus_GBps": round(2 * (n - 1) / n * nbytes / ms / 1e6, 1)}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
