#!/usr/bin/env python3
"""padless's measurements as the anchors' JSON lines, appended to --json (modernbert_bench.sh).

  train   from `padless train --metrics-json M` and its DIR/train_log.csv: real tokens/s of the
          steps after --warmup, as the anchors time theirs. The CSV's real_tokens_per_s is the rate
          of its logging window (the steps between two flushes, 20 by default; consecutive rows
          with the same rate), so the timed rate is the windows that start after --warmup: their
          real tokens over their seconds. Also the whole run's rate (metrics step_tokens_per_s,
          warm-up steps included) and the run's peak allocated memory per real token of a step.
  memory  the same files of a short run at --max-len L: peak allocated bytes per real token.
  serve   padless_bench_serve's offline JSON line (stdin) as a serve row.

  python3 bench/modernbert/padless_rows.py train --metrics M.json --log train_log.csv \
      --dataset imdb --warmup 20 --json OUT.jsonl
"""
import argparse
import csv
import json
import sys


def read_log(path):
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def windows(rows):
    """The logging windows: runs of consecutive rows with the same window rate."""
    out = []
    for r in rows:
        if out and out[-1][-1]["real_tokens_per_s"] == r["real_tokens_per_s"]:
            out[-1].append(r)
        else:
            out.append([r])
    return out


def timed_rate(rows, warmup):
    """(real tokens/s, steps) of the windows that start after `warmup` steps; None if none do."""
    timed = [w for w in windows(rows) if w[0]["step"] > warmup and w[0]["real_tokens_per_s"] > 0]
    if not timed:
        return None, 0
    tokens = sum(sum(r["real_tokens"] for r in w) for w in timed)
    seconds = sum(sum(r["real_tokens"] for r in w) / w[0]["real_tokens_per_s"] for w in timed)
    return tokens / seconds, sum(len(w) for w in timed)


def common_fields(a, metrics, rows):
    per_step = sum(r["real_tokens"] for r in rows) / max(len(rows), 1)
    slots = sum(r["token_slots"] for r in rows)
    peak = metrics.get("peak_allocated_bytes")
    return {"dataset": a.dataset, "device": a.device or metrics.get("device", ""),
            "amp": a.amp, "impl": "padless", "attention": "packed varlen " +
            ("(CPU reference)" if a.device == "cpu" else "(flash, windows)"),
            "real_tokens_per_step": per_step, "padding_efficiency":
            sum(r["real_tokens"] for r in rows) / max(slots, 1), "peak_allocated_bytes": peak,
            "peak_bytes_per_real_token": peak / per_step if peak and per_step else None}


def train_row(a):
    with open(a.metrics) as f:
        metrics = json.load(f)
    rows = read_log(a.log)
    rate, steps = timed_rate(rows, a.warmup)
    row = {"table": "train", **common_fields(a, metrics, rows),
           "whole_run_tokens_per_s": metrics["step_tokens_per_s"], "budget": a.budget,
           "max_len": a.max_len}
    if rate is None:  # too few steps for a window after the warm-up: the whole run's rate
        rate, steps, row["timed"] = metrics["step_tokens_per_s"], len(rows), "whole run"
    row.update(real_tokens_per_s=rate, steps=steps,
               step_ms=1000 * row["real_tokens_per_step"] / rate)
    return row


def memory_row(a):
    with open(a.metrics) as f:
        metrics = json.load(f)
    rows = read_log(a.log)
    impl = "padless" if a.checkpoint == "none" else f"padless, checkpoint {a.checkpoint}"
    return {"table": "memory", **common_fields(a, metrics, rows), "impl": impl,
            "checkpoint": a.checkpoint, "seq_len": a.seq_len,
            "whole_run_tokens_per_s": metrics.get("step_tokens_per_s"),
            "rows": a.budget // a.seq_len, "slots_per_step":
            sum(r["token_slots"] for r in rows) / max(len(rows), 1)}


def serve_row(a):
    line = next(l for l in sys.stdin if l.startswith("{") and '"offline"' in l)
    r = json.loads(line)
    return {"table": "serve", "dataset": a.dataset, "device": r.get("device", a.device),
            "amp": r.get("amp", a.amp), "impl": "padless", "texts": r["texts"],
            "seconds": r["seconds"], "texts_per_s": r["texts_per_s"],
            "real_tokens_per_s": r["real_tokens_per_s"], "attention": "engine (varlen)",
            "budget": a.budget, "max_len": a.max_len}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("mode", choices=["train", "memory", "serve"])
    p.add_argument("--metrics")
    p.add_argument("--log")
    p.add_argument("--dataset", required=True)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--seq-len", type=int, default=0)
    p.add_argument("--budget", type=int, default=16384)
    p.add_argument("--checkpoint", default="none", help="padless's --checkpoint of the run")
    p.add_argument("--max-len", type=int, default=8192)
    p.add_argument("--device", default="")
    p.add_argument("--amp", default="bf16")
    p.add_argument("--json", required=True)
    a = p.parse_args()
    row = {"train": train_row, "memory": memory_row, "serve": serve_row}[a.mode](a)
    line = json.dumps(row)
    print(line)
    with open(a.json, "a") as f:
        f.write(line + "\n")


if __name__ == "__main__":
    main()
