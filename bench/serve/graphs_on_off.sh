#!/usr/bin/env bash
# CUDA graphs in the engine, on and off (issue 26): padless_bench_serve offline and online at light
# loads (where batches hold a few texts and the host's kernel launches bound them), with
# --cuda_graph_max_tokens 4096 and 0 alternating ROUNDS times in one call. Prints a Markdown table
# (latency percentiles and the share of batches that replayed a graph) from the JSON lines, which
# go to OUT/graphs.jsonl, and plots latency against load (OUT/latency.csv, OUT/latency.svg).
#   bench/serve/graphs_on_off.sh BUILD_DIR MODEL_DIR DATA OUT
# Environment: ROUNDS (2), LOADS (0.02,0.1,0.25,0.5), AMP (bf16), SECONDS_PER_LOAD (5).
set -euo pipefail
build=$(realpath "$1") model=$2 data=$3 out=$4
mkdir -p "$out"
jsonl=$out/graphs.jsonl
: > "$jsonl"
for ((r = 1; r <= ${ROUNDS:-2}; r++)); do
  for graphs in 4096 0; do
    "$build/bench/serve/padless_bench_serve" --model "$model" --data "$data" --device cuda \
      --amp "${AMP:-bf16}" --loads "${LOADS:-0.02,0.1,0.25,0.5}" \
      --online_seconds "${SECONDS_PER_LOAD:-5}" --cuda_graph_max_tokens "$graphs" \
      --label "graphs_$graphs" | sed "s/^{/{\"round\": $r, /" >> "$jsonl"
  done
done
python3 - "$jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print("| round | graphs | mode | load | texts/s | p50 ms | p90 ms | p99 ms | graphed batches |")
print("|---:|---|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    on = "on (<4096 tokens)" if r["name"] == "graphs_4096" else "off"
    if r["mode"] == "offline":
        print(f"| {r['round']} | {on} | offline | | {r['texts_per_s']:.0f} | | | | |")
    else:
        print(f"| {r['round']} | {on} | online | {r['load']:.2f} | {r['completed_per_s']:.0f} "
              f"| {r['p50_ms']:.2f} | {r['p90_ms']:.2f} | {r['p99_ms']:.2f} "
              f"| {r['graphed_share']:.2f} |")
PY
python3 "$(dirname "$0")/latency_plot.py" "$jsonl" "$out/latency" \
  --title "CUDA graphs on (graphs_4096) and off (graphs_0): latency against load"
