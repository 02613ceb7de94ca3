#!/bin/bash
# The same-run ratio of padless's packed bf16 step to the plain-PyTorch packed peer
# (bench/baselines/torch_packed.py), measured ROUNDS times in alternation: peer, padless, peer,
# padless, ... The peer's own figure moves by 10-20% between runs on the shared H200 (388k-492k
# real tok/s in sessions 5-7), and in padless_bench_e2e it always runs last, on a GPU the padless
# configurations just heated; alternating gives each side both positions, and every round is a
# ratio of neighbours. Prints one line per round (with padless's MFU) and the median ratio.
# STEPS (default 50) sets both sides' timed steps: longer runs measure the sustained clock.
# PRECISION (default bf16) is padless's side: fp8 measures the FP8 GEMMs against the same peer.
# ATTENTION (default auto) is padless's varlen attention backend (fa3: FlashAttention-3, in a build
# with PADLESS_FA3_ATTENTION); ATTENTION_DROPOUT (default: BERT's 0.1) its attention dropout: FA3
# has none, so ATTENTION=fa3 takes ATTENTION_DROPOUT=0, which is also the peer's.
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

run_padless() {  # round
  local log=$out/padless_$1.log
  "$b/bench/e2e/padless_bench_e2e" --data "$data" --out_dir "$out/report" \
    --results_md "$out/RESULTS_$1.md" --strategies packed_varlen --checkpoint none \
    --fp32_strategies "" --anchors=false --steps "$steps" --precisions "${PRECISION:-bf16}" \
    --varlen_attention "${ATTENTION:-auto}" --attention_dropout "${ATTENTION_DROPOUT:--1}" \
    > "$log" 2>&1
  # The rate line names the backend that ran (flash, fa3, ...), so match what follows it.
  grep -oE ': [0-9.]+k real tok/s, padding' "$log" | head -1 | grep -oE '[0-9.]+k' | tr -d k
}

run_peer() {  # round; needs the lengths file the first padless run wrote
  python3 bench/baselines/torch_packed.py --lengths "$out/report/imdb_lengths.txt" \
    --budget 16384 --max-len 512 --vocab 16000 --warmup 10 --steps "$steps" --seed 1234 \
    > "$out/peer_$1.log" 2>&1
  python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("%.1f" % (rows[-1]["real_tokens_per_s"] / 1e3))' "$out/peer_$1.log"
}

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
