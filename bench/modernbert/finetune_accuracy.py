#!/usr/bin/env python3
"""Accuracy after fine-tuning, padless against transformers (issue 45's training target: "equal to
transformers' within 0.5 point on the same data, steps and seed policy; a random-init or
small-shape model is fine"). Both start from the same random ModernBERT checkpoint
(make_model.py), read the same tokenizer.json, and train with one policy:

  AdamW (betas 0.9/0.999, eps 1e-8, weight decay 0.01 except biases and norms), peak LR --lr with
  a linear warm-up over 6% of the steps and linear decay to 0, gradient clipping at 1.0, no
  dropout (ModernBERT's configuration), batches of 32 texts in a fresh random order every epoch
  (the seed's), --epochs epochs, texts truncated at --max-len tokens, fp32 on the CPU; the dev set
  evaluated after every epoch and the best evaluation reported.

padless: `padless train --init-from CKPT --batching B --batch-size 32 ...` with B `padded`
(random_pad_longest: 32 texts in a random order, transformers' policy exactly) or `varlen`
(padless's packed varlen batches of about 32 texts' tokens, the path users train on), its own data
order and head initialisation for the seed; transformers: ModernBertForSequenceClassification with
the loop below. For each seed, one JSON line per implementation; then the mean and the sample standard
deviation over the seeds, and padless's mean minus transformers'.

  python3 bench/modernbert/finetune_accuracy.py --padless build/cli/padless \\
      --train ../shared/data/sst2_train.tsv --dev ../shared/data/sst2_dev.tsv --out /tmp/ft
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch

import bench_util as bu
import hf_anchor

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--padless", required=True, help="the padless binary")
    p.add_argument("--train", required=True, help="labeled TSV (label, text)")
    p.add_argument("--dev", required=True, help="labeled TSV (label, text)")
    p.add_argument("--out", required=True, help="work folder: checkpoint, runs, results.jsonl")
    p.add_argument("--limit", type=int, default=20000, help="training texts used (0: all)")
    p.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--impls", default="padless,transformers",
                   help="which to run (a second run can add padless batchings to the first's file)")
    p.add_argument("--padless-batching", default="padded,varlen",
                   help="padless's --batching values, each run per seed")
    p.add_argument("--bpe-vocab", type=int, default=8000,
                   help="the checkpoint's tokenizer: a byte-level BPE of this many pieces trained "
                        "on --train's texts")
    return p.parse_args()


def make_checkpoint(a, train_tsv):
    model = os.path.join(a.out, "model")
    if not os.path.isfile(os.path.join(model, "config.json")):
        subprocess.run([sys.executable, os.path.join(HERE, "make_model.py"), "--out", model,
                        "--shape", "tiny", "--train-on", train_tsv, "--bpe-vocab",
                        str(a.bpe_vocab)], check=True, stdout=subprocess.DEVNULL)
    return model


def first_rows(src, dst, limit):
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as g:
        for i, line in enumerate(f):
            if limit and i > limit:
                break
            g.write(line)
    return dst


def run_padless(a, model, train_tsv, seed, batching):
    out = os.path.join(a.out, f"padless_{batching}_{seed}")
    metrics = out + ".json"
    start = time.time()
    subprocess.run([a.padless, "train", "--data", train_tsv, "--dev", a.dev, "--out", out,
                    "--init-from", model, "--batching", batching, "--batch-size", "32",
                    "--max-len", str(a.max_len), "--epochs", str(a.epochs), "--lr", str(a.lr),
                    "--warmup", "0.06", "--lr-schedule", "linear", "--weight-decay", "0.01",
                    "--clip-norm", "1", "--dropout", "0", "--amp", "off", "--device", "cpu",
                    "--seed", str(seed), "--quiet", "--metrics-json", metrics],
                   check=True, stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        m = json.load(f)
    return {"impl": f"padless ({batching})", "seed": seed, "accuracy": m["accuracy"], "steps": m["steps"],
            "seconds": time.time() - start}


def adamw(model, lr):
    decay, rest = [], []
    for name, p in model.named_parameters():
        (rest if "bias" in name or "norm" in name else decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                              {"params": rest, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.999), eps=1e-8)


def linear_schedule(opt, total, warmup):
    def factor(step):  # padless's LearningRate: (step + 1) / warmup, then linear to 0
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, 1.0 - (step - warmup) / max(1, total - warmup))
    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def batch(ids, labels, rows, pad):
    """hf_anchor's padded batch of the texts at `rows`: (input ids, attention mask, labels)."""
    b = hf_anchor.padded_batch([ids[r] for r in rows], [labels[r] for r in rows], "cpu", pad)
    return b["ids"], b["mask"], b["labels"]


def accuracy(model, ids, labels, pad):
    model.eval()
    right = 0
    with torch.no_grad():
        for s in range(0, len(ids), 128):
            x, mask, y = batch(ids, labels, range(s, min(s + 128, len(ids))), pad)
            right += (model(input_ids=x, attention_mask=mask).logits.argmax(-1) == y).sum().item()
    model.train()
    return right / len(ids)


def run_transformers(a, model_dir, train_tsv, seed):
    from transformers import AutoModelForSequenceClassification
    start = time.time()
    torch.manual_seed(seed)
    tok = bu.load_tokenizer(model_dir, a.max_len)
    texts, names = bu.read_tsv(train_tsv)
    ids, labels = bu.encode(tok, texts), bu.label_ids(names, model_dir)
    dev_texts, dev_names = bu.read_tsv(a.dev)
    dev_ids, dev_labels = bu.encode(tok, dev_texts), bu.label_ids(dev_names, model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(
        model_dir, attn_implementation="sdpa", attention_dropout=0.0, embedding_dropout=0.0,
        mlp_dropout=0.0, classifier_dropout=0.0)
    model.train()
    per_epoch = math.ceil(len(ids) / 32)
    total = per_epoch * a.epochs
    opt = adamw(model, a.lr)
    sched = linear_schedule(opt, total, max(1, round(0.06 * total)))
    pad = hf_anchor.pad_id(model_dir)
    order = torch.Generator().manual_seed(seed)
    best = 0.0
    for _ in range(a.epochs):
        perm = torch.randperm(len(ids), generator=order).tolist()
        for s in range(0, len(perm), 32):
            x, mask, y = batch(ids, labels, perm[s:s + 32], pad)
            model(input_ids=x, attention_mask=mask, labels=y).loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
        best = max(best, accuracy(model, dev_ids, dev_labels, pad))
    return {"impl": "transformers", "seed": seed, "accuracy": best, "steps": total,
            "seconds": time.time() - start}


def summary(rows):
    by = {}
    for r in rows:
        by.setdefault(r["impl"], []).append(100 * r["accuracy"])
    out = {"table": "finetune_accuracy_summary"}
    for impl, acc in by.items():
        out[impl] = {"mean": statistics.mean(acc),
                     "stdev": statistics.stdev(acc) if len(acc) > 1 else 0.0, "runs": acc}
    for impl in by:
        if impl.startswith("padless") and "transformers" in by:
            out[f"{impl} minus transformers, points"] = (out[impl]["mean"] -
                                                         out["transformers"]["mean"])
    return out


def main():
    a = parse_args()
    os.makedirs(a.out, exist_ok=True)
    train_tsv = first_rows(a.train, os.path.join(a.out, "train.tsv"), a.limit)
    model = make_checkpoint(a, train_tsv)
    path = os.path.join(a.out, "results.jsonl")
    rows = []  # earlier runs' rows of this folder count in the summary too
    if os.path.isfile(path):
        with open(path) as f:
            rows = [r for r in map(json.loads, f) if r.get("table") == "finetune_accuracy"]
    runs = []
    for seed in [int(s) for s in a.seeds.split(",")]:
        if "padless" in a.impls:
            for b in a.padless_batching.split(","):
                runs.append(lambda seed=seed, b=b: run_padless(a, model, train_tsv, seed, b))
        if "transformers" in a.impls:
            runs.append(lambda seed=seed: run_transformers(a, model, train_tsv, seed))
    with open(path, "a") as log:
        for run in runs:
            row = {"table": "finetune_accuracy", **run(), "epochs": a.epochs, "lr": a.lr,
                   "train_texts": a.limit, "max_len": a.max_len}
            print(json.dumps(row), flush=True)
            log.write(json.dumps(row) + "\n")
            rows.append(row)
        s = summary(rows)
        print(json.dumps(s))
        log.write(json.dumps(s) + "\n")


if __name__ == "__main__":
    main()
