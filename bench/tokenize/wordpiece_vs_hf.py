#!/usr/bin/env python3
"""WordPiece encode throughput: padless (build/bench/tokenize/wordpiece_bench) against Hugging
Face `tokenizers` (Rust, via Python's encode_batch on one thread: RAYON_NUM_THREADS=1), on the
same texts with the real all-MiniLM-L6-v2 tokenizer.json, best of 3, no padding or truncation.
Also checks that both give the same total token count.

usage: python3 bench/tokenize/wordpiece_vs_hf.py [--build build] [--data data/imdb_1k.tsv]
"""
import argparse, os, subprocess, sys, tempfile, time

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers starts its thread pool
os.environ["TOKENIZERS_PARALLELISM"] = "false"

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default=os.path.join(ROOT, "data/imdb_1k.tsv"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="wordpiece_bench_")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests/tokenize/wordpiece_refs.py"),
                    "--repo", ROOT, "--out", tmp], check=True, stdout=subprocess.DEVNULL)
    tokenizer_json = os.path.join(tmp, "uncased/tokenizer.json")
    texts = []
    with open(a.data, encoding="utf-8") as f:
        next(f)
        texts = [line.rstrip("\n").split("\t", 1)[1] for line in f if "\t" in line]
    texts_file = os.path.join(tmp, "texts.txt")
    with open(texts_file, "w", encoding="utf-8") as f:
        f.writelines(t + "\n" for t in texts)
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tokenizer_json)
    tok.no_padding()
    tok.no_truncation()
    best, tokens = 1e30, 0
    for _ in range(3):
        start = time.perf_counter()
        encs = tok.encode_batch(texts)
        best = min(best, time.perf_counter() - start)
        tokens = sum(len(e.ids) for e in encs)
    nbytes = sum(len(t.encode()) for t in texts)
    print(f"hf-tokenizers texts={len(texts)} tokens={tokens} bytes={nbytes} seconds={best:.4f} "
          f"MB/s={nbytes / best / 1e6:.2f} tokens/s={tokens / best:.0f}")
    out = subprocess.run([os.path.join(a.build, "bench/tokenize/wordpiece_bench"), tokenizer_json,
                          texts_file, "3"], check=True, capture_output=True, text=True).stdout
    print(out.strip())
    padless_tokens = int(out.split("tokens=")[1].split()[0])
    padless_seconds = float(out.split("seconds=")[1].split()[0])
    print(f"padless/hf speed ratio: {best / padless_seconds:.2f}x"
          f"{'' if padless_tokens == tokens else '  TOKEN COUNTS DIFFER'}")
    return 0 if padless_tokens == tokens else 1


if __name__ == "__main__":
    sys.exit(main())
