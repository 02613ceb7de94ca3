"""Shared pieces of the ModernBERT anchors (torch_varlen.py, hf_anchor.py): the data, the token ids
from Hugging Face `tokenizers` (the model directory's tokenizer.json, the one padless reads), the
batches, the timing and the JSON line. Every function works on the CPU too, so that the whole
benchmark can be tried at --shape tiny before a GPU run.
"""
import argparse
import contextlib
import json
import os
import random
import time

import torch


def parse_args(description, modes):
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("mode", choices=modes)
    p.add_argument("--model", required=True, help="Hugging Face ModernBERT directory")
    p.add_argument("--data", required=True, help="TSV with 'label' and 'text' columns")
    p.add_argument("--dataset", default="", help="the rows' 'dataset' field (default: file name)")
    p.add_argument("--limit", type=int, default=0, help="use at most this many texts (0: all)")
    p.add_argument("--max-len", type=int, default=8192, help="tokens per text, specials included")
    p.add_argument("--budget", type=int, default=16384,
                   help="train: token slots per step; serve: per forward (real tokens for "
                        "varlen, padded slots for transformers)")
    p.add_argument("--warmup", type=int, default=20, help="train: untimed steps first")
    p.add_argument("--steps", type=int, default=40, help="train: timed steps")
    p.add_argument("--lens", default="1024,2048,4096,8192", help="memory: sequence lengths")
    p.add_argument("--mem-steps", type=int, default=3, help="memory: steps measured per length")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--amp", default="", help="bf16 or off (default: bf16 on cuda, off on cpu)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--json", default="", help="append the JSON lines here too")
    args = p.parse_args()
    args.amp = args.amp or ("bf16" if args.device.startswith("cuda") else "off")
    args.dataset = args.dataset or os.path.splitext(os.path.basename(args.data))[0]
    torch.manual_seed(args.seed)
    return args


def read_tsv(path, limit=0):
    """(texts, label names) of a TSV with a header naming 'text' and 'label'."""
    texts, labels = [], []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        t, l = header.index("text"), header.index("label")
        for line in f:
            if not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            texts.append(fields[t])
            labels.append(fields[l])
            if limit and len(texts) == limit:
                break
    return texts, labels


def label_ids(names, model_dir):
    # The checkpoint's label2id, so that the anchors' labels are padless's (labels.json order).
    with open(os.path.join(model_dir, "config.json")) as f:
        label2id = json.load(f).get("label2id") or {}
    if not set(names) <= set(label2id):
        label2id = {n: i for i, n in enumerate(sorted(set(names)))}
    return [label2id[n] for n in names]


def load_tokenizer(model_dir, max_len):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.enable_truncation(max_len)
    return tok


def encode(tok, texts):
    """Token ids of each text ([CLS] text [SEP], truncated on the right at the tokenizer's max)."""
    return [e.ids for e in tok.encode_batch(texts)]


def tokenized(args):
    """(token ids, label ids) of --data's first --limit texts, as the anchors read them."""
    texts, names = read_tsv(args.data, args.limit)
    ids = encode(load_tokenizer(args.model, args.max_len), texts)
    return ids, label_ids(names, args.model)


def training_step(args, model, loss_of):
    """One AdamW step on a batch (fused on CUDA, as padless's optimizer): loss_of(batch) under
    autocast, backward, step."""
    opt = torch.optim.AdamW(model.parameters(), lr=3e-5, fused=args.device.startswith("cuda"))

    def step(b):
        with autocast(args.device, args.amp):
            loss = loss_of(b)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def first_fit_batches(lengths, budget, seed):
    """Indices of sequences packed into batches of at most `budget` real tokens: sequences in a
    random order, each into the first batch with room, as padless's packer fills its steps (a
    greedy fill in arrival order would leave long documents' batches a third empty)."""
    order = list(range(len(lengths)))
    random.Random(seed).shuffle(order)
    batches, room = [], []
    for i in order:
        n = min(lengths[i], budget)
        k = next((k for k, r in enumerate(room) if r >= n), len(batches))
        if k == len(batches):
            batches.append([])
            room.append(budget)
        batches[k].append(i)
        room[k] -= n
    return batches


def sorted_padded_batches(lengths, budget):
    """Indices of sequences sorted by length (longest first), cut into batches whose padded size
    (rows x the longest row) stays within `budget`: the least padding a padded batch can have."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches, cur = [], []
    for i in order:
        if cur and (len(cur) + 1) * lengths[cur[0]] > budget:
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


def spread_sample(batches, n, seed):
    """n batches spread evenly over the list (all lengths represented even when the list is sorted
    by length), in a random order; repeats the list when it is shorter than n."""
    if not batches:
        raise SystemExit("no batches: is the data empty?")
    picked = [batches[int(i * len(batches) / n) % len(batches)] for i in range(n)]
    random.Random(seed).shuffle(picked)
    return picked


def autocast(device, amp):
    if amp == "bf16":
        return torch.autocast(device.split(":")[0], dtype=torch.bfloat16)
    return contextlib.nullcontext()


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def reset_peak(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def peak_bytes(device):
    return torch.cuda.max_memory_allocated() if device.startswith("cuda") else None


def time_steps(step, batches, warmup, device):
    """Runs batches[:warmup] untimed, then the rest timed; returns (seconds, real tokens, slots,
    peak bytes of the timed steps: weights, gradients and optimizer state included)."""
    for b in batches[:warmup]:
        step(b)
    reset_peak(device)
    real = slots = 0
    start = time.perf_counter()
    for b in batches[warmup:]:
        step(b)
        real += b["real"]
        slots += b["slots"]
    sync(device)
    return time.perf_counter() - start, real, slots, peak_bytes(device)


def device_name(device):
    return torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"


def emit(args, row):
    """Prints one JSON line (and appends it to --json): the fields every table reads first."""
    row = {"dataset": args.dataset, "device": device_name(args.device), "amp": args.amp,
           **row, "torch": torch.__version__}
    line = json.dumps(row)
    print(line, flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(line + "\n")
    return row


def train_row(args, seconds, real, slots, peak, steps, **extra):
    per_step = real / max(steps, 1)
    return {"table": "train", "real_tokens_per_s": real / seconds,
            "padding_efficiency": real / max(slots, 1), "step_ms": 1000 * seconds / steps,
            "steps": steps, "real_tokens_per_step": per_step, "peak_allocated_bytes": peak,
            "peak_bytes_per_real_token": peak / per_step if peak else None, **extra}


def truncated(ids, n):
    """A token list cut to n tokens with its final [SEP] kept, as the tokenizer would truncate."""
    return ids if len(ids) <= n else ids[:n - 1] + ids[-1:]


def memory_sweep(args, ids, labels, make_batch, step, impl, **extra):
    """For each length L of --lens: --mem-steps training steps (after one untimed step) on
    budget // L randomly chosen texts truncated at L per step, and the peak allocated memory per
    real token (weights, gradients and AdamW state included). make_batch(seqs, labels) builds one
    batch the implementation's way (packed or padded); an out-of-memory length gives oom: true."""
    rng = random.Random(args.seed)
    for n in [int(x) for x in args.lens.split(",") if x]:
        rows = max(1, args.budget // n)
        picks = [[rng.randrange(len(ids)) for _ in range(rows)] for _ in range(args.mem_steps + 1)]
        row = {"table": "memory", "impl": impl, "seq_len": n, "rows": rows, **extra}
        try:
            batches = [make_batch([truncated(ids[i], n) for i in g], [labels[i] for i in g])
                       for g in picks]
            step(batches[0])  # optimizer state allocated; kernels chosen
            reset_peak(args.device)
            for b in batches[1:]:
                step(b)
            peak = peak_bytes(args.device)
            real = sum(b["real"] for b in batches[1:]) / args.mem_steps
            slots = sum(b["slots"] for b in batches[1:]) / args.mem_steps
            row.update(real_tokens_per_step=real, slots_per_step=slots, peak_allocated_bytes=peak,
                       peak_bytes_per_real_token=peak / real if peak else None)
        except torch.OutOfMemoryError as e:
            row.update(oom=True, error=str(e).splitlines()[0][:200])
        batches = None
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
        emit(args, row)


def serve_row(seconds, lengths, **extra):
    return {"table": "serve", "texts": len(lengths), "seconds": seconds,
            "texts_per_s": len(lengths) / seconds, "real_tokens_per_s": sum(lengths) / seconds,
            **extra}
