"""Inference anchors for the serving benchmark (bench/serve/h200_serve.sh), each over the same
texts as padless_bench_serve and, for the model-only ones, the very token lengths its engine saw
(--lengths, written by padless_bench_serve --lengths_out). One JSON line per anchor:

  torch_varlen  plain PyTorch, the BERT-base encoder of torch_packed.py with weights in the
                dtype, flat varlen batches of up to --budget real tokens (no padding at all),
                inference mode; model only (random token ids of the given lengths)
  hf_sorted     transformers' BertForSequenceClassification (SDPA), batches of --batch texts
                sorted by length, padded to the longest; model only
  hf_arrival    the same in arrival order; model only
  hf_e2e        Hugging Face `tokenizers` (the model directory's tokenizer.json, truncation at
                --max-len) + the model, batches of --batch texts in arrival order: text in,
                probabilities out, as a user of transformers would serve
  hf_int8_cpu   (--device cpu) torch.ao.quantization.quantize_dynamic(int8) of the HF model,
                sorted batches, model only

The HF anchors load --hf-dir, the same checkpoint padless serves. On --device cpu the anchors run
in fp32. MFU: forward FLOPs (2 x matmul parameters + 4 L H per layer and token) over the dense
matmul rate measured in the same run (bf16 on the GPU, fp32 on the CPU).
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F

import common
from torch_packed import Encoder


SHAPE = {}  # hidden, layers, ffn of the served checkpoint (main reads its config)


def forward_flops(lengths):
    return sum(n * common.bert_base_flops_per_token(n, **SHAPE) / 3 for n in lengths)


def timed(fn, batches, device, repeats=1):
    # Warm-up over every batch: each new shape may build kernels or attention plans (cuDNN's SDPA
    # plans are per shape), which a server has done long before; only the second pass is timed.
    for b in batches:
        fn(b)
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        for b in batches:
            fn(b)
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats


def report(args, name, seconds, lengths, peak):
    flops = forward_flops(lengths)
    tflops = flops / seconds / 1e12
    row = {"name": name, "mode": "offline", "device": args.device, "texts": len(lengths),
           "seconds": seconds, "texts_per_s": len(lengths) / seconds,
           "real_tokens_per_s": sum(lengths) / seconds, "tflops": tflops, "matmul_tflops": peak,
           "mfu": tflops / peak if peak else 0.0, "torch": torch.__version__}
    print(json.dumps(row), flush=True)


def varlen_batches(lengths, budget, vocab, device, g):
    batches, cur = [], []

    def flush():
        cu = torch.tensor([0] + cur, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        pos = torch.cat([torch.arange(n) for n in cur])
        batches.append({"ids": torch.randint(5, vocab, (sum(cur),), generator=g).to(device),
                        "pos": pos.to(device), "cu": cu.to(device), "max": max(cur)})

    for n in lengths:
        if cur and sum(cur) + n > budget:
            flush()
            cur = []
        cur.append(n)
    if cur:
        flush()
    return batches


def padded_batches(lengths, batch, vocab, device, g, sort):
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i]) if sort else range(len(lengths))
    order = list(order)
    out = []
    for i in range(0, len(order), batch):
        lens = [lengths[j] for j in order[i:i + batch]]
        ids = torch.zeros(len(lens), max(lens), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, n in enumerate(lens):
            ids[r, :n] = torch.randint(5, vocab, (n,), generator=g)
            mask[r, :n] = 1
        out.append({"ids": ids.to(device), "mask": mask.to(device)})
    return out


def run_torch_varlen(args, lengths, dtype, peak):
    # torch_packed.py's encoder is the BERT-base shape; SHAPE must be it too for a fair MFU.
    model = Encoder(args.vocab, args.max_len, False).to(args.device, dtype).eval()
    batches = varlen_batches(lengths, args.budget, args.vocab, args.device,
                             torch.Generator().manual_seed(1))

    @torch.inference_mode()
    def fn(b):
        F.softmax(model(b["ids"], b["pos"], b["cu"], b["max"]).float(), -1).cpu()

    report(args, "torch_varlen", timed(fn, batches, args.device), lengths, peak)


def hf_model(args, dtype):
    from transformers import BertForSequenceClassification
    model = BertForSequenceClassification.from_pretrained(args.hf_dir, attn_implementation="sdpa")
    return model.to(args.device, dtype).eval()


def run_hf_padded(args, lengths, dtype, peak, model, sort, name):
    batches = padded_batches(lengths, args.batch, args.vocab, args.device,
                             torch.Generator().manual_seed(2), sort)

    @torch.inference_mode()
    def fn(b):
        F.softmax(model(input_ids=b["ids"], attention_mask=b["mask"]).logits.float(), -1).cpu()

    report(args, name, timed(fn, batches, args.device), lengths, peak)


def read_texts(path, limit):
    texts = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i == 0 and line.startswith("label\t"):
                continue
            texts.append(line.rstrip("\n").split("\t", 1)[-1])
            if limit and len(texts) >= limit:
                break
    return texts


def run_hf_e2e(args, dtype, peak, model):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(f"{args.hf_dir}/tokenizer.json")
    tok.enable_truncation(args.max_len)
    tok.enable_padding()
    texts = read_texts(args.data, args.limit)
    chunks = [texts[i:i + args.batch] for i in range(0, len(texts), args.batch)]
    lengths = []

    @torch.inference_mode()
    def fn(chunk):
        enc = tok.encode_batch(chunk)
        ids = torch.tensor([e.ids for e in enc]).to(args.device)
        mask = torch.tensor([e.attention_mask for e in enc]).to(args.device)
        F.softmax(model(input_ids=ids, attention_mask=mask).logits.float(), -1).cpu()

    seconds = timed(fn, chunks, args.device)
    for chunk in chunks:
        lengths += [sum(e.attention_mask) for e in tok.encode_batch(chunk)]
    report(args, "hf_e2e", seconds, lengths, peak)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--lengths", required=True, help="token lengths, one per line (the engine's)")
    p.add_argument("--hf-dir", required=True, help="the Hugging Face checkpoint padless serves")
    p.add_argument("--data", default="", help="the texts (TSV) for hf_e2e")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--device", default="cuda")
    p.add_argument("--max-len", type=int, default=512)
    p.add_argument("--budget", type=int, default=32768, help="torch_varlen: real tokens per batch")
    p.add_argument("--batch", type=int, default=64, help="HF: texts per batch")
    p.add_argument("--anchors", default="torch_varlen,hf_sorted,hf_arrival,hf_e2e")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    lengths = common.load_lengths(args.lengths, args.max_len)
    from transformers import BertConfig
    config = BertConfig.from_pretrained(args.hf_dir)
    args.vocab = config.vocab_size
    SHAPE.update(hidden=config.hidden_size, layers=config.num_hidden_layers,
                 ffn=config.intermediate_size)
    cuda = args.device == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    peak = common.bf16_matmul_tflops() if cuda else common.cpu_fp32_matmul_tflops()
    anchors = args.anchors.split(",")
    if "torch_varlen" in anchors:
        run_torch_varlen(args, lengths, dtype, peak)
    model = hf_model(args, dtype) if any(a.startswith("hf") for a in anchors) else None
    if "hf_sorted" in anchors:
        run_hf_padded(args, lengths, dtype, peak, model, True, "hf_sorted")
    if "hf_arrival" in anchors:
        run_hf_padded(args, lengths, dtype, peak, model, False, "hf_arrival")
    if "hf_e2e" in anchors and args.data:
        run_hf_e2e(args, dtype, peak, model)
    if "hf_int8_cpu" in anchors and not cuda:
        q = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        run_hf_padded(args, lengths, dtype, peak, q, True, "hf_int8_cpu")


if __name__ == "__main__":
    main()
