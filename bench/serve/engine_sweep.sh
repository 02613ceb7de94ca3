#!/usr/bin/env bash
# The engine's offline rate over its batching knobs, and a GPU-only kernel trace of one setting
# summed per kernel family (bench/e2e/trace_summary.py): where the serving forward spends its time.
#   bench/serve/engine_sweep.sh BUILD_DIR MODEL_DIR DATA OUT
# Environment: TOKENS ("16384 32768 65536"), THREADS ("8 14"), TRACE_TOKENS (32768).
set -euo pipefail
build=$1 model=$2 data=$3 out=$4
mkdir -p "$out"
for tokens in ${TOKENS:-16384 32768 65536}; do
  for threads in ${THREADS:-8 14}; do
    "$build/bench/serve/padless_bench_serve" --model "$model" --data "$data" --loads "" \
      --max_batch_tokens "$tokens" --tokenizer_threads "$threads" \
      --label "engine_t${tokens}_p${threads}" | tee -a "$out/sweep.jsonl"
  done
done
"$build/bench/serve/padless_bench_serve" --model "$model" --data "$data" --loads "" \
  --max_batch_tokens "${TRACE_TOKENS:-32768}" --trace "$out/serve_trace.json" --trace_texts 4000 \
  --label trace_run > /dev/null
python3 "$(dirname "$0")/../e2e/trace_summary.py" "$out/serve_trace.json" --steps 1 --top 20
