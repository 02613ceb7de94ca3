#!/usr/bin/env bash
# Issue 27's GPU table in one call: a BERT-base-shaped model (random init, bench/serve/
# make_hf_model.py) trained on SST-2, and all-MiniLM-L6-v2 fine-tuned on SST-2, each pruned with
# `padless prune` and timed with the serving engine's offline benchmark against its unpruned self
# in the same run (bench/prune/sst2_prune.sh does each model). One Markdown table per model goes
# to OUT/base.md and OUT/minilm.md; their run directories stay under OUT/base and OUT/minilm.
# Serving is timed on two sets of texts: the SST-2 training texts five times over (short, ~13
# tokens) and the first 1000 IMDB training texts twenty times over (long, ~300 tokens).
#   bench/prune/h200_prune.sh BUILD_DIR MINILM_DIR SST2_TRAIN_TSV OUT
# Environment: ROWS (all SST-2 training rows), ROUNDS (2), STEPS (400 per round),
# BASE_HEADS / BASE_FFN (0.5 / 0.5), MINILM_HEADS / MINILM_FFN (0.5 / 0.3),
# BASE_TRAIN_FLAGS (the BERT-base-shaped model's first training), MODELS ("base minilm").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "$1") minilm=$(realpath "$2") train=$(realpath "$3") out=$4
mkdir -p "$out"
out=$(realpath "$out")
export PADLESS_BIN=$build/cli/padless PADLESS_SERVE_BENCH=$build/bench/serve/padless_bench_serve
export PADLESS_DEVICE=${PADLESS_DEVICE:-cuda} PADLESS_AMP=${PADLESS_AMP:-bf16}
rows=${ROWS:-$(($(wc -l < "$train") - 1))} rounds=${ROUNDS:-2} steps=${STEPS:-400}
export PADLESS_TRAIN_DATA=$train PADLESS_SERVE_DATA="$out/sst2_train_x5.tsv $out/imdb_1k_x20.tsv"
repeat() {  # FILE TIMES: the header once, then the rows TIMES over
  head -n 1 "$1"
  for _ in $(seq "$2"); do tail -n +2 "$1"; done
}
repeat "$train" 5 > "$out/sst2_train_x5.tsv"
repeat "$here/../../data/imdb_1k.tsv" 20 > "$out/imdb_1k_x20.tsv"
for model in ${MODELS:-base minilm}; do
  if [[ $model == base ]]; then
    [[ -f $out/hf_base/config.json ]] ||
      python3 "$here/../serve/make_hf_model.py" --tokenizer-dir "$minilm" --out "$out/hf_base" \
        --shape base > /dev/null
    # Trained from random weights, so a higher learning rate and more epochs than a fine-tune.
    PADLESS_OUT=$out/base PADLESS_INIT_FROM=$out/hf_base \
      PADLESS_TRAIN_FLAGS=${BASE_TRAIN_FLAGS:---batching varlen --lr 5e-5 --batch-size 32 --epochs 2} \
      bash "$here/sst2_prune.sh" "$rows" "${BASE_HEADS:-0.5}" "${BASE_FFN:-0.5}" "$rounds" "$steps" \
      > "$out/base.md"
  else
    PADLESS_OUT=$out/minilm PADLESS_INIT_FROM=$minilm \
      bash "$here/sst2_prune.sh" "$rows" "${MINILM_HEADS:-0.5}" "${MINILM_FFN:-0.3}" "$rounds" \
      "$steps" > "$out/minilm.md"
  fi
  cat "$out/$model.md"
done
