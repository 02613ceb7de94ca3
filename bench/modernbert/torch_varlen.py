#!/usr/bin/env python3
"""Plain-PyTorch varlen ModernBERT: the peer a Python user can write today. Its own minimal
modules, named as transformers' so that the same model.safetensors loads into them strictly; flat
packed batches (no padding at all) with cu_seqlens; torch.nn.attention.varlen.varlen_attn (flash)
with the sliding windows of ModernBERT's local layers (window_size (local_attention / 2) on each
side, global every global_attn_every_n_layers); rotary with separate global and local theta as
transformers applies it (in fp32); GeGLU; bf16 autocast and fused AdamW for training, bf16 weights
for serving. On the CPU (the tiny test) attention is one masked SDPA over the flat batch instead.

  train   real tokens/s over --steps steps after --warmup, on batches of up to --budget real
          tokens (sequences in a random order, first fit), the token ids of the model's tokenizer
  serve   texts in, class probabilities out, timed from raw text: `tokenizers` encode_batch,
          batches of up to --budget real tokens in arrival order, softmax, one copy to the host
  memory  peak memory per real token at each of --lens (bench_util.memory_sweep), packed
  check   logits of a packed batch of mixed lengths against transformers' on each text alone

  python3 bench/modernbert/torch_varlen.py train --model DIR --data TSV [--json OUT.jsonl]
"""
import json
import math
import os
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import nn

import bench_util as bu

try:
    from torch.nn.attention.varlen import varlen_attn
except ImportError:  # torch before 2.10: the masked fallback below (slow; the row says so)
    varlen_attn = None

ACTIVATIONS = {"gelu": F.gelu, "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
               "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu}


class Packed:
    """A flat batch's layout: cu_seqlens, the longest sequence, each token's position and
    sequence (the last two for rotary, the CPU mask and mean pooling)."""

    def __init__(self, lens, device):
        self.lens = lens
        cu = torch.tensor([0] + lens, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        self.cu = cu.to(device)
        self.max_len = max(lens)
        self.pos = torch.cat([torch.arange(n) for n in lens]).to(device)
        self.seg = torch.repeat_interleave(torch.arange(len(lens)), torch.tensor(lens)).to(device)


def attention_kind(device):
    if device.startswith("cuda") and varlen_attn is not None:
        return "varlen_attn (flash, windows)"
    return "sdpa with a block-diagonal band mask (fallback)"


def attend(q, k, v, p, window):
    """Attention of (T, heads, d) q, k, v within each sequence, within +-window tokens if >= 0."""
    if q.is_cuda and varlen_attn is not None:
        w = (window, window) if window >= 0 else (-1, -1)
        return varlen_attn(q, k, v, p.cu, p.cu, p.max_len, p.max_len, window_size=w)
    allowed = p.seg[:, None] == p.seg[None, :]
    if window >= 0:
        allowed &= (p.pos[:, None] - p.pos[None, :]).abs() <= window
    o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None],
                                       v.transpose(0, 1)[None], attn_mask=allowed)
    return o[0].transpose(0, 1)


def rope_table(pos, theta, dim):
    exponents = torch.arange(0, dim, 2, device=pos.device, dtype=torch.float) / dim
    inv_freq = 1.0 / (theta ** exponents)
    freqs = pos[:, None].float() * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)[:, None, :]
    return emb.cos(), emb.sin()


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def rotary(q, k, cos, sin):
    # In fp32 and back, as transformers' apply_rotary_pos_emb.
    qf, kf = q.float(), k.float()
    return ((qf * cos + rotate_half(qf) * sin).to(q.dtype),
            (kf * cos + rotate_half(kf) * sin).to(k.dtype))


def layer_norm(c):
    return nn.LayerNorm(c["hidden_size"], eps=c["norm_eps"], bias=c["norm_bias"])


class Attention(nn.Module):
    def __init__(self, c, window):
        super().__init__()
        h = c["hidden_size"]
        self.heads, self.window = c["num_attention_heads"], window
        self.Wqkv = nn.Linear(h, 3 * h, bias=c["attention_bias"])
        self.Wo = nn.Linear(h, h, bias=c["attention_bias"])

    def forward(self, x, rope, p):
        t, h = x.shape
        q, k, v = self.Wqkv(x).view(t, 3, self.heads, h // self.heads).unbind(1)
        q, k = rotary(q, k, *rope)
        return self.Wo(attend(q, k, v, p, self.window).reshape(t, h))


class Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.act = ACTIVATIONS[c["hidden_activation"]]
        self.Wi = nn.Linear(c["hidden_size"], 2 * c["intermediate_size"], bias=c["mlp_bias"])
        self.Wo = nn.Linear(c["intermediate_size"], c["hidden_size"], bias=c["mlp_bias"])

    def forward(self, x):
        value, gate = self.Wi(x).chunk(2, dim=-1)  # GeGLU: one GEMM gives value and gate
        return self.Wo(self.act(value) * gate)


class Layer(nn.Module):
    def __init__(self, c, index, window):
        super().__init__()
        self.attn_norm = nn.Identity() if index == 0 else layer_norm(c)  # as transformers'
        self.attn = Attention(c, window)
        self.mlp_norm = layer_norm(c)
        self.mlp = Mlp(c)

    def forward(self, x, ropes, p):
        x = x + self.attn(self.attn_norm(x), ropes[self.attn.window >= 0], p)
        return x + self.mlp(self.mlp_norm(x))


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.tok_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.norm = layer_norm(c)


class Backbone(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.layers = nn.ModuleList(Layer(c, i, w) for i, w in enumerate(c["windows"]))
        self.final_norm = layer_norm(c)
        self.thetas = (c["global_theta"], c["local_theta"])
        self.head_dim = c["hidden_size"] // c["num_attention_heads"]

    def forward(self, ids, p):
        x = self.embeddings.norm(self.embeddings.tok_embeddings(ids))
        # One cos/sin table per theta for the whole batch, shared by the layers (key: local?).
        ropes = {False: rope_table(p.pos, self.thetas[0], self.head_dim),
                 True: rope_table(p.pos, self.thetas[1], self.head_dim)}
        for layer in self.layers:
            x = layer(x, ropes, p)
        return self.final_norm(x)


class Head(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"], bias=c["classifier_bias"])
        self.norm = layer_norm(c)


class ModernBertVarlen(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = Backbone(c)
        self.head = Head(c)
        self.classifier = nn.Linear(c["hidden_size"], c["num_labels"])
        self.act = ACTIVATIONS[c["classifier_activation"]]
        self.pooling = c["classifier_pooling"]

    def forward(self, ids, p):
        x = self.model(ids, p)
        if self.pooling == "cls":
            pooled = x[p.cu[:-1].long()]
        else:  # mean over each sequence's tokens
            sums = torch.zeros(len(p.lens), x.shape[1], device=x.device, dtype=x.dtype)
            lens = torch.tensor(p.lens, device=x.device, dtype=x.dtype)[:, None]
            pooled = sums.index_add_(0, p.seg, x) / lens
        return self.classifier(self.head.norm(self.act(self.head.dense(pooled))))


def read_config(model_dir):
    """config.json in transformers 5's form (layer_types, rope_parameters) or 4's (thetas)."""
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    defaults = dict(norm_eps=1e-5, norm_bias=False, attention_bias=False, mlp_bias=False,
                    classifier_bias=False, classifier_pooling="cls", hidden_activation="gelu",
                    classifier_activation="gelu", global_attn_every_n_layers=3,
                    local_attention=128)
    c = {**defaults, **c}
    every, n = c["global_attn_every_n_layers"], c["num_hidden_layers"]
    types = c.get("layer_types") or ["full_attention" if i % every == 0 else "sliding_attention"
                                     for i in range(n)]
    c["windows"] = [-1 if t == "full_attention" else c["local_attention"] // 2 for t in types]
    rope = c.get("rope_parameters") or {}
    c["global_theta"] = (rope.get("full_attention") or {}).get(
        "rope_theta", c.get("global_rope_theta", 160000.0))
    c["local_theta"] = (rope.get("sliding_attention") or {}).get(
        "rope_theta", c.get("local_rope_theta") or c["global_theta"])
    c["num_labels"] = len(c.get("id2label") or {0: 0, 1: 1})
    return c


def load_model(model_dir):
    model = ModernBertVarlen(read_config(model_dir))
    model.load_state_dict(load_file(os.path.join(model_dir, "model.safetensors")), strict=True)
    return model


def packed_batch(seqs, labels, device):
    lens = [len(s) for s in seqs]
    return {"ids": torch.tensor([t for s in seqs for t in s]).to(device),
            "packed": Packed(lens, device), "labels": torch.tensor(labels).to(device),
            "real": sum(lens), "slots": sum(lens)}


def training_step(args, model):
    return bu.training_step(args, model, lambda b: F.cross_entropy(
        model(b["ids"], b["packed"]).float(), b["labels"]))


def train(args):
    ids, labels = bu.tokenized(args)
    model = load_model(args.model).to(args.device).train()
    step = training_step(args, model)
    groups = bu.spread_sample(bu.first_fit_batches([len(s) for s in ids], args.budget, args.seed),
                              args.warmup + args.steps, args.seed)
    batches = [packed_batch([ids[i] for i in g], [labels[i] for i in g], args.device)
               for g in groups]
    seconds, real, slots, peak = bu.time_steps(step, batches, args.warmup, args.device)
    bu.emit(args, bu.train_row(args, seconds, real, slots, peak, args.steps, impl="torch_varlen",
                               attention=attention_kind(args.device), budget=args.budget,
                               max_len=args.max_len))


def memory(args):
    ids, labels = bu.tokenized(args)
    model = load_model(args.model).to(args.device).train()
    bu.memory_sweep(args, ids, labels, lambda s, l: packed_batch(s, l, args.device),
                    training_step(args, model), "torch_varlen",
                    attention=attention_kind(args.device))


def classify(model, tok, texts, budget, device):
    """Probabilities of each text, from raw text: tokenize, pack in arrival order, forward."""
    ids = bu.encode(tok, texts)
    outs, cur = [], []
    for i, seq in enumerate(ids + [None]):
        if cur and (seq is None or sum(len(s) for s in cur) + len(seq) > budget):
            b = packed_batch(cur, [0] * len(cur), device)
            outs.append(torch.softmax(model(b["ids"], b["packed"]).float(), dim=-1))
            cur = []
        if seq is not None:
            cur.append(seq)
    return torch.cat(outs).cpu(), [len(s) for s in ids]


def serve(args):
    texts, _ = bu.read_tsv(args.data, args.limit)
    tok = bu.load_tokenizer(args.model, args.max_len)
    dtype = torch.bfloat16 if args.amp == "bf16" else torch.float32
    model = load_model(args.model).to(args.device, dtype=dtype).eval()
    with torch.inference_mode():
        classify(model, tok, texts[:512], args.budget, args.device)  # warm-up
        bu.sync(args.device)
        start = time.perf_counter()
        probs, lengths = classify(model, tok, texts, args.budget, args.device)
        seconds = time.perf_counter() - start
    assert probs.shape[0] == len(texts) and torch.isfinite(probs).all()
    bu.emit(args, bu.serve_row(seconds, lengths, impl="torch_varlen", budget=args.budget,
                               attention=attention_kind(args.device), max_len=args.max_len))


def check(args):
    """Max |logits difference| against transformers (eager fp32 on the CPU; sdpa under bf16 autocast
    on CUDA), each text alone there and all packed into one batch here, so that a window or a
    rotary position leaking across sequences shows."""
    from transformers import AutoModelForSequenceClassification
    ids, _ = bu.tokenized(args)
    impl = "eager" if args.device == "cpu" else "sdpa"
    ref = AutoModelForSequenceClassification.from_pretrained(args.model, attn_implementation=impl)
    ref = ref.to(args.device).eval()
    mine = load_model(args.model).to(args.device).eval()
    b = packed_batch(ids, [0] * len(ids), args.device)
    with torch.no_grad(), bu.autocast(args.device, args.amp):
        got = mine(b["ids"], b["packed"]).float()
        want = torch.cat([ref(input_ids=torch.tensor([s], device=args.device)).logits.float()
                          for s in ids])
    diff = (got - want).abs().max().item()
    bu.emit(args, {"table": "check", "impl": "torch_varlen", "texts": len(ids),
                   "lengths": [len(s) for s in ids], "reference": f"transformers {impl}",
                   "max_abs_diff": diff, "max_abs_logit": want.abs().max().item(),
                   "ok": math.isfinite(diff) and diff <= (1e-4 if args.amp == "off" else 5e-2)})


def main():
    args = bu.parse_args(__doc__, ["train", "serve", "memory", "check"])
    {"train": train, "serve": serve, "memory": memory, "check": check}[args.mode](args)


if __name__ == "__main__":
    main()
