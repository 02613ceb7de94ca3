"""Writes the randomly initialised models of the embedding and rerank benchmarks (issue 44), with a
given BERT WordPiece tokenizer.json (the bert-base-uncased vocabulary, as make_hf_model.py takes
it), nothing fetched from the Hugging Face hub:

  --st-out DIR  a sentence-transformers directory: BertModel weights (config.json +
                model.safetensors), the tokenizer files, modules.json (Transformer, Pooling,
                Normalize), 1_Pooling/config.json with mean pooling, 2_Normalize/,
                sentence_bert_config.json (max_seq_length 512) and
                config_sentence_transformers.json; what `SentenceTransformer(DIR)`, padless's
                engine (`InferenceEngine::Load`) and `padless serve --model DIR` load.
  --ce-out DIR  a cross-encoder: BertForSequenceClassification with num_labels=1 and the
                tokenizer files, what `CrossEncoder(DIR)` and padless (as a reranker) load.

Throughput does not depend on the weights' values; parity checks compare implementations on the
same random weights.

  python3 bench/serve/make_st_model.py --tokenizer-dir DIR [--st-out DIR] [--ce-out DIR]
      [--shape base|minilm] [--seed 0]
"""
import argparse
import json
import os
import shutil

import torch
from transformers import BertConfig, BertForSequenceClassification, BertModel

from make_hf_model import SHAPES

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.txt")
MAX_SEQ_LENGTH = 512


def copy_tokenizer(tokenizer_dir, out):
    for name in TOKENIZER_FILES:
        try:
            shutil.copy(os.path.join(tokenizer_dir, name), os.path.join(out, name))
        except FileNotFoundError:
            if name == "tokenizer.json":
                raise


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


def config_for(shape, **extra):
    return BertConfig(vocab_size=30522, max_position_embeddings=MAX_SEQ_LENGTH, **SHAPES[shape],
                      **extra)


def write_sentence_transformer(args):
    out = args.st_out
    config = config_for(args.shape)
    model = BertModel(config).eval()  # with the pooler, as pretrained checkpoints have it
    model.save_pretrained(out, safe_serialization=True)
    copy_tokenizer(args.tokenizer_dir, out)
    write_json(os.path.join(out, "modules.json"), [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize",
         "type": "sentence_transformers.models.Normalize"},
    ])
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    write_json(os.path.join(out, "1_Pooling", "config.json"), {
        "word_embedding_dimension": config.hidden_size,
        "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False,
        "pooling_mode_lasttoken": False,
        "include_prompt": True,
    })
    os.makedirs(os.path.join(out, "2_Normalize"), exist_ok=True)
    write_json(os.path.join(out, "sentence_bert_config.json"),
               {"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False})
    write_json(os.path.join(out, "config_sentence_transformers.json"), {
        "model_type": "SentenceTransformer",
        "prompts": {},
        "default_prompt_name": None,
        "similarity_fn_name": "cosine",
    })
    return out


def write_cross_encoder(args):
    config = config_for(args.shape, num_labels=1)
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(args.ce_out, safe_serialization=True)
    copy_tokenizer(args.tokenizer_dir, args.ce_out)
    return args.ce_out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tokenizer-dir", required=True, help="holds tokenizer.json (BERT WordPiece)")
    p.add_argument("--st-out", default="", help="the sentence-transformers directory to write")
    p.add_argument("--ce-out", default="", help="the cross-encoder directory to write")
    p.add_argument("--shape", choices=sorted(SHAPES), default="base")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if not args.st_out and not args.ce_out:
        p.error("nothing to write: give --st-out and/or --ce-out")
    if args.st_out:
        torch.manual_seed(args.seed)
        print(write_sentence_transformer(args))
    if args.ce_out:
        torch.manual_seed(args.seed + 1)
        print(write_cross_encoder(args))


if __name__ == "__main__":
    main()
