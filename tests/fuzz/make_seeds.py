#!/usr/bin/env python3
"""Writes the seed corpora in corpus/<target>/seed-*: small valid inputs in each target's byte
layout (option bytes first, payload after; see each *_fuzzer.cc). Crash reproducers live beside
them as corpus/<target>/regress-* and are kept by hand. Rerun after changing a target's layout:
    python3 tests/fuzz/make_seeds.py
"""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def reader_seeds():
    # format (0 tsv, 1 csv, 2 jsonl), header (0 auto, 1 present, 2 absent), require_label (0: no),
    # max_reported_bad_rows, field names (0: short l/t/p).
    def opts(fmt, header=0, require=1, reported=3, names=1):
        return bytes([fmt, header, require, reported, names])
    write("corpus_reader_fuzzer", "tsv_header",
          opts(0) + b"label\ttext\npos\tgreat movie\nneg\tdull\r\n\n1\tok\n")
    write("corpus_reader_fuzzer", "tsv_pairs",
          opts(0, 2) + b"0\tthe first\tthe second\n1\ta\tb\n2\tbad row\n")
    write("corpus_reader_fuzzer", "tsv_bad_utf8",
          opts(0, 2, 0) + b"\xef\xbb\xbf\tno label\nx\t\xc3\x28 broken \xff\n")
    write("corpus_reader_fuzzer", "csv_quotes",
          opts(1) + b'label,text,text_pair\n1,"a, quoted ""text""","multi\nline"\r\n0,plain,\n')
    write("corpus_reader_fuzzer", "csv_broken",
          opts(1, 2) + b'pos,"unterminated\nneg,fine\nneg,"x"y\n,empty label\n')
    write("corpus_reader_fuzzer", "jsonl",
          opts(2) + b'{"label": "pos", "text": "hi", "text_pair": null}\n'
          b'{"label": 3, "text": "\\u00e9t\\u00e9"}\n  \n{"label": true, "text": "b"}\n'
          b'[1, 2]\n{"text": 5}\nnot json\n')
    write("corpus_reader_fuzzer", "jsonl_short_names",
          opts(2, 0, 0, 1, 0) + b'{"l": "a", "t": "x", "p": "y"}\n{"t": "\xff"}\n')


def tokenizer_seeds():
    # mode (0 single, 1 pair, 2 windows), max_length: Pick(16) then the value, truncation,
    # head fraction: Pick(8) then the value (-50..150 -> /100), pair truncation, stride, split.
    def opts(mode, max_len, trunc=2, frac=75, pair=0, stride=2, split=20):
        return bytes([mode, 1, max_len, trunc, 3, frac, pair, stride + 1, split])
    text = "The film's pacing is uneven, but the performances are wonderful. ".encode()
    write("tokenizer_fuzzer", "single_head_tail", opts(0, 12) + text * 2)
    write("tokenizer_fuzzer", "single_unlimited", opts(0, 0, 0) + "caf\u00e9 \u00c5ngstr\u00f6m \ufb01 ".encode() * 3)
    write("tokenizer_fuzzer", "single_invalid_utf8", opts(0, 8, 1) + b"ok \xc3\x28 \xff\xfe end")
    write("tokenizer_fuzzer", "pair_longest_first", opts(1, 16, pair=0, split=30) + text * 2)
    write("tokenizer_fuzzer", "pair_only_second", opts(1, 20, pair=2, split=10) + text)
    write("tokenizer_fuzzer", "windows", opts(2, 10, stride=3) + text * 3)
    write("tokenizer_fuzzer", "empty", opts(0, 5))


def planner_seeds():
    rng = random.Random(20261130)
    # sampler byte first (0 random, 1 megabatch, 2 bucketed, 3 token budget, 4 packed), then the
    # remaining option bytes, then lengths (one byte each below 128).
    for sampler in range(5):
        for variant in range(2):
            opts = bytes([sampler]) + bytes(rng.randrange(256) for _ in range(40))
            lengths = bytes(rng.randrange(1, 128) for _ in range(rng.randrange(8, 80)))
            write("planner_fuzzer", "sampler%d_%d" % (sampler, variant), opts + lengths)


def cache_file(examples, typed, fingerprint=0x7061646c65737321):
    """A TokenizedCorpus cache (tokenized_corpus.cc's layout) of (ids, label) pairs."""
    tokens = b"".join(struct.pack("<%di" % len(ids), *ids) for ids, _ in examples)
    total = sum(len(ids) for ids, _ in examples)
    type_ids = bytes((1 if i > len(ids) // 2 else 0) for ids, _ in examples
                     for i in range(len(ids))) if typed else b""
    offsets, at = [0], 0
    for ids, _ in examples:
        at += len(ids)
        offsets.append(at)
    payload = (tokens + type_ids + struct.pack("<%dq" % len(offsets), *offsets) +
               struct.pack("<%dq" % len(examples), *[label for _, label in examples]))
    h = 1469598103934665603
    for b in payload:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    header = b"PADLCORP" + struct.pack("<IIQQQQQQ", 1, 1 if typed else 0, fingerprint,
                                       len(examples), total, len(payload), h, 0)
    return header + payload


def cache_seeds():
    # First byte: bit 0 sets the fingerprint, bit 1 the payload size, bit 2 the checksum.
    examples = [([2, 17, 40, 3], 0), ([2, 5, 3], 1), ([2, 3], 0), ([2, 9, 9, 9, 9, 3], 2)]
    write("corpus_cache_fuzzer", "valid", b"\x00" + cache_file(examples, False))
    write("corpus_cache_fuzzer", "valid_typed", b"\x00" + cache_file(examples, True))
    write("corpus_cache_fuzzer", "empty_corpus", b"\x00" + cache_file([], False))
    write("corpus_cache_fuzzer", "repair_all", b"\x07" + cache_file(examples[:2], True, 0)[:-3])
    write("corpus_cache_fuzzer", "not_a_cache", b"\x07" + b"PADLCORQ" + bytes(70))


def model_dir_seeds():
    # config length (2 bytes) + config JSON, labels length (2 bytes) + labels JSON, then the weights
    # patch: keep this many bytes of the valid archive (3 bytes), patch offset (3 bytes), patch.
    tiny = (b'{"vocab_size": 320, "hidden": 8, "layers": 1, "heads": 2, "ffn": 16, '
            b'"max_positions": 16, "num_labels": 2, "dropout": 0.0, "attention_dropout": 0.0, '
            b'"pre_ln": false, "activation": "gelu", "pooling": "cls"}')
    labels = b'{"format": "padless-labels", "version": 1, "labels": ["neg", "pos"]}'

    def seed(config, label_json, keep=0xFFFFFF, offset=0, patch=b""):
        return (struct.pack("<H", len(config)) + config + struct.pack("<H", len(label_json)) +
                label_json + struct.pack("<I", keep)[:3] + struct.pack("<I", offset)[:3] + patch)
    write("model_dir_fuzzer", "valid", seed(tiny, labels))
    write("model_dir_fuzzer", "truncated_weights", seed(tiny, labels, keep=1500))
    write("model_dir_fuzzer", "patched_weights", seed(tiny, labels, offset=40, patch=b"\xff" * 8))
    write("model_dir_fuzzer", "bad_types",
          seed(b'{"hidden": "8", "heads": 3, "pooling": 1}', b'{"format": "padless-labels", '
               b'"version": 1, "labels": ["a", "a", ""]}', keep=0))
    write("model_dir_fuzzer", "label_mismatch",
          seed(tiny.replace(b'"num_labels": 2', b'"num_labels": 3'), labels))
    write("model_dir_fuzzer", "not_json", seed(b"{", b"[]", keep=64, offset=3, patch=b"PK"))
    # The JSON inputs as a sentence-transformers directory's files (model_dir_fuzzer.cc feeds the
    # config bytes as modules.json and as 1_Pooling/config.json).
    st_modules = (b'[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.'
                  b'Transformer"}, {"idx": 1, "name": "1", "path": "1_Pooling", "type": '
                  b'"sentence_transformers.models.Pooling"}, {"idx": 2, "name": "2", "path": '
                  b'"2_Normalize", "type": "sentence_transformers.models.Normalize"}]')
    st_pooling = (b'{"word_embedding_dimension": 384, "pooling_mode_cls_token": false, '
                  b'"pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false, '
                  b'"pooling_mode_mean_sqrt_len_tokens": false, '
                  b'"pooling_mode_weightedmean_tokens": false, "pooling_mode_lasttoken": false, '
                  b'"include_prompt": true}')
    st_settings = (b'{"model_type": "SentenceTransformer", "prompts": {"query": "query: "}, '
                   b'"default_prompt_name": "query", "similarity_fn_name": "cosine"}')
    write("model_dir_fuzzer", "st_modules", seed(st_modules, st_pooling, keep=0))
    write("model_dir_fuzzer", "st_pooling", seed(st_pooling, st_settings, keep=0))


def tokenizer_json_seeds():
    # The whole input is a tokenizer.json: a tiny valid WordPiece file and variants of it.
    import json
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "un", "##aff",
              "##able", ",", "!", "a", "##b", "cafe", "\u4e2d"]
    special = lambda i, t: {"SpecialToken": {"id": i, "type_id": t}}
    seq = lambda i, t: {"Sequence": {"id": i, "type_id": t}}
    base = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": pieces[i], "special": True, "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False} for i in range(5)],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [special("[CLS]", 0), seq("A", 0), special("[SEP]", 0)],
                           "pair": [special("[CLS]", 0), seq("A", 0), special("[SEP]", 0),
                                    seq("B", 1), special("[SEP]", 1)],
                           "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                                              "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 10, "vocab": {p: i for i, p in enumerate(pieces)}},
    }
    def variant(name, change):
        j = json.loads(json.dumps(base))
        change(j)
        write("tokenizer_json_fuzzer", name, json.dumps(j).encode())
    variant("template", lambda j: None)
    variant("bert_processing", lambda j: j.update(post_processor={
        "type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}))
    variant("cased_no_normalizer", lambda j: j.update(normalizer=None))
    variant("unigram", lambda j: j["model"].update(type="Unigram"))
    variant("added_beyond_vocab", lambda j: j["added_tokens"].append(
        {"id": 16, "content": "<extra>", "special": False, "normalized": False}))


def bpe_tokenizer_json_seeds():
    # A tiny byte-level BPE tokenizer.json (RoBERTa layout) and variants of it.
    import json
    pieces = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "a", "b", "c", "\u0120", "bc", "abc",
              "\u0120a", "H", "e", "l", "o", "He", "ll", "llo"]
    byte_level = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                  "use_regex": True}
    base = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": pieces[i], "special": True, "single_word": False,
                          "lstrip": pieces[i] == "<mask>", "rstrip": False, "normalized": False}
                         for i in range(5)],
        "normalizer": None, "pre_tokenizer": byte_level, "decoder": byte_level,
        "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                           "trim_offsets": True, "add_prefix_space": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {p: i for i, p in enumerate(pieces)},
                  "merges": [["b", "c"], ["\u0120", "a"], ["H", "e"], ["l", "l"], ["ll", "o"]]},
    }
    special = lambda i: {"SpecialToken": {"id": i, "type_id": 0}}
    seq = lambda i: {"Sequence": {"id": i, "type_id": 0}}
    template = {"type": "TemplateProcessing",
                "single": [special("<s>"), seq("A"), special("</s>")],
                "pair": [special("<s>"), seq("A"), special("</s>"), special("</s>"), seq("B"),
                         special("</s>")],
                "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                                   "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}
    def variant(name, change):
        j = json.loads(json.dumps(base))
        change(j)
        write("tokenizer_json_fuzzer", name, json.dumps(j).encode())
    variant("bpe_roberta", lambda j: None)
    variant("bpe_string_merges", lambda j: j["model"].update(
        merges=[" ".join(m) for m in j["model"]["merges"]]))
    variant("bpe_template", lambda j: j.update(post_processor=template))
    variant("bpe_no_unk_fuse_ignore_merges", lambda j: j["model"].update(
        unk_token=None, fuse_unk=True, ignore_merges=True))
    variant("bpe_no_prefix_space", lambda j: j.update(post_processor=None, pre_tokenizer=dict(
        byte_level, add_prefix_space=False)))


def safetensors_seeds():
    # Whole files: 8-byte little-endian header length, JSON header, data section.
    def st(header, data):
        text = header.encode()
        return struct.pack("<Q", len(text)) + text + data
    floats = struct.pack("<6f", 1, -2, 3.5, 0, 1e-3, 7)
    write("safetensors_fuzzer", "valid",
          st('{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,3],'
             '"data_offsets":[0,24]},"h":{"dtype":"F16","shape":[2],"data_offsets":[24,28]},'
             '"b":{"dtype":"BF16","shape":[2],"data_offsets":[28,32]},'
             '"ids":{"dtype":"I64","shape":[1],"data_offsets":[32,40]}}',
             floats + bytes(16)))
    write("safetensors_fuzzer", "overlap",
          st('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
             '"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', bytes(12)))
    write("safetensors_fuzzer", "mismatch",
          st('{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', bytes(8)))
    write("safetensors_fuzzer", "huge_length", struct.pack("<Q", 1 << 40) + b"{}")
    write("safetensors_fuzzer", "empty_shape",
          st('{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},'
             '"z":{"dtype":"F16","shape":[0,5],"data_offsets":[4,4]}}', bytes(4)))


def predict_request_seeds():
    # The route (one byte: 0 /predict, 1 /embed, 2 /embed_all, 3 /rerank, 4 /similarity,
    # 5 /tokenize, 6 /decode, 7 /v1/embeddings), max_client_batch_size: Range(1, 64) from one byte
    # (byte % 64 + 1), then the request body.
    def seed(name, body, route=0, limit=32):
        write("predict_request_fuzzer", name, bytes([route, limit - 1]) + body)
    seed("single", b'{"inputs": "What a great film"}')
    seed("pair", b'{"inputs": ["premise", "hypothesis"], "raw_scores": true}')
    seed("batch", b'{"inputs": [["a"], ["b", "c"], [" "]], "truncate": false, '
         b'"truncation_direction": "Right"}')
    seed("empty_text", b'{"inputs": [["a"], ["b", ""], [""]]}')
    # The same bytes also go to the Content-Type check (json_content_type.h).
    seed("content_type", b'application/vnd.api+json; charset=utf-8')
    seed("options", b'{"inputs": ["alone"], "truncate": null, "raw_scores": false, '
         b'"parameters": {"top_k": 2}}')
    seed("batch_over_limit", b'{"inputs": [["a"], ["b"], ["c"]]}', limit=2)
    seed("escapes", b'{"inputs": "caf\u00e9 \"q\" \ud83d\ude00 \u0000"}')
    seed("wrong_shapes", b'{"inputs": [["a"], "b", 3, null]}')
    seed("left", b'{"inputs": "x", "truncation_direction": "Left"}')
    seed("bad_utf8", b'{"inputs": "caf\xe9 \xc3\x28"}'.decode("unicode_escape").encode("latin-1"))
    seed("deep", b"[" * 40 + b"]" * 40)
    # /embed and /embed_all: texts, token ids, a mixed batch, every option.
    seed("embed_single", b'{"inputs": "What is Deep Learning?"}', route=1)
    seed("embed_options", b'{"inputs": ["a", "b"], "normalize": false, "truncate": true, '
         b'"truncation_direction": "left", "prompt_name": "query", "dimensions": 64}', route=1)
    seed("embed_ids", b'{"inputs": [[101, 2023, 102], "text", [4294967295]]}', route=1)
    seed("embed_bad", b'{"inputs": [[], ""], "dimensions": 0, "normalize": null}', route=1)
    seed("embed_all", b'{"inputs": [101, 7592, 102], "truncate": null, "prompt_name": null}',
         route=2)
    seed("embed_all_over_limit", b'{"inputs": ["a", "b", "c"]}', route=2, limit=2)
    # /rerank.
    seed("rerank", b'{"query": "What is DL?", "texts": ["DL is", "pizza", "DL is"], '
         b'"raw_scores": true, "return_text": true}', route=3)
    seed("rerank_empty", b'{"query": "", "texts": [], "truncation_direction": "Right"}', route=3)
    # /similarity.
    seed("similarity", b'{"inputs": {"source_sentence": "What is DL?", "sentences": '
         b'["What is ML?", "pizza"]}, "parameters": {"truncate": false, '
         b'"truncation_direction": "Left", "prompt_name": "query"}}', route=4)
    seed("similarity_over_limit", b'{"inputs": {"source_sentence": "s", "sentences": ["a", "b"]}, '
         b'"parameters": null}', route=4, limit=2)
    # /tokenize and /decode.
    seed("tokenize", b'{"inputs": ["hello world", "caf\u00e9"], "add_special_tokens": false, '
         b'"prompt_name": "query"}', route=5)
    seed("decode", b'{"ids": [[101, 7592, 102], [195, 169]], "skip_special_tokens": false}',
         route=6)
    seed("decode_empty", b'{"ids": []}', route=6)
    # /v1/embeddings.
    seed("openai", b'{"input": ["a", [1, 2]], "model": "text-embedding-3-small", "user": "u", '
         b'"encoding_format": "base64", "dimensions": 8}', route=7)
    seed("openai_float", b'{"input": "x", "encoding_format": "float", "model": null}', route=7)
    seed("openai_bad", b'{"input": [1, "a"], "encoding_format": "Float"}', route=7)


def main():
    predict_request_seeds()
    safetensors_seeds()
    model_dir_seeds()
    cache_seeds()
    reader_seeds()
    tokenizer_seeds()
    planner_seeds()
    tokenizer_json_seeds()
    bpe_tokenizer_json_seeds()


if __name__ == "__main__":
    main()
