#!/usr/bin/env bash
# The CPU int8 path against quantize_dynamic, profiled in one call (issue 44). Per round,
# alternating: the engine end to end (padless_bench_serve --device cpu, raw text in), the
# engine's forward alone on its own batches (padless_cpu_int8_probe), and transformers' model
# alone, quantize_dynamic int8 and fp32, on the token lengths the engine saw
# (cpu_int8_profile.py). With PROFILE=1 the first round also prints per-operator self times of
# both forwards. JSON lines go to OUT/profile.jsonl.
#   bench/serve/cpu_int8_profile.sh BUILD_DIR MODEL_DIR DATA OUT
# Environment: ROUNDS (2), AMP (int8; "off int8" adds fp32 engine rows), PROFILE (1),
# ENGINE_FLAGS (more padless_bench_serve flags; default --max_batch_tokens 2048 --warmup 100),
# ANCHORS (hf_int8_cpu,hf_sorted).
set -euo pipefail
build=$(realpath "$1") model=$(realpath "$2") data=$(realpath "$3") out=$4
rounds=${ROUNDS:-2} amp=${AMP:-int8} profile=${PROFILE:-1} anchors=${ANCHORS:-hf_int8_cpu,hf_sorted}
engine_flags=${ENGINE_FLAGS:---max_batch_tokens 2048 --warmup 100}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(realpath "$out")
tag() { sed "s/^{/{\"round\": $1, /"; }
for ((r = 1; r <= rounds; r++)); do
  flag=""
  [[ $profile == 1 && $r == 1 ]] && flag=--profile
  for a in $amp; do
    echo "== round $r: engine end to end ($a)" >&2
    "$build/bench/serve/padless_bench_serve" --model "$model" --data "$data" --device cpu \
      --amp "$a" --loads "" --lengths_out "$out/lengths.txt" --label "padless_engine_$a" \
      $engine_flags | tag "$r" | tee -a "$out/profile.jsonl"
    echo "== round $r: engine forward alone ($a)" >&2
    "$build/bench/serve/padless_cpu_int8_probe" --model "$model" --data "$data" --amp "$a" \
      --label "padless_$a" $flag | tag "$r" | tee -a "$out/profile.jsonl"
  done
  echo "== round $r: transformers ($anchors)" >&2
  python3 "$root/bench/serve/cpu_int8_profile.py" --hf-dir "$model" --lengths "$out/lengths.txt" \
    --anchors "$anchors" $flag 2>/dev/null | tag "$r" | tee -a "$out/profile.jsonl"
done
