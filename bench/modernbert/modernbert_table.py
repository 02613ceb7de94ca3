#!/usr/bin/env python3
"""The three tables of the ModernBERT benchmark (issue 45, item 4) from modernbert_bench.sh's JSON
lines: training real tokens/s, serving texts/s and memory per real token, each anchor's row with
padless's ratio to it from the same run. A missing row (a step that failed, timed out or was
skipped) shows as "-" and the failed steps are listed below the tables, so a partial run still
prints what it measured.

  python3 bench/modernbert/modernbert_table.py OUT/modernbert.jsonl
"""
import json
import sys

IMPLS = ["padless", "torch_varlen", "transformers"]
# padless / anchor ratios that issue 45 asks for (memory: the anchor's peak per token / padless's).
TARGETS = {"train": {"transformers": 1.5, "torch_varlen": 1.2}, "serve": {"torch_varlen": 1.25},
           "memory": {"transformers": 2.0}}


def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip().startswith("{")]


def fmt(v, spec="{:.0f}"):
    return "-" if v is None else spec.format(v)


def ratio(mine, theirs, key):
    if not mine or not theirs or not theirs.get(key) or mine.get(key) is None:
        return None
    return mine[key] / theirs[key]


def target_note(table, impl, r):
    want = TARGETS.get(table, {}).get(impl)
    if want is None or r is None:
        return ""
    return f" (target {want}x: {'met' if r >= want else 'missed'})"


def by(rows, table, **keys):
    return [r for r in rows if r.get("table") == table and
            all(r.get(k) == v for k, v in keys.items())]


def amps(rows, table):
    names = {"off": "fp32"}
    used = {names.get(r.get("amp"), r.get("amp", "?")) for r in by(rows, table)}
    return "/".join(sorted(used)) or "?"


def train_line(ds, impl, r, x):
    """One training row: its rate, padless's ratio to it, its batches and its peak memory."""
    kind = r.get("attention", "") + (f", {r['batches']}" if r.get("batches") else "")
    peak, per_token = r.get("peak_allocated_bytes"), r.get("peak_bytes_per_real_token")
    cells = [ds, impl, kind, fmt(r["real_tokens_per_s"]),
             fmt(x, "{:.2f}x") + target_note("train", impl, x), fmt(r["step_ms"], "{:.1f}"),
             fmt(r["real_tokens_per_step"]), fmt(r["padding_efficiency"], "{:.3f}"),
             fmt(peak and peak / 2**30, "{:.2f}"), fmt(per_token and per_token / 1024, "{:.1f}")]
    return "| " + " | ".join(cells) + " |"


def train_table(rows):
    if not by(rows, "train"):
        return print("## Training: no rows\n")
    print(f"## Training: real tokens/s ({amps(rows, 'train')}, AdamW, token budget per step)\n")
    print("| dataset | implementation | attention / batches | real tok/s | padless vs it "
          "| step ms | real tok/step | padding eff. | peak GiB | peak KiB / real tok |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for ds in dict.fromkeys(r["dataset"] for r in by(rows, "train")):
        got = {r["impl"]: r for r in by(rows, "train", dataset=ds)}
        for impl in IMPLS:
            r = got.get(impl)
            if r is None:
                print(f"| {ds} | {impl} |" + " - |" * 8)
                continue
            print(train_line(ds, impl, r, ratio(got.get("padless"), r, "real_tokens_per_s")))
    print()


def serve_table(rows):
    if not by(rows, "serve"):
        return print("## Serving: no rows\n")
    print(f"## Serving: text in, probabilities out ({amps(rows, 'serve')})\n")
    print("| dataset | implementation | batches | texts | texts/s | real tok/s | padless vs it |")
    print("|---|---|---|---:|---:|---:|---:|")
    for ds in dict.fromkeys(r["dataset"] for r in by(rows, "serve")):
        got = {r["impl"]: r for r in by(rows, "serve", dataset=ds)}
        for impl in IMPLS:
            r = got.get(impl)
            if r is None:
                print(f"| {ds} | {impl} | - | - | - | - | - |")
                continue
            x = ratio(got.get("padless"), r, "texts_per_s")
            kind = r.get("batches") or r.get("attention", "")
            print(f"| {ds} | {impl} | {kind} | {r['texts']} | {fmt(r['texts_per_s'])} | "
                  f"{fmt(r['real_tokens_per_s'])} | {fmt(x, '{:.2f}x')}"
                  f"{target_note('serve', impl, x)} |")
    print()


MEM_STEPS_NOTE = "few steps, the first included, so a rough cost"


def kib(r):
    if r is None or r.get("oom"):
        return "OOM" if r else "-"
    v = r.get("peak_bytes_per_real_token")
    return fmt(v and v / 1024, "{:.1f}")


def memory_table(rows):
    if not by(rows, "memory") and not by(rows, "train"):
        return print("## Memory: no rows\n")
    print("## Memory: peak allocated per real token of a training step (KiB; weights, gradients "
          "and AdamW state included)\n")
    mem = by(rows, "memory")
    recomputed = sorted({r["impl"] for r in mem if r["impl"].startswith("padless, ")})
    print("| seq len | rows / step | padless | " + "".join(f"{c} | " for c in recomputed) +
          "torch_varlen | transformers (padded) | transformers / padless | " +
          "".join(f"transformers / {c} | " for c in recomputed))
    print("|---:" * (6 + 2 * len(recomputed)) + "|")
    for n in sorted({r["seq_len"] for r in mem}):
        got = {r["impl"]: r for r in mem if r["seq_len"] == n}
        theirs = got.get("transformers")
        ratios = [ratio(theirs, got.get(c), "peak_bytes_per_real_token")
                  for c in ["padless"] + recomputed]
        any_row = next(iter(got.values()))
        print(f"| {n} | {any_row.get('rows', '-')} | {kib(got.get('padless'))} | " +
              "".join(f"{kib(got.get(c))} | " for c in recomputed) +
              f"{kib(got.get('torch_varlen'))} | {kib(theirs)} | " +
              "".join(f"{fmt(x, '{:.2f}x')}{target_note('memory', 'transformers', x)} | "
                      for x in ratios))
    for c in recomputed:
        rates = {r["seq_len"]: r.get("whole_run_tokens_per_s") for r in mem if r["impl"] == c}
        plain = {r["seq_len"]: r.get("whole_run_tokens_per_s") for r in mem
                 if r["impl"] == "padless"}
        costs = [f"{n}: {rates[n] / plain[n]:.2f}x" for n in sorted(rates)
                 if rates[n] and plain.get(n)]
        if costs:
            print(f"\n{c}: its real tokens/s over padless's without, same lengths (these runs' "
                  f"{MEM_STEPS_NOTE}): {', '.join(costs)}.")
    lens = sorted({r.get("max_len") for r in by(rows, "train") if r.get("max_len")})
    print(f"\nSame data, the training runs (--max-len {'/'.join(map(str, lens)) or '?'}, the "
          "training table's peaks; transformers' batches padded):\n")
    print("| dataset | padless KiB / real tok | transformers KiB / real tok "
          "| transformers / padless |")
    print("|---|---:|---:|---:|")
    for ds in dict.fromkeys(r["dataset"] for r in by(rows, "train")):
        got = {r["impl"]: r for r in by(rows, "train", dataset=ds)}
        x = ratio(got.get("transformers"), got.get("padless"), "peak_bytes_per_real_token")
        print(f"| {ds} | {kib(got.get('padless'))} | {kib(got.get('transformers'))} | "
              f"{fmt(x, '{:.2f}x')}{target_note('memory', 'transformers', x)} |")
    print()


def notes(rows):
    devices = sorted({r["device"] for r in rows if r.get("device")})
    print(f"Device: {', '.join(devices) or '?'}; torch "
          f"{', '.join(sorted({r['torch'] for r in rows if r.get('torch')})) or '?'}.")
    for r in by(rows, "check"):
        print(f"Check ({r['dataset']}): torch_varlen's logits of one packed batch of lengths "
              f"{r['lengths']} against {r['reference']} on each alone: max |diff| "
              f"{r['max_abs_diff']:.2e} (largest |logit| {r['max_abs_logit']:.2f}), "
              f"{'ok' if r['ok'] else 'NOT OK'}.")
    for r in by(rows, "setup"):
        print(f"Setup: {r.get('what')}: {json.dumps(r.get('info'))}")
    for r in by(rows, "error"):
        print(f"Step failed or skipped: {r['step']} ({r['why']}); log: {r.get('log', '-')}")


def main():
    rows = load(sys.argv[1])
    train_table(rows)
    serve_table(rows)
    memory_table(rows)
    notes(rows)


if __name__ == "__main__":
    main()
