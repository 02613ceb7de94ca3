"""Hugging Face anchor: transformers' BertForSequenceClassification (SDPA attention, bf16
autocast, fused AdamW) on padless's token lengths, with the same budget of token slots per step.

Strategies: pad_to_max (b = budget / max_len, every row max_len), pad_longest (random batches of
b, padded to the longest), group_by_length (HF's megabatch sort: megabatches of 50*b sorted by
length, padded to the longest). Prints one JSON line per strategy.
"""
import torch
from transformers import BertConfig, BertForSequenceClassification

import common


def make_batches(lengths, strategy, b, max_len, seed, vocab, n_batches):
    order = common.shuffled(lengths, seed)
    if strategy == "group_by_length":
        mb = 50 * b
        grouped = []
        for i in range(0, len(order), mb):
            chunk = sorted(order[i:i + mb], key=lambda j: -lengths[j])
            grouped.extend(chunk)
        order = grouped
    groups = [order[i:i + b] for i in range(0, len(order) - b + 1, b)]
    g = torch.Generator().manual_seed(seed)
    if strategy == "group_by_length":
        # Shuffle the batches of the whole epoch before taking the first n_batches: otherwise the
        # run would only see the first megabatch's longest (and densest) batches.
        perm = torch.randperm(len(groups), generator=g).tolist()
        groups = [groups[i] for i in perm]
    batches = []
    for idx in groups[:n_batches]:
        lens = [lengths[j] for j in idx]
        width = max_len if strategy == "pad_to_max" else max(lens)
        ids = torch.zeros(b, width, dtype=torch.long)
        mask = torch.zeros(b, width, dtype=torch.long)
        for r, n in enumerate(lens):
            ids[r, :n] = torch.randint(5, vocab, (n,), generator=g)
            mask[r, :n] = 1
        batches.append({"ids": ids.cuda(), "mask": mask.cuda(),
                        "labels": torch.randint(0, 2, (b,), generator=g).cuda(),
                        "real": sum(lens), "slots": b * width, "lens": lens})
    return batches


def main():
    args = common.parse_args(__doc__, ["pad_to_max", "pad_longest", "group_by_length"])
    lengths = common.load_lengths(args.lengths, args.max_len)
    torch.manual_seed(args.seed)
    peak_tflops = common.bf16_matmul_tflops()
    config = BertConfig(vocab_size=args.vocab, hidden_size=768, num_hidden_layers=12,
                        num_attention_heads=12, intermediate_size=3072,
                        max_position_embeddings=args.max_len, num_labels=2,
                        attn_implementation="sdpa")
    model = BertForSequenceClassification(config).cuda()
    if args.checkpoint:
        model.gradient_checkpointing_enable()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def step(b):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=b["ids"], attention_mask=b["mask"], labels=b["labels"])
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    b = args.budget // args.max_len
    for strategy in args.strategies.split(","):
        batches = make_batches(lengths, strategy, b, args.max_len, args.seed, args.vocab,
                               args.warmup + args.steps)
        seconds, real, slots, static = common.time_steps(
            step, batches, args.warmup, args.steps, common.param_bytes(model))
        flops = sum(sum(n * common.bert_base_flops_per_token(n) for n in bb["lens"])
                    for bb in batches[args.warmup:args.warmup + args.steps])
        common.report(args, "hf_transformers", strategy, seconds, real, slots, flops, static, peak_tflops)


if __name__ == "__main__":
    main()
