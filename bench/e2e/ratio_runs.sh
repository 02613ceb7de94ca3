#!/bin/bash
# The same-run ratio of padless's packed bf16 step to the plain-PyTorch packed peer
# (bench/baselines/torch_packed.py), measured ROUNDS times in alternation: peer, padless, peer,
# padless, ... The peer's own figure moves by 10-20% between runs on the shared H200 (388k-492k
# real tok/s in sessions 5-7), and in padless_bench_e2e it always runs last, on a GPU the padless
# configurations just heated; alternating gives each side both positions, and every round is a
# ratio of neighbours. Prints one line per round (with padless's MFU) and the median ratio.
# STEPS (default 50) sets both sides' timed steps: longer runs measure the sustained clock.
# usage (on the GPU machine, after .gpu/remote.sh built build-gpu/):
#   [STEPS=200] bash bench/e2e/ratio_runs.sh DATA OUT_DIR [ROUNDS=3]
set -euo pipefail
usage="usage: bash bench/e2e/ratio_runs.sh DATA OUT_DIR [ROUNDS=3]"
data=${1:?$usage}
out=${2:?$usage}
rounds=${3:-3}
steps=${STEPS:-50}
b=${PADLESS_BUILD_DIR:-build-gpu}
mkdir -p "$out"

source "$(dirname "$0")/packed_runs.sh"

ratios=()
run_padless 0 > /dev/null  # tokenizer and lengths file; also warms the build's data cache
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then
    peer=$(run_peer "$r"); mine=$(run_padless "$r")
  else
    mine=$(run_padless "$r"); peer=$(run_peer "$r")
  fi
  ratio=$(python3 -c "print(f'{$mine / $peer:.3f}')")
  ratios+=("$ratio")
  mfu=$(grep -o 'MFU [0-9.]*%' "$out/RESULTS_$r.md" | head -1)
  echo "round $r ($( ((r % 2)) && echo 'peer first' || echo 'padless first')): padless ${mine}k ($mfu), peer ${peer}k real tok/s: ${ratio}x"
done
python3 -c "import statistics, sys; print(f'median ratio over {len(sys.argv) - 1} rounds: {statistics.median(map(float, sys.argv[1:])):.3f}x')" "${ratios[@]}"
