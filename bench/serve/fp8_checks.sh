#!/usr/bin/env bash
# FP8 inference weights on the GPU machine, in one call (bench/serve/README.md, "FP8 weights"):
#   1. the GPU tests of the FP8 path (per-row kernel, tensor-core product, FP8 layer against its
#      CPU emulation);
#   2. a GPU-only kernel trace of the engine's offline pass in bf16 and in fp8, summed per kernel
#      family (bench/e2e/trace_summary.py): where FP8 wins and what it adds;
#   3. quantized_accuracy.sh: dev accuracy with bf16 and FP8 weights of fine-tuned models.
# usage (after .gpu/remote.sh built padless_cli, padless_bench_serve and the test targets):
#   bash bench/serve/fp8_checks.sh BUILD_DIR HF_BASE_DIR DATA_DIR OUT [MODELS]
# HF_BASE_DIR: a Hugging Face BERT-base-shaped directory (make_hf_model.py); DATA_DIR: imdb_train.tsv,
# sst2_train.tsv, sst2_dev.tsv; MODELS: quantized_accuracy.sh's name=HF_DIR list (default: base).
set -uo pipefail
build=$1 hf_base=$2 data=$3 out=$4 models=${5:-base=$2}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
echo "== FP8 GPU tests" >&2
"$build/tests/cuda/padless_cuda_tests" --gtest_filter='*Fp8Rowwise*' 2>&1 | grep -E "FAILED|Failure|PASSED" -A3 | head -20
"$build/tests/models/padless_models_tests" --gtest_filter='*FusedInference*' 2>&1 | grep -E "FAILED|Failure|PASSED" -A3 | head -20
for amp in bf16 fp8; do
  echo "== kernel trace, $amp" >&2
  "$build/bench/serve/padless_bench_serve" --model "$hf_base" --data "$data/imdb_train.tsv" \
    --limit 8000 --device cuda --amp "$amp" --loads "" --max_batch_tokens 32768 \
    --trace "$out/trace_$amp.json" --trace_texts 4000 --label "trace_$amp" | tail -1
  python3 "$here/../e2e/trace_summary.py" "$out/trace_$amp.json" --steps 1 --top 14
done
echo "== accuracy with FP8 weights" >&2
bash "$here/quantized_accuracy.sh" "$build/cli/padless" "$models" "$data" "$out/accuracy"
