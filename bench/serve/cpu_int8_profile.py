"""The CPU anchors of the serving benchmark profiled per operator (issue 44), to set beside
padless_cpu_int8_probe's profile of the engine's forward on the same token lengths: transformers'
BertForSequenceClassification (SDPA) in fp32 (hf_sorted) and under
torch.ao.quantization.quantize_dynamic (hf_int8_cpu), batches of --batch texts sorted by length
and padded to the longest, random token ids: the very batches of bench/baselines/serve_anchors.py.
JSON lines: one "<anchor>_forward" row per timed pass, and with --profile one "<anchor>_op" row per
operator (self CPU time from torch.profiler, largest first) from one more pass.
  python3 bench/serve/cpu_int8_profile.py --hf-dir DIR --lengths LENGTHS [--profile]
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "baselines"))
import common  # noqa: E402
from serve_anchors import padded_batches  # noqa: E402


def run_pass(model, batches):
    start = time.perf_counter()
    with torch.inference_mode():
        for b in batches:
            F.softmax(model(input_ids=b["ids"], attention_mask=b["mask"]).logits.float(), -1)
    return time.perf_counter() - start


def profile(name, model, batches):
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        seconds = run_pass(model, batches)
    print(json.dumps({"name": f"{name}_profiled", "seconds": seconds}))
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    for e in rows:
        if e.self_cpu_time_total <= 0:
            continue
        print(json.dumps({"name": f"{name}_op", "op": e.key, "calls": e.count,
                          "self_ms": e.self_cpu_time_total / 1e3,
                          "share": e.self_cpu_time_total / 1e6 / seconds}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--hf-dir", required=True)
    p.add_argument("--lengths", required=True, help="token lengths, one per line (the engine's)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--max-len", type=int, default=512)
    p.add_argument("--anchors", default="hf_int8_cpu,hf_sorted")
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    lengths = common.load_lengths(args.lengths, args.max_len)
    from transformers import BertForSequenceClassification
    model = BertForSequenceClassification.from_pretrained(args.hf_dir, attn_implementation="sdpa")
    model = model.eval()
    batches = padded_batches(lengths, args.batch, model.config.vocab_size, "cpu",
                             torch.Generator().manual_seed(2), True)
    for name in args.anchors.split(","):
        m = model
        if name == "hf_int8_cpu":
            m = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        run_pass(m, batches)  # warm-up
        for i in range(args.passes):
            s = run_pass(m, batches)
            print(json.dumps({"name": f"{name}_forward", "threads": torch.get_num_threads(),
                              "pass": i + 1, "texts": len(lengths), "seconds": s,
                              "texts_per_s": len(lengths) / s,
                              "real_tokens_per_s": sum(lengths) / s}), flush=True)
        if args.profile:
            profile(name, m, batches)


if __name__ == "__main__":
    main()
