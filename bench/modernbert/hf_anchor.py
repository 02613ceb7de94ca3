#!/usr/bin/env python3
"""The transformers anchor: ModernBertForSequenceClassification as its users run it, on the same
checkpoint, texts and token ids (the directory's tokenizer.json through `tokenizers`) as padless
and torch_varlen.py. Attention is the best transformers offers in this environment:
"flash_attention_2" when the flash_attn package imports, else "sdpa" (the row's "attention" says
which); batches are padded to their longest row.

  train   real tokens/s over --steps steps after --warmup: batches sorted by length and cut so that
          rows x longest stays within --budget slots (the least padding padded batches can have,
          as group_by_length aims at), spread over all lengths and shuffled; bf16 autocast, fused
          AdamW; the peak memory per real token of the timed steps
  serve   texts in, class probabilities out, timed from raw text: `tokenizers` encode_batch, sort
          by length, padded batches of at most --budget slots, bf16 weights, softmax, one copy to
          the host, back in input order
  memory  at each of --lens: training steps on budget // L randomly chosen texts truncated at L,
          padded to the batch's longest, and torch.cuda.max_memory_allocated per real token

  python3 bench/modernbert/hf_anchor.py train --model DIR --data TSV [--json OUT.jsonl]
"""
import importlib.util
import json
import os
import time

import torch

import bench_util as bu


def attention_impl(device):
    if device.startswith("cuda") and importlib.util.find_spec("flash_attn") is not None:
        try:
            import flash_attn  # noqa: F401  (present but broken, e.g. built for another torch)
            return "flash_attention_2"
        except Exception:
            pass
    return "sdpa"


def load_model(args):
    from transformers import AutoModelForSequenceClassification
    impl = attention_impl(args.device)
    model = AutoModelForSequenceClassification.from_pretrained(args.model,
                                                               attn_implementation=impl)
    return model.to(args.device), impl


def pad_id(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        return json.load(f).get("pad_token_id") or 0


def padded_batch(seqs, labels, device, pad):
    rows, longest = len(seqs), max(len(s) for s in seqs)
    ids = torch.full((rows, longest), pad, dtype=torch.long)
    mask = torch.zeros((rows, longest), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, :len(s)] = torch.tensor(s)
        mask[r, :len(s)] = 1
    return {"ids": ids.to(device), "mask": mask.to(device),
            "labels": torch.tensor(labels).to(device), "real": sum(len(s) for s in seqs),
            "slots": rows * longest}


def training_step(args, model):
    return bu.training_step(args, model, lambda b: model(
        input_ids=b["ids"], attention_mask=b["mask"], labels=b["labels"]).loss)


def train(args):
    ids, labels = bu.tokenized(args)
    model, impl = load_model(args)
    model.train()
    step, pad = training_step(args, model), pad_id(args.model)
    groups = bu.spread_sample(bu.sorted_padded_batches([len(s) for s in ids], args.budget),
                              args.warmup + args.steps, args.seed)
    batches = [padded_batch([ids[i] for i in g], [labels[i] for i in g], args.device, pad)
               for g in groups]
    seconds, real, slots, peak = bu.time_steps(step, batches, args.warmup, args.device)
    bu.emit(args, bu.train_row(args, seconds, real, slots, peak, args.steps, impl="transformers",
                               attention=impl, batches="length-sorted, padded",
                               budget=args.budget, max_len=args.max_len))


def memory(args):
    ids, labels = bu.tokenized(args)
    model, impl = load_model(args)
    model.train()
    pad = pad_id(args.model)
    bu.memory_sweep(args, ids, labels, lambda s, l: padded_batch(s, l, args.device, pad),
                    training_step(args, model), "transformers", attention=impl)


def classify(model, tok, texts, budget, device, pad):
    """Probabilities of each text in input order, from raw text: tokenize, sort by length, pad."""
    ids = bu.encode(tok, texts)
    order, outs = [], []
    for group in bu.sorted_padded_batches([len(s) for s in ids], budget):
        b = padded_batch([ids[i] for i in group], [0] * len(group), device, pad)
        outs.append(torch.softmax(model(input_ids=b["ids"], attention_mask=b["mask"]).logits
                                  .float(), dim=-1))
        order += group
    probs = torch.empty(len(texts), outs[0].shape[1])
    probs[torch.tensor(order)] = torch.cat(outs).cpu()
    return probs, [len(s) for s in ids]


def serve(args):
    texts, _ = bu.read_tsv(args.data, args.limit)
    tok = bu.load_tokenizer(args.model, args.max_len)
    model, impl = load_model(args)
    model = model.to(torch.bfloat16 if args.amp == "bf16" else torch.float32).eval()
    pad = pad_id(args.model)
    with torch.inference_mode():
        classify(model, tok, texts[:512], args.budget, args.device, pad)  # warm-up
        bu.sync(args.device)
        start = time.perf_counter()
        probs, lengths = classify(model, tok, texts, args.budget, args.device, pad)
        seconds = time.perf_counter() - start
    assert torch.isfinite(probs).all()
    bu.emit(args, bu.serve_row(seconds, lengths, impl="transformers", attention=impl,
                               batches="length-sorted, padded", budget=args.budget,
                               max_len=args.max_len))


def main():
    args = bu.parse_args(__doc__, ["train", "serve", "memory"])
    {"train": train, "serve": serve, "memory": memory}[args.mode](args)


if __name__ == "__main__":
    main()
