#!/usr/bin/env bash
# Fine-tunes all-MiniLM-L6-v2 on SST-2 with padless and with Hugging Face transformers, same
# recipe (lr 5e-5, batch 32, max length 128, fp32, linear warmup 6% and decay), same data, same
# thread count, and prints dev accuracy and training real tokens/s of both (issue 14's accuracy
# and CPU speed proof). Also runs padless's frozen-encoder feature extraction (head only).
#   scripts/finetune_minilm.sh [train-rows (default 20000)] [epochs (default 1)] [threads]
# Needs the wordpiece tokenizer backend (padless train --init-from an HF directory) and Python
# with transformers. Writes under ${PADLESS_OUT:-/tmp/padless_minilm_sst2}.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rows=${1:-20000}
epochs=${2:-1}
threads=${3:-$(nproc)}
out=${PADLESS_OUT:-/tmp/padless_minilm_sst2}
padless=${PADLESS_BIN:-$root/build/cli/padless}
minilm=${PADLESS_MINILM:-$("$root/scripts/fetch_minilm.sh")}
mkdir -p "$out"
timer=()  # peak memory of each run, where GNU time is installed
[[ -x /usr/bin/time ]] && timer=(/usr/bin/time -v)
head -n $((rows + 1)) "$root/data/sst2_train_20k.tsv" > "$out/train.tsv"
dev=$root/data/sst2_dev.tsv
# PADLESS_DEVICE=cuda PADLESS_AMP=bf16 runs the same comparison on a GPU (both sides in bf16).
device=${PADLESS_DEVICE:-cpu}
amp=${PADLESS_AMP:-off}
hf_amp=()
[[ $amp == bf16 ]] && hf_amp=(--bf16)
recipe=(--lr 5e-5 --batch-size 32 --max-len 128 --epochs "$epochs" --device "$device" --amp "$amp"
        --threads "$threads" --dropout 0.1 --warmup 0.06 --lr-schedule linear)
for batching in padded varlen; do
  rm -rf "$out/padless_$batching"
  "${timer[@]}" "$padless" train --init-from "$minilm" --data "$out/train.tsv" --dev "$dev" \
    --out "$out/padless_$batching" --batching "$batching" "${recipe[@]}" \
    2> >(tee "$out/padless_$batching.log" >&2)
done
rm -rf "$out/padless_frozen"
"${timer[@]}" "$padless" train --init-from "$minilm" --data "$out/train.tsv" --dev "$dev" \
  --out "$out/padless_frozen" --batching varlen --freeze-embeddings --freeze-layers 6 \
  "${recipe[@]}" 2> >(tee "$out/padless_frozen.log" >&2)
OMP_NUM_THREADS=$threads "${timer[@]}" python3 "$root/bench/baselines/hf_finetune.py" \
  --model "$minilm" --train "$out/train.tsv" --dev "$dev" --epochs "$epochs" --lr 5e-5 \
  --batch-size 32 --max-length 128 --threads "$threads" "${hf_amp[@]}" 2> "$out/hf.log" \
  | tee "$out/hf.json"
grep -h "Maximum resident" "$out"/*.log || true
