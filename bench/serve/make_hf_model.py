"""Writes a randomly initialised Hugging Face sequence classifier for the serving benchmark: the
BERT-base shape (or all-MiniLM-L6-v2's, --shape minilm) with a given tokenizer.json, saved as
config.json + model.safetensors + tokenizer files, the directory that `padless serve`, the engine
and transformers all load. Throughput does not depend on the weights' values; equality checks
compare the implementations on the same random weights.

  python3 bench/serve/make_hf_model.py --tokenizer-dir DIR --out OUT [--shape base|minilm]
"""
import argparse
import shutil

import torch
from transformers import BertConfig, BertForSequenceClassification

SHAPES = {
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072),
    "minilm": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                   intermediate_size=1536),
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tokenizer-dir", required=True, help="holds tokenizer.json (BERT WordPiece)")
    p.add_argument("--out", required=True)
    p.add_argument("--shape", choices=sorted(SHAPES), default="base")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    config = BertConfig(vocab_size=30522, max_position_embeddings=512, num_labels=2,
                        id2label={0: "negative", 1: "positive"},
                        label2id={"negative": 0, "positive": 1}, **SHAPES[args.shape])
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(args.out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        try:
            shutil.copy(f"{args.tokenizer_dir}/{name}", f"{args.out}/{name}")
        except FileNotFoundError:
            if name == "tokenizer.json":
                raise
    print(args.out)


if __name__ == "__main__":
    main()
