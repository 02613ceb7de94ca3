"""Anchors of the embedding and rerank serving benchmark (bench/serve/embed_serve.sh, issue 44):
the same texts and the same model files as padless_bench_embed, one JSON line per anchor.

--task embed (--model a sentence-transformers directory, bench/serve/make_st_model.py):
  st_encode_<amp>  sentence-transformers `model.encode(texts, batch_size=64)` (it sorts by
                   length): text in, normalized vectors out as numpy; fp32 and/or bf16 (--amps)
  hf_sorted        transformers AutoModel (SDPA), batches of 64 sorted by length and padded to the
                   longest, masked mean pooling, L2 normalization, vectors to the host; model only
                   (ids tokenized beforehand, on the device)
  hf_e2e           the same with AutoTokenizer inside the timed loop: text in, vectors out
  torch_varlen     plain PyTorch: torch_packed.py's BERT-base encoder (flash varlen attention)
                   with the checkpoint's weights in bf16, flat varlen batches of up to --budget
                   real tokens (no padding), a segment mean in fp32, normalization, vectors to the
                   host; model only (GPU only)
  hf_int8_cpu      (--device cpu) hf_sorted with quantize_dynamic int8 Linear layers
--task rerank (--model a cross-encoder, num_labels=1; --pairs a TSV label, query, text):
  ce_predict_<amp> sentence-transformers `CrossEncoder.predict(pairs, batch_size=64)`: sigmoid
                   scores of (query, text) pairs
  hf_sorted, torch_varlen, hf_int8_cpu  as above on the pairs (token types, pooler, classifier,
                   sigmoid), model only

Every model-only anchor runs the very token ids of the HF tokenizer (truncation at --max-len,
longest first for pairs): the token lengths padless's engine sees. Each timed function runs once
over every batch first (each new shape may build kernels), then is timed over all of them.
The outputs of the first --keep texts (vectors, or scores) go to VECTORS_DIR/<task>_<name>.npy,
in the input order, so that padless's can be compared with them (bench/serve/embed_table.py).

  python3 embed_anchors.py --task embed --model ST_DIR --data IMDB.tsv --limit 25000 \
      --device cuda --anchors st_encode,hf_sorted,hf_e2e,torch_varlen --amps fp32,bf16 \
      --vectors-dir OUT [--st-limit-fp32 5000]
  python3 embed_anchors.py --write-pairs PAIRS.tsv --data IMDB.tsv --limit 25000
"""
import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import common
import torch_packed
from torch_packed import Encoder

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def read_texts(path, limit):
    """label<TAB>text rows (shared/data's TSV); the first row is skipped when it is a header."""
    texts = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i == 0 and line.startswith("label\t"):
                continue
            texts.append(line.rstrip("\n").split("\t", 1)[-1])
            if limit and len(texts) >= limit:
                break
    return texts


def read_pairs(path, limit):
    pairs = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i == 0 and line.startswith("label\t"):
                continue
            _, query, text = line.rstrip("\n").split("\t", 2)
            pairs.append((query, text))
            if limit and len(pairs) >= limit:
                break
    return pairs


def write_pairs(path, texts):
    """(query, text) pairs: each query is the first 8 words of another review, deterministic."""
    n = len(texts)
    with open(path, "w", encoding="utf-8") as f:
        f.write("label\ttext\ttext_pair\n")
        for i, text in enumerate(texts):
            query = " ".join(texts[(7 * i + 3) % n].split()[:8])
            f.write(f"0\t{query}\t{text}\n")


class Inputs:
    """The token ids of every input as the HF tokenizer cuts them, and their lengths."""

    def __init__(self, model_dir, inputs, max_len):
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        tok.enable_truncation(max_len)
        tok.no_padding()
        enc = tok.encode_batch(inputs)
        self.ids = [e.ids for e in enc]
        self.types = [e.type_ids for e in enc]
        self.lengths = [len(e.ids) for e in enc]


class PooledEncoder(Encoder):
    """torch_packed.py's encoder with BERT's token types, pooler and a one-label classifier, the
    checkpoint's weights loaded (so that it computes the same function as the other paths)."""

    def __init__(self, vocab, max_len, eps):
        super().__init__(vocab, max_len, False)
        self.types = nn.Embedding(2, torch_packed.H)
        self.pooler = nn.Linear(torch_packed.H, torch_packed.H)
        self.score = nn.Linear(torch_packed.H, 1)
        for m in self.modules():
            if isinstance(m, nn.LayerNorm):
                m.eps = eps

    def hidden(self, b):
        x = self.ln(self.tok(b["ids"]) + self.pos(b["pos"]) + self.types(b["types"]))
        for layer in self.layers:
            x = layer(x, b["cu"], b["max"])
        return x

    def load_bert(self, path):
        from safetensors.torch import load_file
        w = {k.removeprefix("bert."): v for k, v in load_file(path).items()}
        own = {"tok.weight": w["embeddings.word_embeddings.weight"],
               "pos.weight": w["embeddings.position_embeddings.weight"],
               "types.weight": w["embeddings.token_type_embeddings.weight"],
               "ln.weight": w["embeddings.LayerNorm.weight"],
               "ln.bias": w["embeddings.LayerNorm.bias"]}
        for i in range(len(self.layers)):
            p, q = f"encoder.layer.{i}.", f"layers.{i}."
            for s in ("weight", "bias"):
                own[q + "qkv." + s] = torch.cat(
                    [w[p + f"attention.self.{n}.{s}"] for n in ("query", "key", "value")])
                own[q + "out." + s] = w[p + "attention.output.dense." + s]
                own[q + "ln1." + s] = w[p + "attention.output.LayerNorm." + s]
                own[q + "fc1." + s] = w[p + "intermediate.dense." + s]
                own[q + "fc2." + s] = w[p + "output.dense." + s]
                own[q + "ln2." + s] = w[p + "output.LayerNorm." + s]
        for s in ("weight", "bias"):
            if "pooler.dense." + s in w:
                own["pooler." + s] = w["pooler.dense." + s]
            if "classifier." + s in w:
                own["score." + s] = w["classifier." + s]
        missing = set(self.state_dict()) - set(own) - {"head.weight", "head.bias"}
        if any(not k.startswith(("pooler.", "score.")) for k in missing):
            raise SystemExit(f"{path}: no weights for {sorted(missing)}")
        self.load_state_dict(own, strict=False)
        return self


def varlen_batches(inputs, budget, device):
    batches, cur = [], []

    def flush():
        lens = [inputs.lengths[i] for i in cur]
        cu = torch.tensor([0] + lens, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        batches.append({
            "ids": torch.tensor([t for i in cur for t in inputs.ids[i]]).to(device),
            "types": torch.tensor([t for i in cur for t in inputs.types[i]]).to(device),
            "pos": torch.cat([torch.arange(n) for n in lens]).to(device),
            "seg": torch.repeat_interleave(torch.arange(len(lens)), torch.tensor(lens)).to(device),
            "lens": torch.tensor(lens, dtype=torch.float32).to(device),
            "cu": cu.to(device), "max": max(lens), "first": cur[0]})

    used = 0
    for i, n in enumerate(inputs.lengths):
        if cur and used + n > budget:
            flush()
            cur, used = [], 0
        cur.append(i)
        used += n
    if cur:
        flush()
    return batches


def padded_batches(inputs, batch, device):
    order = sorted(range(len(inputs.lengths)), key=lambda i: -inputs.lengths[i])
    out = []
    for k in range(0, len(order), batch):
        rows = order[k:k + batch]
        width = max(inputs.lengths[i] for i in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        types = torch.zeros_like(ids)
        mask = torch.zeros_like(ids)
        for r, i in enumerate(rows):
            n = inputs.lengths[i]
            ids[r, :n] = torch.tensor(inputs.ids[i])
            types[r, :n] = torch.tensor(inputs.types[i])
            mask[r, :n] = 1
        out.append({"ids": ids.to(device), "types": types.to(device), "mask": mask.to(device),
                    "rows": rows})
    return out


def mean_pool(hidden, mask):
    m = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * m).sum(1).float() / mask.sum(1, keepdim=True).float()
    return F.normalize(pooled, dim=-1)


class Runner:
    def __init__(self, args, inputs, peak):
        from transformers import AutoConfig
        self.args, self.inputs, self.peak = args, inputs, peak
        c = AutoConfig.from_pretrained(args.model)
        # The forward's FLOPs (MFU) of the checkpoint's own shape.
        self.shape = dict(hidden=c.hidden_size, layers=c.num_hidden_layers,
                          ffn=c.intermediate_size)
        self.sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

    def timed(self, fn, batches):
        # Warm-up over every batch, as serve_anchors.py does: each new shape may build kernels or
        # attention plans, which a server has done long before; only the second pass is timed.
        for b in batches:
            fn(b)
        self.sync()
        start = time.perf_counter()
        for b in batches:
            fn(b)
        self.sync()
        return time.perf_counter() - start

    def report(self, name, amp, seconds, count):
        a = self.args
        lengths = self.inputs.lengths[:count]
        flops = sum(n * common.bert_base_flops_per_token(n, **self.shape) / 3 for n in lengths)
        tflops = flops / seconds / 1e12
        row = {"name": name, "task": a.task, "mode": "offline", "device": a.device, "amp": amp,
               "texts": count, "tokens": sum(lengths), "seconds": seconds,
               "texts_per_s": count / seconds, "real_tokens_per_s": sum(lengths) / seconds,
               "tflops": tflops, "matmul_tflops": self.peak,
               "mfu": tflops / self.peak if self.peak else 0.0, "torch": torch.__version__}
        print(json.dumps(row), flush=True)

    def keep(self, name, values):
        if self.args.vectors_dir:
            out = np.asarray(values, dtype=np.float32)[:self.args.keep]
            np.save(os.path.join(self.args.vectors_dir, f"{self.args.task}_{name}.npy"), out)


def run_sentence_transformers(run, data, amp, limit):
    a = run.args
    dtype = DTYPES[amp]
    data = data[:limit] if limit else data
    if a.task == "embed":
        from sentence_transformers import SentenceTransformer
        model = SentenceTransformer(a.model, device=a.device).to(dtype)
        call = lambda chunk: model.encode(chunk, batch_size=a.batch, convert_to_numpy=True)
        name = f"st_encode_{amp}"
    else:
        from sentence_transformers import CrossEncoder
        model = CrossEncoder(a.model, device=a.device, max_length=a.max_len).to(dtype)
        call = lambda chunk: model.predict(chunk, batch_size=a.batch, convert_to_numpy=True)
        name = f"ce_predict_{amp}"
    call(data)  # the warm-up pass: every batch shape once
    run.sync()
    start = time.perf_counter()
    out = call(data)
    run.sync()
    run.report(name, amp, time.perf_counter() - start, len(data))
    run.keep(name, np.asarray(out, dtype=np.float32))
    del model


def hf_model(a, dtype):
    from transformers import AutoModel, AutoModelForSequenceClassification
    cls = AutoModel if a.task == "embed" else AutoModelForSequenceClassification
    return cls.from_pretrained(a.model, attn_implementation="sdpa").to(a.device, dtype).eval()


def hf_outputs(a, model, ids, types, mask):
    if a.task == "embed":
        return mean_pool(model(input_ids=ids, attention_mask=mask).last_hidden_state, mask)
    logits = model(input_ids=ids, token_type_ids=types, attention_mask=mask).logits
    return torch.sigmoid(logits.float()).squeeze(-1)


def run_hf_sorted(run, model, name, amp):
    a = run.args
    batches = padded_batches(run.inputs, a.batch, a.device)
    out = [None] * len(run.inputs.lengths)

    @torch.inference_mode()
    def fn(b):
        for i, v in zip(b["rows"], hf_outputs(a, model, b["ids"], b["types"], b["mask"]).cpu()):
            out[i] = v.numpy()

    run.report(name, amp, run.timed(fn, batches), len(out))
    run.keep(name, np.stack(out[:a.keep]))


def run_hf_e2e(run, data, model, amp):
    """AutoTokenizer inside the timed loop; texts sorted by length (characters) as ST sorts."""
    from transformers import AutoTokenizer
    a = run.args
    tok = AutoTokenizer.from_pretrained(a.model)
    pairs = a.task == "rerank"
    chars = [len(d[0]) + len(d[1]) if pairs else len(d) for d in data]
    order = sorted(range(len(data)), key=lambda i: -chars[i])
    chunks = [order[k:k + a.batch] for k in range(0, len(order), a.batch)]
    out = [None] * len(data)

    @torch.inference_mode()
    def fn(rows):
        first = [data[i][0] if pairs else data[i] for i in rows]
        second = [data[i][1] for i in rows] if pairs else None
        enc = tok(first, second, padding=True, truncation=True, max_length=a.max_len,
                  return_tensors="pt").to(a.device)
        v = hf_outputs(a, model, enc["input_ids"], enc.get("token_type_ids"), enc["attention_mask"])
        for i, row in zip(rows, v.cpu()):
            out[i] = row.numpy()

    run.report("hf_e2e", amp, run.timed(fn, chunks), len(data))
    run.keep("hf_e2e", np.stack(out[:a.keep]))


def run_torch_varlen(run):
    a = run.args
    from transformers import AutoConfig
    config = AutoConfig.from_pretrained(a.model)
    if (config.hidden_size, config.num_hidden_layers) != (torch_packed.H, torch_packed.LAYERS):
        print(f"torch_varlen: skipped, {a.model} is not the BERT-base shape", flush=True)
        return
    model = PooledEncoder(config.vocab_size, config.max_position_embeddings,
                          config.layer_norm_eps).load_bert(
                              os.path.join(a.model, "model.safetensors"))
    model = model.to(a.device, torch.bfloat16).eval()
    batches = varlen_batches(run.inputs, a.budget, a.device)
    out = []

    @torch.inference_mode()
    def fn(b):
        x = model.hidden(b)
        if a.task == "embed":
            pooled = torch.zeros(len(b["lens"]), x.shape[1], device=x.device).index_add_(
                0, b["seg"], x.float()) / b["lens"].unsqueeze(1)
            v = F.normalize(pooled, dim=-1)
        else:
            first = x[b["cu"][:-1].long()]
            v = torch.sigmoid(model.score(torch.tanh(model.pooler(first))).float()).squeeze(-1)
        if b["first"] < a.keep:
            out.append(v.cpu().numpy())
        else:
            v.cpu()

    seconds = run.timed(fn, batches)
    run.report("torch_varlen", "bf16", seconds, len(run.inputs.lengths))
    run.keep("torch_varlen", np.concatenate(out[len(out) // 2:]))  # the timed pass's


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--task", choices=["embed", "rerank"], default="embed")
    p.add_argument("--model", help="a sentence-transformers directory (embed) or a cross-encoder")
    p.add_argument("--data", default="", help="texts (TSV label<TAB>text), --task embed")
    p.add_argument("--pairs", default="", help="pairs (TSV label, query, text), --task rerank")
    p.add_argument("--write-pairs", default="", help="write --data's pairs here, then exit")
    p.add_argument("--limit", type=int, default=0, help="inputs (0: all)")
    p.add_argument("--st-limit-fp32", type=int, default=0,
                   help="fewer inputs for the slow fp32 sentence-transformers row (0: --limit)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--anchors", default="st,hf_sorted,hf_e2e,torch_varlen")
    p.add_argument("--amps", default="fp32,bf16", help="sentence-transformers precisions")
    p.add_argument("--max-len", type=int, default=512)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--budget", type=int, default=32768, help="torch_varlen: real tokens a batch")
    p.add_argument("--keep", type=int, default=64, help="outputs saved for the parity check")
    p.add_argument("--vectors-dir", default="")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    a = p.parse_args()
    if a.write_pairs:
        write_pairs(a.write_pairs, read_texts(a.data, a.limit))
        return
    if not a.model or not (a.pairs if a.task == "rerank" else a.data):
        p.error("--model and --data (embed) or --pairs (rerank) are required")
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    data = read_pairs(a.pairs, a.limit) if a.task == "rerank" else read_texts(a.data, a.limit)
    if a.vectors_dir:
        os.makedirs(a.vectors_dir, exist_ok=True)
    cuda = a.device == "cuda"
    peak = common.bf16_matmul_tflops() if cuda else common.cpu_fp32_matmul_tflops()
    run = Runner(a, Inputs(a.model, data, a.max_len), peak)
    anchors = a.anchors.split(",")
    if "st" in anchors:
        for amp in a.amps.split(","):
            limit = a.st_limit_fp32 if amp == "fp32" and a.st_limit_fp32 else 0
            run_sentence_transformers(run, data, amp, limit)
    if "torch_varlen" in anchors and cuda:
        run_torch_varlen(run)
    amp = "bf16" if cuda else "fp32"
    if any(x in anchors for x in ("hf_sorted", "hf_e2e", "hf_int8_cpu")):
        model = hf_model(a, DTYPES[amp])
        if "hf_sorted" in anchors:
            run_hf_sorted(run, model, "hf_sorted", amp)
        if "hf_e2e" in anchors:
            run_hf_e2e(run, data, model, amp)
        if "hf_int8_cpu" in anchors and not cuda:
            q = torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
            run_hf_sorted(run, q, "hf_int8_cpu", "int8")


if __name__ == "__main__":
    main()
