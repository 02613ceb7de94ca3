#!/bin/bash
# The training step with the last layer on [CLS] rows alone, on and off (ModelRuntime::
# last_layer_rows_only; --last_layer_all_rows), against the plain-PyTorch packed peer
# (bench/baselines/torch_packed.py), alternating ROUNDS times in one call: peer, on, off, ... for
# each precision of PRECISIONS. Prints one line per run: real tokens/s and the ratio to the peer
# of its round.
# usage (on the GPU machine, after .gpu/remote.sh built build-gpu/):
#   [STEPS=100] [PRECISIONS="bf16 fp8"] bash bench/e2e/last_layer_on_off.sh DATA OUT_DIR [ROUNDS=2]
set -euo pipefail
usage="usage: bash bench/e2e/last_layer_on_off.sh DATA OUT_DIR [ROUNDS=2]"
data=${1:?$usage}
out=${2:?$usage}
rounds=${3:-2}
steps=${STEPS:-100}
b=${PADLESS_BUILD_DIR:-build-gpu}
mkdir -p "$out"

source "$(dirname "$0")/packed_runs.sh"

run_padless warm > /dev/null  # tokenizer and lengths file
for ((r = 1; r <= rounds; ++r)); do
  peer=$(run_peer "$r")
  echo "round $r: peer ${peer}k real tok/s"
  for p in ${PRECISIONS:-bf16 fp8}; do
    for all_rows in false true; do
      k=$(run_padless "${r}_${p}_${all_rows}" --precisions "$p" --last_layer_all_rows="$all_rows")
      rows="[CLS] rows"
      [[ $all_rows == true ]] && rows="all rows"
      python3 -c "import sys; print(f'round {sys.argv[1]}: padless {sys.argv[2]} ({sys.argv[3]}) {float(sys.argv[4]):.1f}k real tok/s, {float(sys.argv[4]) / float(sys.argv[5]):.2f}x the peer')" \
        "$r" "$p" "$rows" "$k" "$peer"
    done
  done
done
