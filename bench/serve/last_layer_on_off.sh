#!/usr/bin/env bash
# The last layer on [CLS] rows alone, on and off (issue 26): padless_bench_serve offline under each
# precision of AMP, with ModelRuntime::last_layer_rows_only on (the default) and off
# (--last_layer_all_rows), then the plain-PyTorch varlen anchor on the token lengths the engine
# saw, alternating ROUNDS times in one call. JSON lines go to OUT/last_layer.jsonl; prints a
# Markdown table with each row's ratio to the anchor of its round.
#   bench/serve/last_layer_on_off.sh BUILD_DIR MODEL_DIR DATA OUT
# Environment: ROUNDS (2), AMP ("bf16 fp8"), LIMIT (texts, 0 = all).
set -euo pipefail
build=$(realpath "$1") model=$(realpath "$2") data=$(realpath "$3") out=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(realpath "$out")
jsonl=$out/last_layer.jsonl
: > "$jsonl"
for ((r = 1; r <= ${ROUNDS:-2}; r++)); do
  for a in ${AMP:-bf16 fp8}; do
    for all_rows in false true; do
      label=engine_${a}_cls_rows
      [[ $all_rows == true ]] && label=engine_${a}_all_rows
      "$build/bench/serve/padless_bench_serve" --model "$model" --data "$data" \
        --limit "${LIMIT:-0}" --device cuda --amp "$a" --loads "" \
        --last_layer_all_rows="$all_rows" --lengths_out "$out/lengths.txt" --label "$label" |
        sed "s/^{/{\"round\": $r, /" | tee -a "$jsonl"
    done
  done
  (cd "$root/bench/baselines" && python3 serve_anchors.py --lengths "$out/lengths.txt" \
      --hf-dir "$model" --data "$data" --limit "${LIMIT:-0}" --device cuda \
      --anchors torch_varlen) | sed "s/^{/{\"round\": $r, /" | tee -a "$jsonl"
done
python3 - "$jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
anchor = {r["round"]: r["real_tokens_per_s"] for r in rows if r["name"] == "torch_varlen"}
print("| round | path | texts/s | real tokens/s | vs torch_varlen |")
print("|---:|---|---:|---:|---:|")
for r in rows:
    if r.get("mode", "offline") != "offline":
        continue
    ratio = r["real_tokens_per_s"] / anchor[r["round"]]
    print(f"| {r['round']} | {r['name']} | {r['texts_per_s']:.0f} "
          f"| {r['real_tokens_per_s'] / 1e6:.3f}M | {ratio:.2f}x |")
PY
