#!/usr/bin/env python3
"""Writes tests/serve/http/data/decode_goldens.json: Hugging Face `tokenizers`' Tokenizer.decode
(what TEI's /decode answers) of id lists with and without skip_special_tokens, for the WordPiece and
byte-level BPE tokenizer.json files of tests/tokenize/data. token_decode_test.cc reads it, so the
test runs without `tokenizers`. Run from the repository root: python3 tests/serve/http/make_decode_goldens.py
"""
import json
import os

from tokenizers import Tokenizer

TOKENIZERS = {
    "wordpiece": "tests/tokenize/data/token_offsets/wordpiece.json",
    "bytelevel_bpe": "tests/tokenize/data/bytelevel_bpe/tokenizer.json",
}
TEXTS = ["hello , world!", "Hello world. It's un-aff-able?", "a b c", "caf\u00e9 \u4e2d\u6587 !",
         "don't stop", "  spaced   out  ", "x"]


def special_ids(tok):
    return [i for i, t in sorted(tok.get_added_tokens_decoder().items()) if t.special]


def cases(tok):
    out = []
    for text in TEXTS:
        with_special = tok.encode(text).ids
        plain = tok.encode(text, add_special_tokens=False).ids
        out += [with_special, plain]
    specials = special_ids(tok)
    first, second = specials[:2]
    plain = tok.encode("hello , world! unaffable.", add_special_tokens=False).ids
    # Special tokens between, before and after ordinary runs; runs that start with a
    # continuation piece or with punctuation right after a special token; only specials.
    out.append([first] + plain[1:] + [second])
    out.append(plain[:2] + [second] + plain[2:] + [first, second])
    out.append([first, first, second])
    out.append([second] + plain[-2:])
    out.append(specials + plain[:3] + specials)
    for piece in ("##aff", "##able", ",", ".", "!", "'", "s"):
        if piece in tok.get_vocab():
            out.append([first, tok.token_to_id(piece), second])
    return out


def main():
    goldens = {}
    for name, path in TOKENIZERS.items():
        tok = Tokenizer.from_file(path)
        goldens[name] = {"tokenizer": path, "cases": [
            {"ids": ids, "keep_special": tok.decode(ids, skip_special_tokens=False),
             "skip_special": tok.decode(ids, skip_special_tokens=True)} for ids in cases(tok)]}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "decode_goldens.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(goldens, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
