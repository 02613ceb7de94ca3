#!/usr/bin/env bash
# Data-parallel scaling of `padless train` on 2 H200s (device kind nvidia-h200-x2, NVLink
# multicast left off): BERT-base, bf16, packed varlen, IMDB; one GPU and two GPUs in the same call,
# plus the all-reduce cost of one step alone. Writes bench/report/h200x2_dist_<commit>.md.
#
#   bash bench/dist/h200x2_scaling.sh            # from the repository root, CUDA build in build/
#
# Needs ../shared/data/imdb_train.tsv, a CUDA build of padless (build/cli/padless) and python3
# with torch (for the NCCL all-reduce micro-benchmark). Takes about 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/cli/padless}
DATA=${DATA:-../shared/data/imdb_train.tsv}
OUT=${OUT:-/tmp/padless_dist_bench}
EPOCHS=${EPOCHS:-2}
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
REPORT=bench/report/h200x2_dist_${COMMIT}.md
export NCCL_NVLS_ENABLE=0  # NVLink multicast off, as the device notes ask
rm -rf "$OUT" && mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpus.txt"

common=(train --data "$DATA" --dev-fraction 0.1 --preset base --amp bf16 --batching packed_varlen
        --max-len 512 --max-tokens 16384 --epochs "$EPOCHS" --vocab-size 16000
        --seed 1234 --threads 16)
# The tokenizer is trained once and reused (DIR/tokenizer.model), so both runs see the same ids.
"$BIN" "${common[@]}" --out "$OUT/gpu1" --device cuda:0 --metrics-json "$OUT/gpu1.json" \
  2> "$OUT/gpu1.err"
for comm in fp32 bf16; do
  mkdir -p "$OUT/gpu2_$comm" && cp "$OUT/gpu1/tokenizer.model" "$OUT/gpu2_$comm/"
  "$BIN" "${common[@]}" --out "$OUT/gpu2_$comm" --nproc-per-node 2 --grad-comm "$comm" \
    --metrics-json "$OUT/gpu2_$comm.json" 2> "$OUT/gpu2_$comm.err"
done
for dtype in fp32 bf16; do
  torchrun --nproc-per-node 2 bench/dist/allreduce_bench.py --dtype "$dtype" \
    > "$OUT/allreduce_$dtype.json"
done
python3 bench/dist/scaling_report.py --dir "$OUT" --commit "$COMMIT" > "$REPORT"
cat "$REPORT"
