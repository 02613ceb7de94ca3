#!/usr/bin/env bash
# The serving benchmark in one call (issue 26): a random-init BERT-base-shaped Hugging Face
# classifier with the bert-base-uncased WordPiece tokenizer, IMDB texts; padless's engine offline
# and online (padless_bench_serve), then the anchors of bench/baselines/serve_anchors.py on the
# same texts and the token lengths the engine saw, alternating ROUNDS times (the machines are
# shared and noisy: compare within a round). JSON lines go to OUT/serve.jsonl; a table is printed.
#   bench/serve/h200_serve.sh BUILD_DIR TOKENIZER_DIR DATA OUT [DEVICE]
# Environment: ROUNDS (2), LIMIT (texts, 0 = all), AMP (bf16; a list such as "bf16 fp8" runs the
# engine once per precision, rows after the first named padless_engine_<amp>), LOADS (0.75,1.0; empty: offline only),
# SHAPE (base), ANCHORS (torch_varlen,hf_sorted,hf_arrival,hf_e2e on cuda; hf_sorted,hf_int8_cpu on cpu),
# ENGINE_FLAGS (more padless_bench_serve flags), ATTENTIONS (the engine's attention backends, one
# row each: auto; "auto fa3" adds rows padless_engine_<amp>_fa3 in a build with FA3).
set -euo pipefail
build=$(realpath "$1") tokenizer_dir=$(realpath "$2") data=$(realpath "$3") out=$4 device=${5:-cuda}
rounds=${ROUNDS:-2} limit=${LIMIT:-0} amp=${AMP:-bf16} loads=${LOADS-0.75,1.0}
attentions=${ATTENTIONS:-auto}
if [[ $device == cpu ]]; then
  amp=${AMP:-off}  # off, or "off int8" for the engine's int8 weights beside fp32
  anchors=${ANCHORS:-hf_sorted,hf_int8_cpu}
else
  anchors=${ANCHORS:-torch_varlen,hf_sorted,hf_arrival,hf_e2e}
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(realpath "$out")
model=${MODEL_DIR:-$out/hf_${SHAPE:-base}}  # MODEL_DIR: where the checkpoint is written
[[ -f $model/config.json ]] ||
  python3 "$root/bench/serve/make_hf_model.py" --tokenizer-dir "$tokenizer_dir" --out "$model" \
    --shape "${SHAPE:-base}" >/dev/null
for ((r = 1; r <= rounds; r++)); do
  for a in $amp; do
    for att in $attentions; do
      # The first precision on the default backend is the engine row the anchors are read
      # against; the others are named by precision and backend.
      label=padless_engine
      [[ $a == "${amp%% *}" ]] || label=padless_engine_$a
      [[ $att == auto ]] || label=padless_engine_${a}_$att
      echo "== round $r: padless engine ($device, $a, attention $att)" >&2
      "$build/bench/serve/padless_bench_serve" --model "$model" --data "$data" --limit "$limit" \
        --device "$device" --amp "$a" --attention "$att" --loads "$loads" \
        --lengths_out "$out/lengths.txt" ${ENGINE_FLAGS:-} \
        --label "$label" | sed "s/^{/{\"round\": $r, /" | tee -a "$out/serve.jsonl"
    done
  done
  echo "== round $r: anchors ($anchors)" >&2
  (cd "$root/bench/baselines" && python3 serve_anchors.py --lengths "$out/lengths.txt" \
      --hf-dir "$model" --data "$data" --limit "$limit" --device "$device" --anchors "$anchors") |
    sed "s/^{/{\"round\": $r, /" | tee -a "$out/serve.jsonl"
done
python3 "$root/bench/serve/serve_table.py" "$out/serve.jsonl"
# Latency against load: OUT/latency.csv and OUT/latency.svg (when the run had online loads).
if grep -q '"mode": "online"' "$out/serve.jsonl"; then
  python3 "$root/bench/serve/latency_plot.py" "$out/serve.jsonl" "$out/latency"
fi
