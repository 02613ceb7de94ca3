#!/usr/bin/env python3
"""Golden token offsets from Hugging Face `tokenizers` for padless's Tokenizer::Tokenize test.

Writes into tests/tokenize/data/token_offsets (the test reads only these files, never Python):
  texts.jsonl          the texts, one JSON string a line: the edge texts of the WordPiece and
                       byte-level BPE parity tests, a few more, and the first SST-2 dev texts;
  wordpiece.json       a WordPiece tokenizer.json (BertNormalizer, BertPreTokenizer, [CLS] a [SEP])
                       trained by `tokenizers` on botchan.txt and TRAINING_EXTRAS (only with
                       --train; otherwise the committed one is used);
  tiny_bpe.json        tests/tokenize/tiny_bpe.cc's byte-level BPE (<unk> for characters outside
                       its alphabet), written here so that the test reads the same file;
  NAME.VARIANT.jsonl   per text: its line in texts.jsonl, the ids, offsets and special-token
                       positions of encode(text) (see golden_lines), offsets in UTF-8 bytes
                       (Python reports characters; TEI and Rust bytes); the tiny BPE only for
                       the texts of at most TINY_MAX_CHARS characters (most are unknown to it).
Variants edit the tokenizer.json as the parity scripts do, and token_offsets_test.cc makes the
same edits (keep the two in step): WordPiece normalizer flags and two added tokens; byte-level BPE
prefix space, trim_offsets, lstrip/rstrip; the tiny BPE's fuse_unk and trim_offsets.

usage: token_offsets_refs.py --repo ROOT [--train BOTCHAN_TXT]
"""
import argparse, copy, json, os, sys

DATA = "tests/tokenize/data/token_offsets"
SST2_TEXTS = 24
TINY_MAX_CHARS = 48
EXTRA_TEXTS = [
    "Hello unaffable world!",
    "Caf\u00e9 cafe\u0301 \u0130stanbul \u00c5NGSTR\u00d6M",
    "\ufb01ne \uff34\uff48\uff45 \uff46\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48",
    "a\u0000b c\u200bd",
    "hello [SEP] [MASK]x [CLS]",
    "x\u2603 \U0001F600! \u2603\u2603",
    "multiple     spaces\t\there",
    "na\u00efve NA\u00cfVE Na\u00efve!",
    "a  <mask>  b",
    "ab<mask>c </s>d",
    "a <special> b<special>c",
    "\u4e2d\u6587\u5b57 ok \u6587\u4e2d",
    "cr\u00e8me br\u00fbl\u00e9e \u00e0 la fran\u00e7aise",
]
# Lines added to botchan.txt for training, so the vocabulary has accented letters and some CJK.
TRAINING_EXTRAS = [
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 cr\u00e8me br\u00fbl\u00e9e \u00e0 la fran\u00e7aise",
    "\u00c5ngstr\u00f6m \u00dcn\u00efc\u00f6d\u00e9 \u00e9\u00e9 accents",
    "\u4e2d\u6587 \u6587\u672c \u65e5\u672c\u8a9e",
] * 20
WORDPIECE_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def sst2_texts(repo, limit):
    texts = []
    with open(os.path.join(repo, "data/sst2_dev.tsv"), encoding="utf-8") as f:
        next(f)
        for line in f:
            line = line.rstrip("\n").rstrip("\r")
            if "\t" in line:
                texts.append(line.split("\t", 1)[1])
            if len(texts) == limit:
                break
    return texts


def all_texts(repo):
    texts = []
    for edge in ("wordpiece", "bytelevel_bpe"):
        texts += read_jsonl(os.path.join(repo, "tests/tokenize/data", edge, "edge_texts.jsonl"))
    texts += EXTRA_TEXTS + sst2_texts(repo, SST2_TEXTS)
    return list(dict.fromkeys(texts))  # unique, in order


def train_wordpiece(botchan, path):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers import trainers
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    # Trained cased with accents, so the vocabulary serves every variant; the file is uncased.
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=1500, special_tokens=WORDPIECE_SPECIALS,
                                        show_progress=False)
    with open(botchan, encoding="utf-8-sig") as f:
        lines = f.read().splitlines() + TRAINING_EXTRAS
    tok.train_from_iterator(lines, trainer)
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    tok.save(path)


def wordpiece_variants(base):
    def with_normalizer(**flags):
        j = copy.deepcopy(base)
        j["normalizer"].update(flags)
        return j
    variants = {
        "uncased": base,
        "cased": with_normalizer(lowercase=False, strip_accents=False),
        "cased_stripped": with_normalizer(lowercase=False, strip_accents=True),
        "raw": with_normalizer(clean_text=False, handle_chinese_chars=False, lowercase=True,
                               strip_accents=False),
    }
    # Added tokens: a normalized one (matched in the lowercased, accent-stripped text) and a
    # special one matched in the raw text.
    from tokenizers import AddedToken, Tokenizer
    tok = Tokenizer.from_str(json.dumps(base))
    tok.add_tokens([AddedToken("Na\u00efve", normalized=True)])
    tok.add_special_tokens([AddedToken("<special>", normalized=False)])
    variants["added"] = json.loads(tok.to_str())
    return variants


def tiny_bpe():
    pieces = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "a", "b", "c", "\u0120", "bc", "abc",
              "\u0120a"]
    added = [{"id": i, "content": p, "special": True, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False} for i, p in enumerate(pieces[:5])]
    added[4]["lstrip"] = True  # as roberta-base's <mask>
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": None, "pre_tokenizer": byte_level,
            "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                               "trim_offsets": True, "add_prefix_space": False},
            "decoder": byte_level,
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": {p: i for i, p in enumerate(pieces)},
                      "merges": [["b", "c"], ["\u0120", "a"]]}}


def bpe_variants(reference, tiny):
    def edited(base, edit):
        j = copy.deepcopy(base)
        edit(j)
        return j
    def no_prefix(j):
        j["pre_tokenizer"]["add_prefix_space"] = False
        j["post_processor"]["add_prefix_space"] = False
    def no_trim(j):
        j["post_processor"]["trim_offsets"] = False
    def mask_strip(j):
        mask = next(t for t in j["added_tokens"] if t["content"] == "<mask>")
        mask["lstrip"] = mask["rstrip"] = True
    def fuse(j):
        j["model"]["fuse_unk"] = True
    return {
        "bpe.prefix": reference,
        "bpe.no_prefix": edited(reference, no_prefix),
        "bpe.no_trim": edited(reference, no_trim),
        "bpe.mask_strip": edited(reference, mask_strip),
        "tiny_bpe.base": tiny,
        "tiny_bpe.fuse_unk": edited(tiny, fuse),
        "tiny_bpe.no_trim": edited(tiny, no_trim),
    }


def byte_offsets(text, offsets):
    def to_bytes(c):
        return len(text[:c].encode("utf-8"))
    return [[to_bytes(s), to_bytes(e)] for s, e in offsets]


def golden_lines(tokenizer_json, texts, chosen):
    """One compact JSON object per chosen text: its line in texts.jsonl, and the ids, flat byte
    offsets [start, stop, ...] and positions of the special tokens of encode(text). encode(text, add_special_tokens=False) is
    checked to be the same without the special tokens (so the test derives it)."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_str(json.dumps(tokenizer_json))
    tok.no_padding()
    tok.no_truncation()
    lines = []
    for index in chosen:
        text = texts[index]
        e = tok.encode(text)
        offsets = byte_offsets(text, e.offsets)
        special = [i for i, m in enumerate(e.special_tokens_mask) if m]
        bare = tok.encode(text, add_special_tokens=False)
        content = [i for i in range(len(e.ids)) if i not in special]
        if (bare.ids != [e.ids[i] for i in content] or
                byte_offsets(text, bare.offsets) != [offsets[i] for i in content]):
            raise SystemExit(f"add_special_tokens=False changes more than the specials: {text!r}")
        flat = [x for pair in offsets for x in pair]
        lines.append(json.dumps({"text": index, "ids": e.ids, "offsets": flat, "special": special},
                                separators=(",", ":")))
    return lines


def write_text(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--train")
    a = ap.parse_args()
    out = os.path.join(a.repo, DATA)
    os.makedirs(out, exist_ok=True)
    wordpiece_path = os.path.join(out, "wordpiece.json")
    if a.train:
        train_wordpiece(a.train, wordpiece_path)
    texts = all_texts(a.repo)
    write_text(os.path.join(out, "texts.jsonl"),
               "".join(json.dumps(t) + "\n" for t in texts))
    tiny = tiny_bpe()
    write_text(os.path.join(out, "tiny_bpe.json"), json.dumps(tiny, ensure_ascii=False, indent=2))
    with open(wordpiece_path, encoding="utf-8") as f:
        wordpiece = json.load(f)
    with open(os.path.join(a.repo, "tests/tokenize/data/bytelevel_bpe/tokenizer.json"),
              encoding="utf-8") as f:
        reference = json.load(f)
    goldens = {f"wordpiece.{k}": v for k, v in wordpiece_variants(wordpiece).items()}
    goldens.update(bpe_variants(reference, tiny))
    for name, tokenizer_json in goldens.items():
        chosen = [i for i, t in enumerate(texts)
                  if not name.startswith("tiny") or len(t) <= TINY_MAX_CHARS]
        lines = golden_lines(tokenizer_json, texts, chosen)
        write_text(os.path.join(out, name + ".jsonl"), "".join(line + "\n" for line in lines))
    print(f"token_offsets_refs: wrote {len(goldens)} goldens for {len(texts)} texts to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
