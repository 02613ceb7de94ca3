#!/usr/bin/env python3
"""The long-document set of the ModernBERT benchmark. There is no 20 Newsgroups (or any corpus of
long documents) on these machines, so long documents are made from IMDB: reviews of the same label
joined by spaces until the document's token count (the model's tokenizer, [CLS] and [SEP]
included) reaches a target drawn uniformly from [--min-tokens, --max-tokens], never past
--max-tokens. The reviews are taken in an order shuffled with --seed, so the set is the same on
every run and machine (given the same tokenizer.json). Writes a TSV (label, text) and prints one
JSON line of statistics.

  python3 bench/modernbert/make_long_docs.py --data IMDB.tsv --model DIR --out LONG.tsv \
      [--docs 400] [--min-tokens 4096] [--max-tokens 8192] [--seed 45]
"""
import argparse
import json
import random

from tokenizers import Tokenizer

import bench_util as bu


def counted(tok, texts, chunk=2048):
    """(text, tokens without specials) pairs, tokenized a chunk at a time: only as many reviews as
    the documents need are tokenized."""
    for i in range(0, len(texts), chunk):
        part = texts[i:i + chunk]
        yield from zip(part, (len(e.ids) for e in tok.encode_batch(part, add_special_tokens=False)))


def build_docs(pairs, want, lo, hi, rng):
    """Joins (text, token count) pairs, in their order, into `want` documents of rng-drawn targets
    within [lo, hi] tokens (a join may shift a count by a token or two, which trim_to removes)."""
    docs, cur, used, target = [], [], 2, rng.randint(lo, hi)
    for text, n in pairs:
        if len(docs) == want:
            break
        if used + n + 1 > hi:  # would pass the maximum: end the document here if long enough
            if used < lo:
                continue  # else skip this review
            docs.append(" ".join(cur))
            cur, used, target = [], 2, rng.randint(lo, hi)
            if n + 3 > hi:
                continue
        cur.append(text)
        used += n + 1
        if used >= target:
            docs.append(" ".join(cur))
            cur, used, target = [], 2, rng.randint(lo, hi)
    return docs


def trim_to(tok, docs, hi):
    """The documents, each cut by its last words until it fits hi tokens with the specials, and
    their token counts."""
    lengths = [len(e.ids) for e in tok.encode_batch(docs)]
    for i in [i for i, n in enumerate(lengths) if n > hi]:
        while lengths[i] > hi:
            docs[i] = docs[i][:docs[i].rindex(" ")]
            lengths[i] = len(tok.encode(docs[i]).ids)
    return docs, lengths


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--model", required=True, help="directory holding tokenizer.json")
    p.add_argument("--out", required=True)
    p.add_argument("--docs", type=int, default=400, help="documents to write (at most)")
    p.add_argument("--min-tokens", type=int, default=4096)
    p.add_argument("--max-tokens", type=int, default=8192)
    p.add_argument("--seed", type=int, default=45)
    a = p.parse_args()
    texts, labels = bu.read_tsv(a.data)
    tok = Tokenizer.from_file(f"{a.model}/tokenizer.json")
    rng = random.Random(a.seed)
    per_label = {}
    for label in sorted(set(labels)):
        mine = [t for t, l in zip(texts, labels) if l == label]
        rng.shuffle(mine)
        per_label[label] = build_docs(counted(tok, mine), a.docs // 2, a.min_tokens,
                                      a.max_tokens, rng)
    rows = [(l, d) for pair in zip(*per_label.values()) for l, d in zip(per_label, pair)]
    docs, lengths = trim_to(tok, [d for _, d in rows], a.max_tokens)  # labels alternate
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("label\ttext\n")
        f.writelines(f"{l}\t{d}\n" for (l, _), d in zip(rows, docs))
    print(json.dumps({"out": a.out, "docs": len(rows), "min": min(lengths), "max": max(lengths),
                      "mean": sum(lengths) / len(lengths), "tokens": sum(lengths),
                      "seed": a.seed}))


if __name__ == "__main__":
    main()
