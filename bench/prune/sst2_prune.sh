#!/usr/bin/env bash
# Structured pruning of a fine-tuned all-MiniLM-L6-v2 on SST-2 (issue 27): fine-tunes the model
# with padless, prunes it with `padless prune` (importance scores, K rounds of remove and
# fine-tune), and measures, in the same run:
#   - dev accuracy, heads, FFN neurons and parameters per round (DIR/pruned/prune_report.csv), and
#     the unpruned model fine-tuned for the same number of steps (the control);
#   - serving throughput of the unpruned and the pruned model: `padless predict` over the dev texts
#     repeated 4 times, alternating the two models for 3 rounds (texts/s, the best and the median).
# Prints a Markdown table. The CPU by default; PADLESS_DEVICE=cuda PADLESS_AMP=bf16 on a GPU.
#   bench/prune/sst2_prune.sh [train-rows (4000)] [heads share (0.5)] [ffn share (0.3)]
#                             [rounds (2)] [fine-tune steps per round (125)]
# Environment: PADLESS_INIT_FROM (the model fine-tuned first; all-MiniLM-L6-v2 by default, or a
# BERT-base-shaped checkpoint from bench/serve/make_hf_model.py), PADLESS_TRAIN_FLAGS (that
# fine-tune's flags), PADLESS_TRAIN_DATA (the SST-2 training file whose first rows are used),
# PADLESS_SERVE_BENCH (padless_bench_serve: time the serving engine's offline benchmark instead of
# `padless predict` over the dev texts), PADLESS_SERVE_DATA (the files it classifies, one row per
# file; the training rows by default).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rows=${1:-4000}
heads=${2:-0.5}
ffn=${3:-0.3}
rounds=${4:-2}
steps=${5:-125}
out=${PADLESS_OUT:-/tmp/padless_prune_sst2}
padless=${PADLESS_BIN:-$root/build/cli/padless}
device=${PADLESS_DEVICE:-cpu}
amp=${PADLESS_AMP:-off}
init_from=${PADLESS_INIT_FROM:-$("$root/scripts/fetch_minilm.sh")}
train_flags=${PADLESS_TRAIN_FLAGS:---batching varlen --lr 5e-5 --batch-size 32 --epochs 1}
serve_bench=${PADLESS_SERVE_BENCH:-}
mkdir -p "$out"
head -n $((rows + 1)) "${PADLESS_TRAIN_DATA:-$root/data/sst2_train_20k.tsv}" > "$out/train.tsv"
dev=$root/data/sst2_dev.tsv
common=(--max-len 128 --device "$device" --amp "$amp")
if [[ ! -f $out/base/model.safetensors ]]; then
  # shellcheck disable=SC2086  # train_flags is a list of flags
  "$padless" train --init-from "$init_from" --data "$out/train.tsv" --dev "$dev" --out "$out/base" \
    $train_flags "${common[@]}" --quiet
fi
rm -rf "$out/pruned"
"$padless" prune --model "$out/base" --data "$out/train.tsv" --dev "$dev" --out "$out/pruned" \
  --heads "$heads" --ffn "$ffn" --rounds "$rounds" --steps "$steps" "${common[@]}" --quiet \
  > "$out/prune_report.csv"
# The control: the unpruned model fine-tuned for as many steps as all rounds together (the same
# job defaults), so the table separates what pruning costs from what the extra training gives.
rm -rf "$out/control"
"$padless" train --init-from "$out/base" --data "$out/train.tsv" --dev "$dev" --out "$out/control" \
  --epochs 100 --max-steps $((rounds * steps)) "${common[@]}" --quiet \
  --metrics-json "$out/control.json"
# Serving: the dev texts four times over through `padless predict` (from process start), or each
# serving file through the engine's offline benchmark; the two models alternate, 3 rounds.
for _ in 1 2 3 4; do tail -n +2 "$dev" | cut -f2; done > "$out/serve_texts.txt"
texts=$(wc -l < "$out/serve_texts.txt")
rates=$out/serve_rates.txt.$$
for round in 1 2 3; do
  for model in base pruned; do
    if [[ -n $serve_bench ]]; then
      for f in ${PADLESS_SERVE_DATA:-$out/train.tsv}; do
        "$serve_bench" --model "$out/$model" --data "$f" --device "$device" --amp "$amp" \
          --max_len 512 --warmup 4096 --loads "" --label "$model" |
          python3 -c "import json, sys; r = json.loads(sys.stdin.readline())
print(r['name'], sys.argv[1], r['texts_per_s'], r['real_tokens_per_s'] / r['texts_per_s'])" \
            "$(basename "$f")" >> "$rates"
      done
      continue
    fi
    start=$(date +%s.%N)
    "$padless" predict --model "$out/$model" --data "$out/serve_texts.txt" \
      --device "$device" --amp "$amp" --max-len 128 > /dev/null
    end=$(date +%s.%N)
    echo "$model dev-texts-x4 $(python3 -c "print($texts / ($end - $start))") 0" >> "$rates"
  done
done
serving="padless predict from process start"
[[ -z $serve_bench ]] || serving="the engine's offline benchmark"
python3 - "$out/prune_report.csv" "$rates" "$device" "$amp" "$out/control.json" "$serving" <<'PY'
import csv, json, statistics, sys
report, rates, device, amp, control, serving = sys.argv[1:]
rows = list(csv.DictReader(open(report)))
speed, tokens = {}, {}
for line in open(rates):
    model, texts, rate, per_text = line.split()
    speed.setdefault((texts, model), []).append(float(rate))
    tokens[texts] = float(per_text)
print(f"device {device}, amp {amp}; serving: {serving}, texts/s (median of 3, best)")
print("| round | heads | FFN neurons | parameters | dev acc (pruned) | dev acc (fine-tuned) |")
print("|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['round']} | {r['heads_left']} | {r['ffn_left']} | {int(r['parameters'])/1e6:.2f}M "
          f"| {float(r['dev_accuracy_pruned']):.4f} | {r['dev_accuracy_tuned'] or '-'} |")
dev = json.load(open(control))
print(f"| control (unpruned, fine-tuned as long as all rounds) | {rows[0]['heads_left']} "
      f"| {rows[0]['ffn_left']} | | | "
      f"{dev['accuracy']:.4f} |")
print("\n| serving texts | tokens/text | unpruned texts/s (best) | pruned texts/s (best) | speed-up |")
print("|---|---:|---:|---:|---:|")
for texts in tokens:
    base, pruned = speed[(texts, 'base')], speed[(texts, 'pruned')]
    b, p = statistics.median(base), statistics.median(pruned)
    print(f"| {texts} | {tokens[texts]:.1f} | {b:.0f} ({max(base):.0f}) | {p:.0f} ({max(pruned):.0f}) "
          f"| {p / b:.2f}x |")
PY
rm -f "$rates"
