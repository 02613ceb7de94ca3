#!/usr/bin/env python3
"""Reference ids from Hugging Face `tokenizers` for padless's byte-level BPE parity test.

The reference tokenizer is trained offline on botchan.txt (--train): a `tokenizers` BPE model with
the ByteLevel pre-tokenizer (add_prefix_space true), ByteLevel decoder and RobertaProcessing, with
RoBERTa's special tokens <s> <pad> </s> <unk> <mask> (ids 0-4) and a vocabulary of 2000; it is
committed as tests/tokenize/data/bytelevel_bpe/tokenizer.json. A variant with add_prefix_space
false ("no_prefix") is derived from it by editing the JSON. For each variant and text set the
script writes one line per text: the ids with special tokens, separated by spaces (no padding, no
truncation); for the "edge" and "sst2" sets also the ids without special tokens (*.nospecial.ids)
and, for "edge", Hugging Face's decode of those (*.decoded.jsonl). The "imdb" and "pairs" sets
are written for "prefix" only.

usage: bytelevel_bpe_refs.py --repo ROOT --out DIR [--train BOTCHAN_TXT]
"""
import argparse, json, os, sys

import wordpiece_refs  # the same text sets and reading of the .tsv files

DATA = "tests/tokenize/data/bytelevel_bpe"
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
IMDB_TEXTS = 200


def train(botchan, path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train([botchan], trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")))
    tok.save(path)


def text_sets(repo):
    return wordpiece_refs.text_sets(repo, os.path.join(DATA, "edge_texts.jsonl"), IMDB_TEXTS)


def variants(base_text):
    base = json.loads(base_text)
    no_prefix = json.loads(base_text)
    no_prefix["pre_tokenizer"]["add_prefix_space"] = False
    no_prefix["post_processor"]["add_prefix_space"] = False
    return {"prefix": base_text, "no_prefix": json.dumps(no_prefix, ensure_ascii=False, indent=2)}


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--train")
    a = ap.parse_args()
    json_path = os.path.join(a.repo, DATA, "tokenizer.json")
    if a.train:
        train(a.train, json_path)
    from tokenizers import Tokenizer
    with open(json_path, encoding="utf-8") as f:
        base_text = f.read()
    sets = text_sets(a.repo)
    os.makedirs(a.out, exist_ok=True)
    for variant, text in variants(base_text).items():
        tok = Tokenizer.from_str(text)
        tok.no_padding()
        tok.no_truncation()
        for name, texts in sets.items():
            if variant != "prefix" and name in ("imdb", "pairs"):
                continue  # the long sets once are enough; keeps the goldens small
            encs = [tok.encode(*t) if isinstance(t, tuple) else tok.encode(t) for t in texts]
            write_lines(os.path.join(a.out, f"{variant}.{name}.ids"),
                        [" ".join(map(str, e.ids)) for e in encs])
            if name not in ("edge", "sst2"):
                continue
            bare = [tok.encode(t, add_special_tokens=False).ids for t in texts]
            write_lines(os.path.join(a.out, f"{variant}.{name}.nospecial.ids"),
                        [" ".join(map(str, ids)) for ids in bare])
            if name == "edge":
                write_lines(os.path.join(a.out, f"{variant}.{name}.decoded.jsonl"),
                            [json.dumps(tok.decode(ids), ensure_ascii=False) for ids in bare])
    print(f"bytelevel_bpe_refs: wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
