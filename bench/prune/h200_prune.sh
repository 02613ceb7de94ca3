#!/usr/bin/env bash
# Issue 27's GPU table in one call: a BERT-base-shaped model (random init, bench/serve/
# make_hf_model.py) trained on SST-2, and all-MiniLM-L6-v2 fine-tuned on SST-2, each pruned with
# `padless prune` and timed with the serving engine's offline benchmark against its unpruned self
# in the same run (bench/prune/sst2_prune.sh does each model). One Markdown table per model goes
# to OUT/base.md and OUT/minilm.md; their run directories stay under OUT/base and OUT/minilm.
#   bench/prune/h200_prune.sh BUILD_DIR MINILM_DIR OUT
# Environment: ROWS (20000 SST-2 training rows), ROUNDS (2), STEPS (250 per round),
# BASE_HEADS / BASE_FFN (0.5 / 0.4), MINILM_HEADS / MINILM_FFN (0.5 / 0.3),
# BASE_TRAIN_FLAGS (the BERT-base-shaped model's first training), MODELS ("base minilm").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "$1") minilm=$(realpath "$2") out=$3
mkdir -p "$out"
out=$(realpath "$out")
export PADLESS_BIN=$build/cli/padless PADLESS_SERVE_BENCH=$build/bench/serve/padless_bench_serve
export PADLESS_DEVICE=${PADLESS_DEVICE:-cuda} PADLESS_AMP=${PADLESS_AMP:-bf16}
rows=${ROWS:-20000} rounds=${ROUNDS:-2} steps=${STEPS:-250}
for model in ${MODELS:-base minilm}; do
  if [[ $model == base ]]; then
    [[ -f $out/hf_base/config.json ]] ||
      python3 "$here/../serve/make_hf_model.py" --tokenizer-dir "$minilm" --out "$out/hf_base" \
        --shape base > /dev/null
    # Trained from random weights, so a higher learning rate and more epochs than a fine-tune.
    PADLESS_OUT=$out/base PADLESS_INIT_FROM=$out/hf_base \
      PADLESS_TRAIN_FLAGS=${BASE_TRAIN_FLAGS:---batching varlen --lr 1e-4 --batch-size 32 --epochs 2} \
      bash "$here/sst2_prune.sh" "$rows" "${BASE_HEADS:-0.5}" "${BASE_FFN:-0.4}" "$rounds" "$steps" \
      > "$out/base.md"
  else
    PADLESS_OUT=$out/minilm PADLESS_INIT_FROM=$minilm \
      bash "$here/sst2_prune.sh" "$rows" "${MINILM_HEADS:-0.5}" "${MINILM_FFN:-0.3}" "$rounds" \
      "$steps" > "$out/minilm.md"
  fi
  cat "$out/$model.md"
done
