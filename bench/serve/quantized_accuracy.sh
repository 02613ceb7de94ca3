#!/usr/bin/env bash
# The accuracy cost of FP8 inference weights (issue 26: SST-2 and IMDB dev accuracy within 0.3 point
# of bf16, on a fine-tuned all-MiniLM-L6-v2 and a BERT-base-shaped model). For each model and task:
# `padless train --init-from` the Hugging Face directory (bf16, fixed seed), then `padless predict`
# on the dev texts with --amp bf16 and with --amp fp8 (the serving engine's path), compared by
# quantized_accuracy.py. IMDB has no test split here: its last 2,500 rows (the file is shuffled)
# are the dev set, the first 22,500 the training set.
#   bash bench/serve/quantized_accuracy.sh PADLESS MODELS DATA_DIR OUT
# MODELS: space-separated name=HF_DIR pairs, e.g. "minilm=/tmp/minilm base=/tmp/hf_base".
# DATA_DIR holds imdb_train.tsv, sst2_train.tsv and sst2_dev.tsv. Writes OUT/<name>-<task>/ and
# OUT/quantized_accuracy.jsonl, and prints a table. Environment: TASKS ("sst2 imdb"),
# EPOCHS (empty: padless's default), LR (empty: padless's default for --init-from).
set -euo pipefail
padless=${1:?usage: quantized_accuracy.sh PADLESS MODELS DATA_DIR OUT}
models=${2:?MODELS} data=${3:?DATA_DIR} out=${4:?OUT}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
{ head -n 22501 "$data/imdb_train.tsv"; } > "$out/imdb_fit.tsv"
{ head -n 1 "$data/imdb_train.tsv"; tail -n 2500 "$data/imdb_train.tsv"; } > "$out/imdb_dev.tsv"
jsonl=$out/quantized_accuracy.jsonl
: > "$jsonl"
for pair in $models; do
  name=${pair%%=*} hf=${pair#*=}
  for task in ${TASKS:-sst2 imdb}; do
    case $task in
      sst2) fit=$data/sst2_train.tsv dev=$data/sst2_dev.tsv ;;
      imdb) fit=$out/imdb_fit.tsv dev=$out/imdb_dev.tsv ;;
    esac
    dir=$out/$name-$task
    rm -rf "$dir" && mkdir -p "$dir"
    start=$(date +%s)
    "$padless" train --init-from "$hf" --data "$fit" --dev "$dev" --out "$dir/model" --amp bf16 \
      --device cuda --seed 1234 ${EPOCHS:+--epochs $EPOCHS} ${LR:+--lr $LR} \
      --metrics-json "$dir/metrics.json" > "$dir/train.out" 2>&1 ||
      { tail -n 20 "$dir/train.out"; exit 1; }
    seconds=$(($(date +%s) - start))
    for amp in bf16 fp8; do
      "$padless" predict --model "$dir/model" --data "$dev" --device cuda --amp "$amp" \
        > "$dir/predict_$amp.txt" 2> "$dir/predict_$amp.err" ||
        { tail -n 20 "$dir/predict_$amp.err"; exit 1; }
    done
    python3 "$here/quantized_accuracy.py" "$dev" "$dir/predict_bf16.txt" "$dir/predict_fp8.txt" |
      sed "s/^{/{\"model\": \"$name\", \"task\": \"$task\", \"train_seconds\": $seconds, /" |
      tee -a "$jsonl"
  done
done
python3 - "$jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| model | task | dev texts | bf16 accuracy | fp8 accuracy | fp8 - bf16 (points) | labels flipped | max abs dp |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['model']} | {r['task']} | {r['texts']} | {r['accuracy_a']:.4f} | {r['accuracy_b']:.4f} | "
          f"{r['delta_points']:+.2f} | {100 * r['label_flips']:.2f}% | {r['max_abs_dp']:.4f} |")
PY
