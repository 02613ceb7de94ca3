"""Hugging Face reference for fine-tuning a pretrained encoder (issue 14's accuracy proof):
AutoModelForSequenceClassification from a model directory, AdamW at --lr with linear warmup
(--warmup share of the steps) and linear decay, random batches of --batch-size padded to the
longest, --max-length truncation, fp32, on the CPU or a GPU. Evaluates on the dev file after every
epoch. Prints one JSON line: dev accuracy per epoch, real tokens/s of training.
    python3 bench/baselines/hf_finetune.py --model DIR --train TSV --dev TSV [--epochs 1]
"""
import argparse
import csv
import json
import random
import time

import torch
from transformers import (AutoModelForSequenceClassification, AutoTokenizer,
                          get_linear_schedule_with_warmup)


def read_tsv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [r["text"] for r in rows], [r["label"] for r in rows]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--train", required=True)
    p.add_argument("--dev", required=True)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--warmup", type=float, default=0.06)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--freeze-encoder", action="store_true", help="train the head only")
    p.add_argument("--bf16", action="store_true", help="autocast to bf16 (GPU runs)")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    texts, labels = read_tsv(a.train)
    dev_texts, dev_labels = read_tsv(a.dev)
    names = sorted(set(labels))
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForSequenceClassification.from_pretrained(a.model, num_labels=len(names))
    model.to(device)
    if a.freeze_encoder:
        for p_ in model.base_model.parameters():
            p_.requires_grad = False
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=a.lr,
                            weight_decay=0.01)
    steps = a.epochs * ((len(texts) + a.batch_size - 1) // a.batch_size)
    sched = get_linear_schedule_with_warmup(opt, int(a.warmup * steps), steps)
    y = torch.tensor([names.index(l) for l in labels])
    result = {"model": a.model, "train": a.train, "epochs": [], "real_tokens": 0, "train_s": 0.0}
    for epoch in range(a.epochs):
        model.train()
        order = list(range(len(texts)))
        random.shuffle(order)
        start = time.time()
        for i in range(0, len(order), a.batch_size):
            idx = order[i:i + a.batch_size]
            enc = tok([texts[j] for j in idx], truncation=True, max_length=a.max_length,
                      padding=True, return_tensors="pt").to(device)
            result["real_tokens"] += int(enc["attention_mask"].sum())
            with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=a.bf16):
                loss = model(**enc, labels=y[idx].to(device)).loss
            loss.backward()
            opt.step()
            sched.step()
            opt.zero_grad()
        if device == "cuda":
            torch.cuda.synchronize()
        result["train_s"] += time.time() - start
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(dev_texts), 128):
                enc = tok(dev_texts[i:i + 128], truncation=True, max_length=a.max_length,
                          padding=True, return_tensors="pt").to(device)
                with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=a.bf16):
                    pred = model(**enc).logits.argmax(-1).cpu()
                correct += sum(int(names[k] == l) for k, l in zip(pred.tolist(),
                                                                   dev_labels[i:i + 128]))
        result["epochs"].append({"epoch": epoch + 1, "dev_accuracy": correct / len(dev_texts)})
    result["real_tokens_per_s"] = result["real_tokens"] / max(result["train_s"], 1e-9)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
