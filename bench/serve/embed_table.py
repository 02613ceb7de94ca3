"""Prints the embedding and rerank benchmark (bench/serve/embed_serve.sh) as Markdown tables:

  offline  per task, every path's texts, tokens (the same texts give the same count on every
           path: padless's tokenizer equals Hugging Face's), texts/s, real tokens/s and MFU, and
           its ratio to each anchor of the same round, by real tokens/s (rows over fewer texts,
           such as the fp32 sentence-transformers ones, compare by the rate of the tokens they
           ran);
  parity   padless's outputs for the first texts (VECTORS_DIR/<task>_<name>.npy) against
           sentence-transformers fp32 (`encode`, `CrossEncoder.predict`), and the anchors' too:
           the minimum cosine (issue 44's measure), the minimum cosine after subtracting the
           reference's mean vector (random-init models give every text nearly the same direction,
           so the plain cosine alone says little; the centered one does), the largest absolute
           difference; for rerank, the largest score difference and the share of input pairs
           ordered alike (the ranking's agreement);
  http     http_load.py's and conn_flood.py's lines, when there are any.

  python3 bench/serve/embed_table.py embed.jsonl VECTORS_DIR
"""
import json
import os
import sys

import numpy as np

ANCHORS = {"embed": ["torch_varlen", "st_encode_bf16", "st_encode_fp32", "hf_sorted", "hf_e2e",
                     "hf_int8_cpu"],
           "rerank": ["torch_varlen", "ce_predict_bf16", "ce_predict_fp32", "hf_sorted",
                      "hf_e2e", "hf_int8_cpu"]}
REFERENCE = {"embed": ["st_encode_fp32", "st_encode_bf16"],
             "rerank": ["ce_predict_fp32", "ce_predict_bf16"]}
COSINE_TARGET = {"off": 0.99999, "fp32": 0.99999, "bf16": 0.999, "fp8": 0.99}


def mfu(row, same_round):
    # The engine measures no matmul rate on the CPU: its row takes the anchors' of the same round.
    if row.get("mfu"):
        return row["mfu"]
    peak = max((a.get("matmul_tflops", 0.0) for a in same_round), default=0.0)
    return row.get("tflops", 0.0) / peak if peak else 0.0


def offline_table(task, rows):
    rows = [r for r in rows if r.get("task") == task and r.get("mode") == "offline"]
    if not rows:
        return
    anchors = [a for a in ANCHORS[task] if any(r["name"] == a for r in rows)]
    print(f"\n### {task}: offline, text in to {'vectors' if task == 'embed' else 'scores'} out\n")
    print("| round | path | amp | texts | tokens | texts/s | real tokens/s | MFU | "
          + " | ".join(f"vs {a}" for a in anchors) + " |")
    print("|---:|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(anchors))
    for r in rows:
        same = [a for a in rows if a.get("round") == r.get("round")]
        ratios = []
        for name in anchors:
            anchor = next((a for a in same if a["name"] == name), None)
            ratios.append(f"{r['real_tokens_per_s'] / anchor['real_tokens_per_s']:.2f}x"
                          if anchor else "")
        print(f"| {r.get('round', '')} | {r['name']} | {r.get('amp', '')} | {r['texts']} | "
              f"{r.get('tokens', '')} | "
              f"{r['texts_per_s']:.1f} | {r['real_tokens_per_s'] / 1e6:.3f}M | "
              f"{100 * mfu(r, same):.1f}% | " + " | ".join(ratios) + " |")


def load(vectors_dir, task, name):
    path = os.path.join(vectors_dir, f"{task}_{name}.npy")
    if not os.path.exists(path):
        return None
    v = np.load(path).astype(np.float64)
    return v.reshape(len(v), -1) if task == "embed" else v.reshape(-1)


def cosines(a, b):
    return (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1),
                                       1e-30)


def concordance(a, b):
    """The share of input pairs that `a` and `b` order alike (ties in `b` left out): a ranking's
    agreement; a random cross-encoder's scores lie close together, so near-ties may flip."""
    i, j = np.triu_indices(len(a), 1)
    keep = b[i] != b[j]
    return float((np.sign(a[i] - a[j]) == np.sign(b[i] - b[j]))[keep].mean()) if keep.any() else 1.0


def parity_table(task, rows, vectors_dir):
    ref_name = next((n for n in REFERENCE[task] if load(vectors_dir, task, n) is not None), None)
    if ref_name is None:
        return
    ref = load(vectors_dir, task, ref_name)
    names = []
    for r in rows:
        if (r.get("task") == task and r.get("mode") == "offline" and r["name"] != ref_name
                and r["name"] not in names):
            names.append(r["name"])
    amp_of = {r["name"]: r.get("amp", "") for r in rows if r.get("task") == task}
    print(f"\n### {task}: parity with {ref_name} on the first {len(ref)} inputs\n")
    if task == "embed":
        others = cosines(ref, np.roll(ref, 1, axis=0))
        print(f"(For scale: the cosine between different texts' {ref_name} vectors is "
              f"{others.min():.5f} to {others.max():.5f}.)\n")
        print("| path | amp | min cosine | min centered cosine | max abs diff | cosine target |")
        print("|---|---|---:|---:|---:|---|")
    else:
        print("| path | amp | max abs score diff | pairs ordered alike | target |")
        print("|---|---|---:|---|---|")
    center = ref.mean(0) if task == "embed" else None
    for name in names:
        v = load(vectors_dir, task, name)
        if v is None or v.shape[0] < len(ref):
            continue
        v = v[:len(ref)]
        amp = amp_of.get(name, "")
        if task == "embed":
            target = COSINE_TARGET.get(amp) if name.startswith("padless") else None
            c, cc = cosines(v, ref).min(), cosines(v - center, ref - center).min()
            verdict = "" if target is None else f"{target} ({'met' if c >= target else 'MISSED'})"
            print(f"| {name} | {amp} | {c:.6f} | {cc:.6f} | {np.abs(v - ref).max():.2e} | "
                  f"{verdict} |")
        else:
            diff = np.abs(v - ref).max()
            verdict = ""
            if name.startswith("padless") and amp in ("off", "fp32"):
                verdict = f"1e-4 ({'met' if diff <= 1e-4 else 'MISSED'})"
            print(f"| {name} | {amp} | {diff:.2e} | {100 * concordance(v, ref):.1f}% | "
                  f"{verdict} |")


def http_tables(rows):
    http = [r for r in rows if r.get("mode") == "http"]
    if http:
        print(f"\n### HTTP ({http[0].get('route', '/embed')})\n")
        print("| path | amp | clients | batch | load | texts/s | vs offline | p50 ms | p99 ms | "
              "p99 / full batch | statuses | bad answers | client cores |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
        for r in http:
            def f(key, fmt):
                return format(r[key], fmt) if r.get(key) is not None else ""
            print(f"| {r['name']} | {r.get('amp', '')} | {r.get('clients', r.get('workers', ''))} "
                  f"| {r.get('batch', 1)} | {f('load', '.2f')} | {f('texts_per_s', '.0f')} | "
                  f"{f('vs_offline', '.2f')} | {f('p50_ms', '.1f')} | {f('p99_ms', '.1f')} | "
                  f"{f('p99_over_full_batch', '.2f')} | {json.dumps(r.get('statuses', {}))} | "
                  f"{r.get('bad_answers', '')} | {f('client_cores', '.1f')} |")
    for r in (r for r in rows if r.get("mode") == "flood"):
        print(f"\n### Connection flood: {r['idle_connected']} of {r['idle']} idle and "
              f"{r['slow_connected']} of {r['slow']} slow connections open\n")
        print("| | p50 ms | p99 ms | statuses | server RSS MiB |")
        print("|---|---:|---:|---|---:|")
        for phase in ("quiet", "flood", "after"):
            p50 = r.get(f"{phase}_p50_ms")
            p99 = r.get(f"{phase}_p99_ms")
            rss = r.get(f"rss_{phase}_mb")
            print(f"| {phase} | {'' if p50 is None else f'{p50:.1f}'} | "
                  f"{'' if p99 is None else f'{p99:.1f}'} | "
                  f"{json.dumps(r.get(f'{phase}_statuses', {}))} | "
                  f"{'' if rss is None else f'{rss:.0f}'} |")
        ratio = r.get("p99_over_quiet")
        print(f"\np99 flooded / quiet: {'n/a' if ratio is None else f'{ratio:.2f}'} (target <= 2); "
              f"closed by the server within {r.get('held_seconds', 0):.0f} s: slow "
              f"{r['slow_close']['closed']} (median at {r['slow_close']['close_p50_s']} s), idle "
              f"{r['idle_close']['closed']}; answers to flood sockets {r.get('answers_to_flood')}; "
              f"server exit code {r.get('exit_code')}.")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip().startswith("{")]
    vectors_dir = sys.argv[2] if len(sys.argv) > 2 else ""
    for task in ("embed", "rerank"):
        offline_table(task, rows)
        if vectors_dir:
            parity_table(task, rows, vectors_dir)
    http_tables(rows)


if __name__ == "__main__":
    main()
