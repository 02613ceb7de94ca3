"""Plain-PyTorch packed anchor: the BERT-base encoder in eager PyTorch, trained on flat packed
batches (no padding at all) through torch.nn.attention.varlen.varlen_attn, bf16 autocast, fused
AdamW. Batches hold up to `budget` real tokens (sequences truncated at max_len, taken in a random
order). The strongest peer a Python user can build today; prints one JSON line.
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention.varlen import varlen_attn
from torch.utils.checkpoint import checkpoint

import common

H, HEADS, FFN, LAYERS = 768, 12, 3072, 12


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(H, 3 * H)
        self.out = nn.Linear(H, H)
        self.ln1 = nn.LayerNorm(H)
        self.fc1 = nn.Linear(H, FFN)
        self.fc2 = nn.Linear(FFN, H)
        self.ln2 = nn.LayerNorm(H)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, cu, max_len):
        t = x.shape[0]
        q, k, v = self.qkv(x).view(t, 3, HEADS, H // HEADS).unbind(1)
        a = varlen_attn(q, k, v, cu, cu, max_len, max_len).reshape(t, H)
        x = self.ln1(x + self.drop(self.out(a)))
        return self.ln2(x + self.drop(self.fc2(F.gelu(self.fc1(x)))))


class Encoder(nn.Module):
    def __init__(self, vocab, max_len, use_checkpoint):
        super().__init__()
        self.tok = nn.Embedding(vocab, H)
        self.pos = nn.Embedding(max_len, H)
        self.ln = nn.LayerNorm(H)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.head = nn.Linear(H, 2)
        self.use_checkpoint = use_checkpoint

    def forward(self, ids, pos, cu, max_len):
        x = self.ln(self.tok(ids) + self.pos(pos))
        for layer in self.layers:
            if self.use_checkpoint:
                x = checkpoint(layer, x, cu, max_len, use_reentrant=False)
            else:
                x = layer(x, cu, max_len)
        return self.head(x[cu[:-1].long()])


def make_batches(lengths, budget, max_len, seed, vocab, n_batches):
    order = common.shuffled(lengths, seed)
    g = torch.Generator().manual_seed(seed)
    batches, cur = [], []

    def flush():
        lens = [lengths[j] for j in cur]
        cu = torch.tensor([0] + lens, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        pos = torch.cat([torch.arange(n) for n in lens])
        batches.append({"ids": torch.randint(5, vocab, (sum(lens),), generator=g).cuda(),
                        "pos": pos.cuda(), "cu": cu.cuda(), "max": max(lens),
                        "labels": torch.randint(0, 2, (len(lens),), generator=g).cuda(),
                        "real": sum(lens), "slots": sum(lens), "lens": lens})

    used = 0
    for j in order:
        if used + lengths[j] > budget:
            flush()
            cur, used = [], 0
            if len(batches) == n_batches:
                break
        cur.append(j)
        used += lengths[j]
    if cur and len(batches) < n_batches:
        flush()
    return batches


def main():
    args = common.parse_args(__doc__, ["packed_varlen"])
    lengths = common.load_lengths(args.lengths, args.max_len)
    torch.manual_seed(args.seed)
    peak_tflops = common.bf16_matmul_tflops()
    model = Encoder(args.vocab, args.max_len, args.checkpoint).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def step(b):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(b["ids"], b["pos"], b["cu"], b["max"])
            loss = F.cross_entropy(logits.float(), b["labels"])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    batches = make_batches(lengths, args.budget, args.max_len, args.seed, args.vocab,
                           args.warmup + args.steps)
    seconds, real, slots, static = common.time_steps(
        step, batches, args.warmup, args.steps, common.param_bytes(model))
    flops = sum(sum(n * common.bert_base_flops_per_token(n) for n in bb["lens"])
                for bb in batches[args.warmup:args.warmup + args.steps])
    common.report(args, "plain_pytorch", "packed_varlen", seconds, real, slots, flops, static, peak_tflops)


if __name__ == "__main__":
    main()
