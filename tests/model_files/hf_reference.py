#!/usr/bin/env python3
"""Reference outputs of Hugging Face transformers for padless's parity tests (hf_parity_test.cc).
Loads a model directory in fp32 on the CPU, refuses any missing or unexpected weight (so a wrong
name mapping on padless's side cannot hide behind a random initialisation), optionally re-saves
it with save_pretrained (the "saved by transformers" copy that padless then imports), and writes
for every id sequence (run alone, no padding) the last hidden states, and the logits or, for a
bare encoder (--base), the pooler output.
    hf_reference.py --model DIR --ids IDS.json --out OUT.json [--resave DIR2] [--base]
    hf_reference.py --serve     (runs those argument lists from stdin: serve_jobs.py)
"""
import argparse
import json
import sys

import torch
import transformers
from transformers import AutoModel, AutoModelForSequenceClassification, PreTrainedModel

from serve_jobs import serve


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--resave")
    ap.add_argument("--base", action="store_true")
    a = ap.parse_args(argv)
    config = json.load(open(f"{a.model}/config.json"))
    if config.get("pruned_heads") and not hasattr(PreTrainedModel, "prune_heads"):
        # transformers 5 dropped pruned_heads: it would build full-width layers and refuse the
        # pruned weights with a size mismatch.
        raise SystemExit(f"{a.model}: config.json has pruned_heads, which transformers "
                         f"{transformers.__version__} no longer applies (4.x does)")
    cls = AutoModel if a.base else AutoModelForSequenceClassification
    model, info = cls.from_pretrained(a.model, output_loading_info=True, dtype=torch.float32)
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys",
                                                           "mismatched_keys")}
    # A bare encoder checkpoint may carry a position_ids buffer that transformers ignores.
    bad.pop("unexpected_keys", None) if a.base else None
    if bad:
        raise SystemExit(f"{a.model}: transformers did not load every weight: {bad}")
    model.eval()
    if a.resave:
        model.save_pretrained(a.resave, safe_serialization=True)
    ids = json.load(open(a.ids))
    out = {"ids": ids, "hidden": [], "second": []}
    with torch.no_grad():
        for seq in ids:
            x = torch.tensor([seq])
            if a.base:
                r = model(input_ids=x)
                hidden, second = r.last_hidden_state, r.pooler_output
            else:
                r = model(input_ids=x, output_hidden_states=True)
                hidden, second = r.hidden_states[-1], r.logits
            # 7 significant digits: float32's precision, half the golden files' size.
            out["hidden"].append([float(f"{v:.7g}") for v in hidden[0].flatten().tolist()])
            out["second"].append([float(f"{v:.7g}") for v in second[0].tolist()])
    with open(a.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))


if __name__ == "__main__":
    serve(main) if sys.argv[1:] == ["--serve"] else main()
