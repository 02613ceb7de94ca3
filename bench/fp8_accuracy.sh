#!/usr/bin/env bash
# Dev accuracy of FP8 GEMMs against bf16 (issue 16: within 0.5 point for the small and base
# presets), on IMDB with a fixed 10% held out: `padless train` from scratch with its defaults,
# the same seed, data order and tokenizer for both precisions, one run per preset and precision.
#   bash bench/fp8_accuracy.sh PADLESS_BINARY IMDB_TSV OUT_DIR [presets (default "small base")]
# Writes OUT_DIR/<preset>-<amp>/ (model, train_log.csv, metrics.json) and OUT_DIR/fp8_accuracy.csv
# (preset, amp, dev accuracy, macro-F1, training seconds), and prints the table. Needs a GPU with
# FP8 tensor cores (compute capability 8.9+).
set -euo pipefail
padless=${1:?usage: fp8_accuracy.sh PADLESS_BINARY IMDB_TSV OUT_DIR [presets]}
data=${2:?IMDB_TSV}
out=${3:?OUT_DIR}
presets=${4:-small base}
mkdir -p "$out"
csv=$out/fp8_accuracy.csv
echo "preset,amp,dev_accuracy,dev_macro_f1,train_seconds" > "$csv"
# One tokenizer for every run, trained once by the first (a model directory with a tokenizer
# keeps it), so that the runs differ in precision only.
tokenizer=""
for preset in $presets; do
  for amp in bf16 fp8; do
    dir=$out/$preset-$amp
    rm -rf "$dir" && mkdir -p "$dir"
    [[ -n $tokenizer ]] && cp "$tokenizer" "$dir/tokenizer.model"
    start=$(date +%s)
    "$padless" train --data "$data" --dev-fraction 0.1 --out "$dir" --preset "$preset" \
      --amp "$amp" --seed 1234 --metrics-json "$dir/metrics.json" > "$dir/train.out" 2>&1 \
      || { tail -n 20 "$dir/train.out"; exit 1; }
    seconds=$(($(date +%s) - start))
    [[ -z $tokenizer ]] && tokenizer=$dir/tokenizer.model
    python3 - "$dir/metrics.json" "$preset" "$amp" "$seconds" >> "$csv" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]},{sys.argv[3]},{m['accuracy']:.4f},{m['macro_f1']:.4f},{sys.argv[4]}")
EOF
  done
done
tr , "\t" < "$csv"
