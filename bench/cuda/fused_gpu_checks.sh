#!/bin/bash
# Issue 16's checks on the GPU machine, in one call (run through .gpu/remote.sh, which builds
# build-gpu/): the fused kernels' tests, the fused layer's tests against per-op autograd, the
# kernels' micro-benchmarks against the unfused ops, and a short end-to-end run against the
# plain-PyTorch packed peer with a profiler trace. Everything lands in $OUT/fused_checks.tar.gz
# (the device tool returns at most 8 files); the summary table prints last.
# usage: bash bench/cuda/fused_gpu_checks.sh [tests] [gpu_suites] [micro] [e2e] [e2e_quick] [e2e_fp8]
#          [gputrace] [clip] [ratio] [fp8_accuracy] [dense] [full]
#        (default: tests micro e2e; MICRO="bench ..." picks the micro-benchmarks)
set -uo pipefail
out=${OUT:-/tmp/out}/fused
mkdir -p "$out"
b=build-gpu
stages=("$@")
((${#stages[@]})) || stages=(tests micro e2e)
want() { [[ " ${stages[*]} " == *" $1 "* ]]; }
status=0
pack() { tar -czf "${OUT:-/tmp/out}/fused_checks.tar.gz" -C "$(dirname "$out")" fused; }
run() {  # name command...: runs, logs to $out/name.log, prints the tail, packs what exists so far
  local name=$1; shift
  echo "== $name: $*"
  "$@" > "$out/$name.log" 2>&1; local rc=$?
  tail -n 25 "$out/$name.log"; echo "== $name rc=$rc"
  ((rc == 0)) || status=1
  pack
}
if want tests; then
  run cuda_tests "$b/tests/cuda/padless_cuda_tests" --gtest_filter='*ResidualLayerNorm*:*GemmEpilogue*:*BiasGrad*:*Fp8Quantize*:*CudaKernel*'
  run fused_layer_tests "$b/tests/models/padless_models_tests" --gtest_filter='*Fused*:*EncoderGpu*:*Gpu*:*Fp8*'
fi
if want gpu_suites; then
  # Every suite with GPU tests, whole (their CPU tests run too).
  run suite_cuda "$b/tests/cuda/padless_cuda_tests"
  run suite_models "$b/tests/models/padless_models_tests"
  run suite_budget "$b/tests/train/padless_train_budget_gpu_tests"
  run suite_batching "$b/tests/batching/padless_batching_tests"
fi
if want micro; then
  for bench in ${MICRO:-residual_layer_norm_bench gemm_epilogue_bench bias_grad_bench fp8_quantize_bench}; do
    [[ -x $b/bench/cuda/$bench ]] && run "$bench" "$b/bench/cuda/$bench" --benchmark_min_time=0.2 \
      --benchmark_out="$out/$bench.json" --benchmark_out_format=json
  done
fi
e2e_common=(--data .gpu/data/imdb_train.tsv --out_dir "$out/report" --results_md "$out/RESULTS.md")
if want e2e; then
  run e2e "$b/bench/e2e/padless_bench_e2e" "${e2e_common[@]}" --strategies packed_varlen \
    --checkpoint none,selective --generic_layers_checkpoint none --fp32_strategies "" \
    --hf_strategies pad_longest --trace_dir "$out/traces"
  for f in "$out"/traces/*.json; do
    run "trace_$(basename "${f%.json}")" python3 bench/e2e/trace_summary.py "$f" --steps 3 --top 30 \
      --csv "${f%.json}.csv"
  done
  gzip -f "$out"/traces/*.json
fi
if want e2e_quick; then
  run e2e_quick "$b/bench/e2e/padless_bench_e2e" "${e2e_common[@]}" --strategies packed_varlen \
    --checkpoint none --fp32_strategies "" --hf_strategies pad_longest
fi
if want e2e_fp8; then
  # bf16 and FP8 GEMMs in one run, against the plain-PyTorch peer of the same run.
  run e2e_fp8 "$b/bench/e2e/padless_bench_e2e" "${e2e_common[@]}" --strategies packed_varlen \
    --precisions bf16,fp8 --checkpoint none --fp32_strategies "" --hf_strategies ""
fi
if want gputrace; then
  # The GPU's own busy and idle time per step: 20 steps traced without the host's operators, after
  # 200 timed steps (the GPU at its sustained clock).
  # PRECISIONS=bf16,fp8 traces the FP8 GEMMs too.
  run e2e_gputrace "$b/bench/e2e/padless_bench_e2e" "${e2e_common[@]}" --strategies packed_varlen \
    --precisions "${PRECISIONS:-bf16}" --checkpoint none --fp32_strategies "" --anchors=false \
    --steps 200 --trace_dir "$out/gputrace" --trace_steps 20 --notrace_host
  for f in "$out"/gputrace/*.json; do
    run "gputrace_$(basename "${f%.json}")" python3 bench/e2e/trace_summary.py "$f" --steps 20 \
      --top 40 --csv "${f%.json}.csv"
  done
  gzip -f "$out"/gputrace/*.json
fi
if want clip; then
  # What clipping by global norm costs a step (padless train clips at 1.0 by default).
  for clip in 0 1; do
    run "e2e_clip_$clip" "$b/bench/e2e/padless_bench_e2e" --data .gpu/data/imdb_train.tsv \
      --out_dir "$out/clip_$clip" --results_md "$out/clip_$clip/RESULTS.md" \
      --strategies packed_varlen --checkpoint none --fp32_strategies "" --anchors=false \
      --clip_norm $clip
  done
fi
if want ratio; then
  # padless against the peer in alternation, ROUNDS (default 4) rounds: bench/e2e/ratio_runs.sh.
  run ratio bash bench/e2e/ratio_runs.sh .gpu/data/imdb_train.tsv "$out/ratio" "${ROUNDS:-4}"
fi
if want fp8_accuracy; then
  run fp8_accuracy bash bench/fp8_accuracy.sh "$b/cli/padless" .gpu/data/imdb_train.tsv "$out/fp8_accuracy"
fi
if want dense; then
  # Dense batches of varying shape: cuDNN attention (a plan per new shape) against SDPA without it.
  for cudnn in true false; do
    run "e2e_dense_cudnn_$cudnn" "$b/bench/e2e/padless_bench_e2e" --data .gpu/data/imdb_train.tsv \
      --out_dir "$out/dense_$cudnn" --results_md "$out/dense_$cudnn/RESULTS.md" \
      --strategies token_budget_buckets --checkpoint none --fp32_strategies "" --anchors=false \
      --sdpa_cudnn=$cudnn
  done
fi
if want full; then
  # bench/RESULTS.md's own command: every strategy and checkpointing policy, bf16 and FP8 GEMMs
  # (FP8 for packed_varlen: the layout whose layers run them), with the anchors.
  run e2e_full "$b/bench/e2e/padless_bench_e2e" "${e2e_common[@]}" --precisions bf16,fp8 \
    --strategies packed_varlen,token_budget_buckets --checkpoint none,all,selective,keep_last:2,ffn \
    --generic_layers_checkpoint none,all --hf_strategies pad_to_max,pad_longest --fp32_strategies ""
fi
pack
[[ -f $out/RESULTS.md ]] && grep -A8 "^| configuration | attention" "$out/RESULTS.md" | cut -c1-200
exit $status
