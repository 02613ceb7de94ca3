#!/usr/bin/env python3
"""Reference outputs of Hugging Face transformers' ModernBERT for padless's parity test
(modernbert_parity_test.cc). Loads a ModernBertForSequenceClassification directory in fp32 on the
CPU with eager attention, refuses any missing or unexpected weight (so a wrong name mapping on
padless's side cannot hide behind a random initialisation), optionally re-saves it with
save_pretrained (transformers 5's config form, which padless then imports), and writes:
  logits  per sequence, each run alone (no padding), checked against a padded batch of all;
  hidden  the last hidden states (after the final norm) of the sequences --hidden-of lists;
  grads   slices of the gradients of the mean cross-entropy over the batch (labels from the ids
          file) with respect to the parameters GRADS names ("name": [first rows]).
    modernbert_reference.py --model DIR --ids IDS.json --out OUT.json [--resave DIR2]
      [--hidden-of 2,4]
    modernbert_reference.py --serve     (runs those argument lists from stdin: serve_jobs.py)
IDS.json: {"ids": [[...], ...], "labels": [...]}.
"""
import argparse
import json
import sys

import torch
from transformers import AutoModelForSequenceClassification

from serve_jobs import serve

# Tensor name -> how many leading rows of its gradient to keep (0: all).
GRADS = {
    "model.embeddings.norm.weight": 0,
    "model.layers.0.mlp.Wi.weight": 1,
    "model.layers.1.attn.Wqkv.weight": 2,
    "model.layers.2.mlp_norm.weight": 0,
    "model.layers.3.attn.Wo.weight": 1,
    "head.dense.weight": 1,
    "classifier.weight": 0,
}


def rounded(values):
    # 7 significant digits: float32's precision, half the golden files' size.
    return [float(f"{v:.7g}") for v in values]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--resave")
    ap.add_argument("--hidden-of", default="")
    a = ap.parse_args(argv)
    model, info = AutoModelForSequenceClassification.from_pretrained(
        a.model, output_loading_info=True, dtype=torch.float32, attn_implementation="eager")
    bad = {k: v for k, v in info.items()
           if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if bad:
        raise SystemExit(f"{a.model}: transformers did not load every weight: {bad}")
    model.eval()
    if a.resave:
        model.save_pretrained(a.resave, safe_serialization=True)
    spec = json.load(open(a.ids))
    ids, labels = spec["ids"], spec["labels"]
    hidden_of = [int(i) for i in a.hidden_of.split(",") if i]
    out = {"ids": ids, "labels": labels, "logits": [], "hidden": {}, "grads": {}}
    logits = []
    for i, seq in enumerate(ids):
        r = model(input_ids=torch.tensor([seq]), output_hidden_states=True)
        logits.append(r.logits[0])
        out["logits"].append(rounded(r.logits[0].tolist()))
        if i in hidden_of:
            out["hidden"][str(i)] = rounded(r.hidden_states[-1][0].flatten().tolist())
    # The padded batch gives the same logits (padding and windows handled by transformers' masks).
    longest = max(len(s) for s in ids)
    padded = torch.tensor([s + [0] * (longest - len(s)) for s in ids])
    mask = torch.tensor([[1] * len(s) + [0] * (longest - len(s)) for s in ids])
    with torch.no_grad():
        batch = model(input_ids=padded, attention_mask=mask).logits
    gap = (batch - torch.stack(logits)).abs().max().item()
    if gap > 1e-4:
        raise SystemExit(f"transformers' padded batch differs from single sequences by {gap}")
    loss = torch.nn.functional.cross_entropy(torch.stack(logits), torch.tensor(labels))
    loss.backward()
    params = dict(model.named_parameters())
    for name, rows in GRADS.items():
        g = params[name].grad
        g = g if rows == 0 else g[:rows]
        out["grads"][name] = rounded(g.flatten().tolist())
    with open(a.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))


if __name__ == "__main__":
    serve(main) if sys.argv[1:] == ["--serve"] else main()
