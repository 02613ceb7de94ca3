#!/usr/bin/env python3
"""transformers' side of padless's ModernBERT command-line test (modernbert_cli_test.cc, issue 45).

  make    --out DIR --tokenizer TOKENIZER_JSON [--seed N]
      A tiny random ModernBertForSequenceClassification (2 layers, hidden 32, a +-4 window, global
      attention every second layer, labels neg/pos) from a fixed seed, saved by save_pretrained
      with the given tokenizer.json (ModernBERT's shape, tests/tokenize/data/modernbert) through
      PreTrainedTokenizerFast, as a ModernBERT directory on the Hub holds them.
  logits  --model DIR --texts FILE --out JSON
      Loads DIR (padless export-hf's output) with AutoTokenizer and
      AutoModelForSequenceClassification in fp32 on the CPU, refusing any missing or unexpected
      weight, and writes {"ids": [...], "logits": [...], "probabilities": [...]} per text line.
  --serve
      Runs those argument lists from stdin in one process (tests/model_files/serve_jobs.py).
"""
import argparse
import json
import os
import sys

import torch


def make(a):
    from transformers import (ModernBertConfig, ModernBertForSequenceClassification,
                              PreTrainedTokenizerFast)
    tok = PreTrainedTokenizerFast(tokenizer_file=a.tokenizer, cls_token="[CLS]", sep_token="[SEP]",
                                  pad_token="[PAD]", mask_token="[MASK]", unk_token="[UNK]")
    vocab = len(tok)
    config = ModernBertConfig(
        vocab_size=vocab + 7,  # rounded up past the tokenizer, as ModernBERT-base's 50368
        hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
        max_position_embeddings=128, local_attention=8, global_attn_every_n_layers=2,
        pad_token_id=tok.pad_token_id, cls_token_id=tok.cls_token_id,
        sep_token_id=tok.sep_token_id, bos_token_id=tok.cls_token_id,
        eos_token_id=tok.sep_token_id, num_labels=2, id2label={0: "neg", 1: "pos"},
        label2id={"neg": 0, "pos": 1}, classifier_pooling="mean")
    torch.manual_seed(a.seed)
    model = ModernBertForSequenceClassification(config).eval()
    model.save_pretrained(a.out, safe_serialization=True)
    tok.save_pretrained(a.out)


def logits(a):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(a.model)
    model, info = AutoModelForSequenceClassification.from_pretrained(
        a.model, output_loading_info=True, dtype=torch.float32, attn_implementation="eager")
    bad = {k: v for k, v in info.items()
           if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if bad:
        raise SystemExit(f"{a.model}: transformers did not load every weight: {bad}")
    model.eval()
    out = {"ids": [], "logits": [], "probabilities": []}
    with open(a.texts, encoding="utf-8") as f:
        texts = f.read().splitlines()
    with torch.no_grad():
        for text in texts:
            ids = tok(text)["input_ids"]
            row = model(input_ids=torch.tensor([ids])).logits[0]
            out["ids"].append(ids)
            out["logits"].append(row.tolist())
            out["probabilities"].append(torch.softmax(row, -1).tolist())
    with open(a.out, "w") as f:
        json.dump(out, f)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("action", choices=["make", "logits"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer")
    ap.add_argument("--seed", type=int, default=4545)
    ap.add_argument("--model")
    ap.add_argument("--texts")
    a = ap.parse_args(argv)
    make(a) if a.action == "make" else logits(a)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        import transformers  # noqa: F401 (imported before "ready": ready means it is there)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                        "model_files"))
        from serve_jobs import serve
        serve(main)
    else:
        main()
