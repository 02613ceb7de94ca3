#!/usr/bin/env bash
# Data-parallel scaling of `padless train` on 2 H200s (device kind nvidia-h200-x2, NVLink
# multicast left off): BERT-base, bf16, packed varlen, IMDB; one GPU and two GPUs in the same call,
# plus the all-reduce cost of one step alone and one GPU at the 2-GPU global batch (--grad-accum 2)
# as the accuracy reference. Writes bench/report/h200x2_dist_<commit>.md.
#
#   bash bench/distributed/h200x2_scaling.sh            # from the repository root, CUDA build in build/
#
# Needs ../shared/data/imdb_train.tsv, a CUDA build of padless (build/cli/padless) and python3
# with torch (for the NCCL all-reduce micro-benchmark). Takes about 5 minutes (EPOCHS=2).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/cli/padless}
DATA=${DATA:-../shared/data/imdb_train.tsv}
OUT=${OUT:-/tmp/padless_distributed_bench}
EPOCHS=${EPOCHS:-2}
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
REPORT=bench/report/h200x2_dist_${COMMIT}.md
export NCCL_NVLS_ENABLE=0  # NVLink multicast off, as the device notes ask
rm -rf "$OUT" && mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpus.txt"

common=(train --data "$DATA" --dev-fraction 0.1 --preset base --amp bf16 --batching packed_varlen
        --max-len 512 --max-tokens 16384 --epochs "$EPOCHS" --vocab-size 16000
        --seed 1234 --threads 16)
# RUNS picks the runs (default all): gpu1 (one GPU, the speed baseline), gpu2_fp32 and gpu2_bf16
# (two GPUs, fp32 or bf16 gradient communication), gpu1_accum2 (one GPU with --grad-accum 2: the
# same global batch as two GPUs, the reference for their dev accuracy), allreduce (the NCCL
# all-reduce of one step's gradients alone). The first run trains the tokenizer, the others reuse it.
RUNS=${RUNS:-gpu1 gpu2_fp32 gpu2_bf16 gpu1_accum2 allreduce}
wants() { [[ " $RUNS " == *" $1 "* ]]; }
train() {  # name, extra flags...
  local name=$1; shift
  mkdir -p "$OUT/$name"
  local tokenizer
  tokenizer=$(ls "$OUT"/*/tokenizer.model 2>/dev/null | head -n1 || true)
  [[ -n $tokenizer ]] && cp "$tokenizer" "$OUT/$name/"
  "$BIN" "${common[@]}" --out "$OUT/$name" --metrics-json "$OUT/$name.json" "$@" 2> "$OUT/$name.err"
}
wants gpu1 && train gpu1 --device cuda:0
for comm in fp32 bf16; do
  wants "gpu2_$comm" && train "gpu2_$comm" --nproc-per-node 2 --grad-comm "$comm"
done
wants gpu1_accum2 && train gpu1_accum2 --device cuda:0 --grad-accum 2
if wants allreduce; then
  for dtype in fp32 bf16; do
    torchrun --nproc-per-node 2 bench/distributed/allreduce_bench.py --dtype "$dtype" \
      > "$OUT/allreduce_$dtype.json"
  done
fi
python3 bench/distributed/scaling_report.py --dir "$OUT" --commit "$COMMIT" > "$REPORT"
cat "$REPORT"
