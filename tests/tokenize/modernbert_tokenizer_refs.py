#!/usr/bin/env python3
"""A ModernBERT-shaped tokenizer.json and goldens of Hugging Face `tokenizers` for padless's
modernbert_tokenizer_test.cc (issue 45). The test reads only the files written here, never Python.

answerdotai/ModernBERT-base ships a byte-level BPE tokenizer.json (OLMo / GPT-NeoX derived) that
cannot be downloaded here, so --train builds one with the same components and config shape:
  model          BPE, byte_fallback false, unk_token null, no dropout, fuse_unk false;
  normalizer     NFC;
  pre_tokenizer  ByteLevel, add_prefix_space false, trim_offsets true, use_regex true;
  decoder        ByteLevel;
  post_processor TemplateProcessing [CLS] $A [SEP] / [CLS] $A [SEP] $B:1 [SEP]:1;
  added_tokens   as ModernBERT's: "|||IP_ADDRESS|||" (normalized) and "<|padding|>" (special) at
                 ids 0 and 1, then after the vocabulary runs of 24 down to 2 spaces (normalized,
                 not special), "|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||", "<|endoftext|>",
                 [UNK] [CLS] [SEP] [PAD] [MASK] ([MASK] with lstrip, as ModernBERT's) and two
                 [unusedN];
and a vocabulary of 1200 trained on botchan.txt plus accented and CJK lines (in NFC), so that NFD
input only matches after NFC. It is written to tests/tokenize/data/modernbert/tokenizer.json.

Without --train the committed tokenizer.json is used, and goldens.jsonl is rewritten: texts.jsonl
(token_offsets' texts, then EXTRA_TEXTS), then one compact JSON object a line:
  {"text": i, "ids", "offsets" (UTF-8 bytes, flat), "special"}        encode(text)
  {"pair": [i, j], "ids", "type_ids"}                                  encode(text_i, text_j)
  {"text": i, "max_length": n, "direction": "right"|"left", "ids"}    with truncation
  {"pair": [i, j], "max_length": n, "strategy": s, "ids", "type_ids"}  pairs with truncation
(pairs: PAIRS and each text with the next; truncation of every TRUNCATION_EVERY-th text and
every second such pair)
  {"decode": i, "text"}     decode(encode(text_i) without special tokens), for the texts that
                            hold no special token

usage: modernbert_tokenizer_refs.py --repo ROOT [--train BOTCHAN_TXT]
"""
import argparse, json, os, sys, unicodedata

DATA = "tests/tokenize/data/modernbert"
OFFSET_TEXTS = "tests/tokenize/data/token_offsets/texts.jsonl"
VOCAB_SIZE = 1200

ACCENTED = [
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 cr\u00e8me br\u00fbl\u00e9e \u00e0 la fran\u00e7aise",
    "\u00c5ngstr\u00f6m \u00dcn\u00efc\u00f6d\u00e9 \u00e9l\u00e8ve \u00e9t\u00e9 \u00fcber stra\u00dfe",
    "se\u00f1or ni\u00f1o a\u00f1o \u0151r\u00fcl\u00e9s \u01d8 \u1ec7 vi\u1ec7t nam",
    "\u4e2d\u6587 \u6587\u672c \u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4 \uac01",
]
EXTRA_TEXTS = [
    # NFD and NFC spellings of the same words, and mixed.
    unicodedata.normalize("NFD", "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m"),
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m",
    "cafe\u0301 caf\u00e9 e\u0301te\u0301 \u00e9t\u00e9",
    unicodedata.normalize("NFD", "\u00e9l\u00e8ve \u00fcber stra\u00dfe se\u00f1or vi\u1ec7t"),
    # Composition across reorderings, chains, exclusions, singletons and Hangul jamo.
    "u\u0308\u0301 \u00fc\u0301 a\u0301\u0328 x\u0344y \u0344 \ufb2c! \u0958a \u212b \u2126",
    "\u1100\u1161\u11a8 \uac00\u11a8 \u1100\u1161 e\u0301\u0301 \u0301start",
    "\u1e9b\u0323 q\u0307\u0323 \u00c5\u0301",
    # Whitespace runs (ModernBERT's added space tokens) and other whitespace.
    "a  b   c    d                             e",
    "  leading and trailing   ",
    "tabs\t\tand\nnew\n\nlines \u00a0nbsp \u3000ideographic",
    "                        ",
    # ModernBERT's added and special tokens in the text.
    "mask: the [MASK] is   [MASK]x and [CLS][SEP] [PAD] [UNK]",
    "ip |||IP_ADDRESS||| mail |||EMAIL_ADDRESS|||caf\u00e9 <|endoftext|> <|padding|>",
    "cafe\u0301[MASK]e\u0301 [SEP]\u0301",
    # Emoji (with joiners and modifiers), CJK, symbols.
    "\U0001F600 \U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467 \u2764\ufe0f!",
    "\u4e2d\u6587\u5b57 \u65e5\u672c\u8a9e\u306e\u6587 \ud55c\uad6d\uc5b4 \u1112\u1161\u11ab",
    "\u00bd \u2460 \ufb01ne \uff34\uff45\uff58\uff54 x\u00b2 \u2122",
]
PAIRS = [(2, 3), (0, 2), (2, 0), (0, 0)]  # indices into texts; more appended in main()
TRUNCATIONS = [3, 4, 8, 17]
PAIR_TRUNCATIONS = [5, 6, 9, 16, 31]
TRUNCATION_EVERY = 4  # truncation of every 4th text and pair: the goldens stay small


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def added(content, id_, special, normalized, lstrip=False):
    return {"id": id_, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": False, "normalized": normalized, "special": special}


def train(botchan, path):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers import trainers
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE,
                                  special_tokens=["|||IP_ADDRESS|||", "<|padding|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    with open(botchan, encoding="utf-8-sig") as f:
        lines = f.read().splitlines() + ACCENTED * 30
    tok.train_from_iterator(lines, trainer)
    j = json.loads(tok.to_str())
    n = len(j["model"]["vocab"])
    tokens = [added("|||IP_ADDRESS|||", 0, False, True), added("<|padding|>", 1, True, False)]
    tokens += [added(" " * k, n + 24 - k, False, True) for k in range(24, 1, -1)]
    nxt = n + 23
    for content in ("|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||"):
        tokens.append(added(content, nxt, False, True))
        nxt += 1
    for content in ("<|endoftext|>", "[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "[unused0]",
                    "[unused1]"):
        tokens.append(added(content, nxt, True, False, lstrip=content == "[MASK]"))
        nxt += 1
    ids = {t["content"]: t["id"] for t in tokens}
    j["added_tokens"] = tokens
    j["normalizer"] = {"type": "NFC"}
    j["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True}
    j["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True}
    j["model"].update({"dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                       "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                       "ignore_merges": False})
    tok = Tokenizer.from_str(json.dumps(j))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
    tok.save(path, pretty=False)


def byte_offsets(text, offsets):
    def to_bytes(c):
        return len(text[:c].encode("utf-8"))
    return [x for s, e in offsets for x in (to_bytes(s), to_bytes(e))]


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def golden_lines(tok, texts):
    special_ids = {t["id"] for t in json.loads(tok.to_str())["added_tokens"] if t["special"]}
    lines = []
    for i, text in enumerate(texts):
        e = tok.encode(text)
        special = [k for k, m in enumerate(e.special_tokens_mask) if m]
        lines.append(compact({"text": i, "ids": e.ids, "offsets": byte_offsets(text, e.offsets),
                              "special": special}))
        bare = tok.encode(text, add_special_tokens=False).ids
        if not set(bare) & special_ids:  # decode drops every special token, padless four
            lines.append(compact({"decode": i, "text": tok.decode(bare)}))
    pairs = PAIRS + [(i, i + 1) for i in range(len(texts) - 1)]
    for a, b in pairs:
        e = tok.encode(texts[a], texts[b])
        lines.append(compact({"pair": [a, b], "ids": e.ids, "type_ids": e.type_ids}))
    for i, text in enumerate(texts):
        if i % TRUNCATION_EVERY:
            continue
        for n in TRUNCATIONS:
            for direction in ("right", "left"):
                tok.enable_truncation(n, direction=direction)
                lines.append(compact({"text": i, "max_length": n, "direction": direction,
                                      "ids": tok.encode(text).ids}))
    for a, b in pairs[::2 * TRUNCATION_EVERY]:
        for n in PAIR_TRUNCATIONS:
            for strategy in ("longest_first", "only_first", "only_second"):
                tok.enable_truncation(n, strategy=strategy)
                try:
                    e = tok.encode(texts[a], texts[b])
                except Exception:  # only_first / only_second that cannot fit: padless errs too
                    continue
                lines.append(compact({"pair": [a, b], "max_length": n, "strategy": strategy,
                                      "ids": e.ids, "type_ids": e.type_ids}))
    tok.no_truncation()
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--train")
    a = ap.parse_args()
    out = os.path.join(a.repo, DATA)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "tokenizer.json")
    if a.train:
        train(a.train, path)
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(path)
    tok.no_padding()
    tok.no_truncation()
    texts = list(dict.fromkeys(read_jsonl(os.path.join(a.repo, OFFSET_TEXTS)) + EXTRA_TEXTS))
    with open(os.path.join(out, "texts.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(t) + "\n" for t in texts)
    lines = golden_lines(tok, texts)
    with open(os.path.join(out, "goldens.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
    print(f"modernbert_tokenizer_refs: {len(texts)} texts, {len(lines)} goldens in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
