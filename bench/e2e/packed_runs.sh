# Sourced by ratio_runs.sh and last_layer_on_off.sh: one packed-varlen padless_bench_e2e run and one
# run of the plain-PyTorch packed peer (bench/baselines/torch_packed.py), each printing its real
# tokens/s in thousands. The caller sets out (output directory), steps and b (build directory).

run_padless() {  # tag [extra padless_bench_e2e flags...]; writes $out/padless_TAG.log, RESULTS_TAG.md
  local tag=$1
  shift
  "$b/bench/e2e/padless_bench_e2e" --data "$data" --out_dir "$out/report" \
    --results_md "$out/RESULTS_$tag.md" --strategies packed_varlen --checkpoint none \
    --fp32_strategies "" --anchors=false --steps "$steps" "$@" > "$out/padless_$tag.log" 2>&1
  grep -o 'flash: [0-9.]*k real tok/s' "$out/padless_$tag.log" | grep -o '[0-9.][0-9.]*k' |
    tr -d k | tail -1
}

run_peer() {  # tag; needs the lengths file the first padless run wrote
  python3 bench/baselines/torch_packed.py --lengths "$out/report/imdb_lengths.txt" \
    --budget 16384 --max-len 512 --vocab 16000 --warmup 10 --steps "$steps" --seed 1234 \
    > "$out/peer_$1.log" 2>&1
  python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("%.1f" % (rows[-1]["real_tokens_per_s"] / 1e3))' "$out/peer_$1.log"
}
