#!/usr/bin/env python3
"""Writes a randomly initialised Hugging Face ModernBertForSequenceClassification directory for the
ModernBERT benchmarks (issue 45, item 4): config.json + model.safetensors (transformers'
ModernBertConfig and save_pretrained) + a byte-level BPE tokenizer.json of ModernBERT's kind
(written by `tokenizers`, with tokenizer_config.json and special_tokens_map.json), the directory
that `padless train --init-from`, padless_bench_serve, transformers and torch_varlen.py all load.
Throughput does not depend on the weights' values.

answerdotai/ModernBERT-base's tokenizer cannot be downloaded here, so the tokenizer is either an
existing tokenizer.json (--tokenizer; tests/tokenize/data/modernbert/tokenizer.json for the tiny
shape) or trained now on a TSV's texts (--train-on) with the components and added-token layout that
tests/tokenize/modernbert_tokenizer_refs.py gives the test tokenizer: BPE, NFC, ByteLevel
pre-tokenizer and decoder, the template [CLS] $A [SEP], |||IP_ADDRESS||| and <|padding|> at ids 0
and 1, then runs of spaces, |||EMAIL_ADDRESS|||, |||PHONE_NUMBER|||, <|endoftext|>, [UNK] [CLS]
[SEP] [PAD] [MASK] [unused0] [unused1] after the learned vocabulary. --bpe-vocab 50247 gives
ModernBERT's 50280 tokens; the embedding is rounded up to a multiple of 64 rows as ModernBERT's.

  python3 bench/modernbert/make_model.py --out DIR --shape base --train-on IMDB.tsv
  python3 bench/modernbert/make_model.py --out DIR --shape tiny \
      --tokenizer tests/tokenize/data/modernbert/tokenizer.json
"""
import argparse
import json
import os

import torch

# ModernBERT-base (answerdotai/ModernBERT-base's config.json) and a CPU-test shape that keeps its
# structure: a global layer every third, the others windowed, head dim 16.
SHAPES = {
    "base": dict(hidden_size=768, intermediate_size=1152, num_hidden_layers=22,
                 num_attention_heads=12, local_attention=128, global_attn_every_n_layers=3),
    "tiny": dict(hidden_size=64, intermediate_size=96, num_hidden_layers=4,
                 num_attention_heads=4, local_attention=16, global_attn_every_n_layers=3),
}
TOKENS_BEFORE = ["|||IP_ADDRESS|||", "<|padding|>"]  # ids 0 and 1, as in ModernBERT's
SPECIALS_AFTER = ["<|endoftext|>", "[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "[unused0]",
                  "[unused1]"]


def added(content, id_, special, normalized, lstrip=False):
    return {"id": id_, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": False, "normalized": normalized, "special": special}


def read_texts(tsv):
    # The benchmark TSVs have a header and the text in the column named "text".
    with open(tsv, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        col = header.index("text")
        return [line.rstrip("\n").split("\t")[col] for line in f if line.strip()]


def added_token_layout(n):
    """ModernBERT's added tokens around a learned vocabulary of n entries (ids 0 and 1 included)."""
    tokens = [added(TOKENS_BEFORE[0], 0, False, True), added(TOKENS_BEFORE[1], 1, True, False)]
    tokens += [added(" " * k, n + 24 - k, False, True) for k in range(24, 1, -1)]
    nxt = n + 23
    for content in ("|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||"):
        tokens.append(added(content, nxt, False, True))
        nxt += 1
    for content in SPECIALS_AFTER:
        tokens.append(added(content, nxt, True, False, lstrip=content == "[MASK]"))
        nxt += 1
    return tokens


def train_tokenizer(tsv, bpe_vocab):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from tokenizers import trainers
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=bpe_vocab, special_tokens=TOKENS_BEFORE,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(read_texts(tsv), trainer)
    j = json.loads(tok.to_str())
    j["added_tokens"] = added_token_layout(len(j["model"]["vocab"]))
    j["model"].update({"dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                       "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                       "ignore_merges": False})
    tok = Tokenizer.from_str(json.dumps(j))
    ids = {t["content"]: t["id"] for t in j["added_tokens"]}
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
    return tok


def tokenizer(args):
    from tokenizers import Tokenizer
    if args.tokenizer:
        return Tokenizer.from_file(args.tokenizer)
    return train_tokenizer(args.train_on, args.bpe_vocab)


def write_tokenizer(tok, out):
    """tokenizer.json, and the two small files a Hub directory has beside it (as padless's own
    export writes them), without transformers' tokenizer classes, whose API moves between
    versions."""
    tok.save(os.path.join(out, "tokenizer.json"), pretty=False)
    specials = {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                "mask_token": "[MASK]", "unk_token": "[UNK]"}
    config = {**specials, "tokenizer_class": "PreTrainedTokenizerFast",
              "clean_up_tokenization_spaces": False, "model_max_length": 8192}
    for name, content in (("tokenizer_config.json", config), ("special_tokens_map.json", specials)):
        with open(os.path.join(out, name), "w") as f:
            json.dump(content, f, indent=2)


def make_model(args, tok):
    from transformers import ModernBertConfig, ModernBertForSequenceClassification
    ids = {name: tok.token_to_id(name) for name in ("[CLS]", "[SEP]", "[PAD]")}
    config = ModernBertConfig(
        vocab_size=-(-tok.get_vocab_size(with_added_tokens=True) // 64) * 64,
        max_position_embeddings=8192, global_rope_theta=160000.0, local_rope_theta=10000.0,
        pad_token_id=ids["[PAD]"], cls_token_id=ids["[CLS]"], sep_token_id=ids["[SEP]"],
        bos_token_id=ids["[CLS]"], eos_token_id=ids["[SEP]"], num_labels=2,
        id2label={0: "neg", 1: "pos"}, label2id={"neg": 0, "pos": 1}, **SHAPES[args.shape])
    torch.manual_seed(args.seed)
    return ModernBertForSequenceClassification(config).eval()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--shape", choices=sorted(SHAPES), default="base")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--tokenizer", help="an existing ModernBERT-style tokenizer.json")
    src.add_argument("--train-on", help="TSV whose 'text' column trains a byte-level BPE")
    p.add_argument("--bpe-vocab", type=int, default=50247,
                   help="learned vocabulary (ids 0 and 1 included); 33 added tokens follow")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    tok = tokenizer(args)
    model = make_model(args, tok)
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out, safe_serialization=True)
    write_tokenizer(tok, args.out)
    n = sum(t.numel() for t in model.parameters())
    print(json.dumps({"out": args.out, "shape": args.shape,
                      "tokens": tok.get_vocab_size(with_added_tokens=True),
                      "vocab_size": model.config.vocab_size, "parameters": n}))


if __name__ == "__main__":
    main()
