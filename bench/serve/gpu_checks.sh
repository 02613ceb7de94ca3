#!/usr/bin/env bash
# Everything the serving issue measures on the GPU machine, in one call (bench/serve/README.md):
#   1. the GPU tests of the inference path (per-row FP8 kernels, fused inference layer against
#      autograd and FP8 against its CPU emulation, engine);
#   2. the serving benchmark (h200_serve.sh: engine offline/online against the anchors);
#   3. `padless predict` end to end on the same texts (the CLI's path through the engine).
# usage (on the GPU machine, after .gpu/remote.sh built the targets):
#   bash bench/serve/gpu_checks.sh BUILD_DIR TOKENIZER_DIR DATA OUT
set -uo pipefail
build=$1 tokenizer_dir=$2 data=$3 out=$4
mkdir -p "$out"
echo "== GPU tests" >&2
"$build/tests/cuda/padless_cuda_tests" --gtest_filter='*Fp8Rowwise*' 2>&1 | tail -4
"$build/tests/models/padless_models_tests" --gtest_filter='*Inference*:*Fused*' 2>&1 | tail -4
"$build/tests/serve/padless_serve_tests" 2>&1 | tail -4
echo "== serving benchmark" >&2
bash "$(dirname "$0")/h200_serve.sh" "$build" "$tokenizer_dir" "$data" "$out"
echo "== padless predict (text in, label out, all texts of $data)" >&2
start=$(date +%s.%N)
"$build/cli/padless" predict --model "${MODEL_DIR:-$out/hf_${SHAPE:-base}}" --data "$data" --device cuda \
  --amp bf16 > "$out/predict.txt"
end=$(date +%s.%N)
python3 -c "import sys; n=sum(1 for _ in open(sys.argv[1])); s=float(sys.argv[3])-float(sys.argv[2]); print(f'padless predict: {n} texts in {s:.2f} s = {n/s:.0f} texts/s (process start and model load included)')" "$out/predict.txt" "$start" "$end"
echo "== padless serve over HTTP: parity with transformers, concurrent clients, SIGTERM drain" >&2
python3 "$(dirname "$0")/serve_smoke.py" --padless "$build/cli/padless" \
  --model "${MODEL_DIR:-$out/hf_${SHAPE:-base}}" --data "$data" --device cuda --amp bf16
