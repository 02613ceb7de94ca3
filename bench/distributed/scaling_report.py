#!/usr/bin/env python3
"""Markdown table for bench/distributed/h200x2_scaling.sh: real tokens/s of 1 and 2 GPUs over the
optimizer steps (step_tokens_per_s: dev evaluations and checkpoint writes left out, as they are not
what data parallelism speeds up) and over the whole run, the speed-up of the steps, dev accuracy,
step time, the all-reduce time of one step alone, and how much of it backward hid:
exposed = step(2 GPUs) - step(1 GPU) (the 2-GPU step does the same work per GPU plus the
all-reduce); hidden = 1 - exposed / all-reduce."""
import argparse
import json
import os


def load(path):
    with open(path) as f:
        return json.load(f)


def load_run(d, name):
    path = os.path.join(d, f"{name}.json")
    return load(path) if os.path.exists(path) else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--commit", default="unknown")
    a = ap.parse_args()
    one = load_run(a.dir, "gpu1")
    print(f"# padless data parallel on 2x H200 (commit {a.commit})\n")
    print("BERT-base (98.3M parameters, vocabulary 16000), bf16 autocast, packed varlen, "
          "16384 tokens per GPU per step, IMDB train (10% held out as dev), NCCL, "
          "NCCL_NVLS_ENABLE=0. Command: `bash bench/distributed/h200x2_scaling.sh`.\n")
    print("| run | grad comm | real tok/s, steps | speed-up | real tok/s, whole run | step ms "
          "| all-reduce ms (alone) | exposed ms | hidden | dev accuracy |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    step1 = one["step_seconds"] / one["steps"] * 1000 if one else None
    if one:
        print(f"| 1 GPU | - | {one['step_tokens_per_s']:.0f} | 1.00x | "
              f"{one['real_tokens_per_s']:.0f} | {step1:.1f} | - | - | - | {one['accuracy']:.4f} |")
    for comm in ("fp32", "bf16"):
        two = load_run(a.dir, f"gpu2_{comm}")
        if two is None:
            continue
        ar_path = os.path.join(a.dir, f"allreduce_{comm}.json")
        ar = load(ar_path) if os.path.exists(ar_path) else None
        step2 = two["step_seconds"] / two["steps"] * 1000
        speedup = f"{two['step_tokens_per_s'] / one['step_tokens_per_s']:.2f}x" if one else "-"
        ar_cell, exposed_cell, hidden_cell = "-", "-", "-"
        if one:
            exposed = max(0.0, step2 - step1)
            exposed_cell = f"{exposed:.2f}"
        if ar:
            ar_cell = f"{ar['ms_per_step']:.2f} ({ar['bus_GBps']} GB/s bus)"
            if one and ar["ms_per_step"] > 0:
                hidden_cell = f"{100 * max(0.0, 1 - exposed / ar['ms_per_step']):.0f}%"
        print(f"| 2 GPUs | {comm} | {two['step_tokens_per_s']:.0f} | {speedup} | "
              f"{two['real_tokens_per_s']:.0f} | {step2:.1f} | {ar_cell} | {exposed_cell} | "
              f"{hidden_cell} | {two['accuracy']:.4f} |")
    ref = load_run(a.dir, "gpu1_accum2")
    if ref:
        print(f"| 1 GPU, --grad-accum 2 (the 2-GPU global batch) | - | "
              f"{ref['step_tokens_per_s']:.0f} | - | {ref['real_tokens_per_s']:.0f} | "
              f"{ref['step_seconds'] / ref['steps'] * 1000:.1f} | - | - | - | "
              f"{ref['accuracy']:.4f} |")
    print("\nTarget: >= 1.9x one GPU's real tokens/s over the steps; dev accuracy equal within noise "
          "to one GPU at the same global batch (--grad-accum 2), the same optimizer steps.")


if __name__ == "__main__":
    main()
