#!/usr/bin/env bash
# The embedding and rerank benchmark in one call (issue 44): random-init BERT-base-shaped models
# with the bert-base-uncased WordPiece tokenizer (make_st_model.py: a sentence-transformers
# directory with mean pooling and Normalize, and a one-label cross-encoder), IMDB texts (and
# (query, text) pairs made from them); padless's engine offline (padless_bench_embed) in each
# precision of AMP, then the anchors of bench/baselines/embed_anchors.py on the same texts and the
# same model files, per task; then, on the first precision, `padless serve` over HTTP
# (http_load.py: 32 clients posting batches of 32 texts to /embed, and single texts at 75% load)
# and a connection flood (conn_flood.py). JSON lines go to OUT/embed.jsonl, embed_table.py's
# tables to OUT/table.md, the first 64 outputs of every path (parity) to OUT/vectors.tar; the bulky
# files (models, texts, pairs) stay in WORK (/tmp/embed_serve_work), so that OUT holds three files
# (the device tool brings back at most 8 files of 16 MiB).
#   bench/serve/embed_serve.sh BUILD_DIR TOKENIZER_DIR DATA OUT [DEVICE]
# DEVICE: cuda (default) or cpu. Environment (defaults: cuda / cpu):
#   LIMIT          texts and pairs for padless and the anchors (25000 / 200; 0: the whole file)
#   ST_FP32_LIMIT  texts for the fp32 sentence-transformers rows (5000 / LIMIT)
#   AMP            padless precisions ("bf16 fp8" / "off int8")
#   ST_AMPS        sentence-transformers precisions (fp32,bf16 / fp32)
#   ANCHORS        embed anchors (st,torch_varlen,hf_sorted,hf_e2e / st,hf_sorted,hf_e2e,hf_int8_cpu)
#   RERANK_ANCHORS (st,torch_varlen,hf_sorted / st,hf_sorted,hf_int8_cpu)
#   TASKS          ("embed rerank"); SHAPE (base / minilm); ROUNDS (1)
#   ST_DIR, CE_DIR models to use instead of the random ones (e.g. all-MiniLM-L6-v2's directory)
#   HTTP, FLOOD    1 runs http_load.py / conn_flood.py (1 where BUILD_DIR/cli/padless exists)
#   FLOOD_IDLE, FLOOD_SLOW  (10000, 500 / 2000, 100); HTTP_FLAGS, FLOOD_FLAGS: more flags
#   ENGINE_FLAGS   more padless_bench_embed flags
#   ATTENTIONS     the engine's attention backends, one row each (auto; e.g. "auto fa3": rows
#                  padless_bf16 and padless_bf16_fa3, in a build with PADLESS_FA3_ATTENTION)
# Time on an H200 at the defaults, estimated (not yet measured): about 5 minutes after the build
# (padless, 4 runs: ~1 min; anchors: ~2.5 min; HTTP: ~40 s; flood: ~45-70 s).
set -euo pipefail
build=$(realpath "$1") tokenizer_dir=$(realpath "$2") data=$(realpath "$3") out=$4 device=${5:-cuda}
root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ $device == cpu ]]; then
  limit=${LIMIT:-200} st_fp32_limit=${ST_FP32_LIMIT:-0} amp=${AMP:-off int8} shape=${SHAPE:-minilm}
  st_amps=${ST_AMPS:-fp32} anchors=${ANCHORS:-st,hf_sorted,hf_e2e,hf_int8_cpu}
  rerank_anchors=${RERANK_ANCHORS:-st,hf_sorted,hf_int8_cpu}
  batch_tokens=2048 flood_idle=${FLOOD_IDLE:-2000} flood_slow=${FLOOD_SLOW:-100}
  engine_flags=${ENGINE_FLAGS:---tokenizer_threads 1 --warmup 32}
  http_flags=${HTTP_FLAGS:---seconds 8 --single-seconds 6 --procs 2 --workers 32}
else
  limit=${LIMIT:-25000} st_fp32_limit=${ST_FP32_LIMIT:-5000} amp=${AMP:-bf16 fp8} shape=${SHAPE:-base}
  st_amps=${ST_AMPS:-fp32,bf16} anchors=${ANCHORS:-st,torch_varlen,hf_sorted,hf_e2e}
  rerank_anchors=${RERANK_ANCHORS:-st,torch_varlen,hf_sorted}
  batch_tokens=32768 flood_idle=${FLOOD_IDLE:-10000} flood_slow=${FLOOD_SLOW:-500}
  engine_flags=${ENGINE_FLAGS:-}
  http_flags=${HTTP_FLAGS:-}
fi
rounds=${ROUNDS:-1} tasks=${TASKS:-embed rerank} first_amp=${amp%% *}
attentions=${ATTENTIONS:-auto}
padless=$build/cli/padless
http=${HTTP:-$([[ -x $padless ]] && echo 1 || echo 0)}
flood=${FLOOD:-$http}
work=${WORK:-/tmp/embed_serve_work}
mkdir -p "$out" "$work/vectors"
out=$(realpath "$out") work=$(realpath "$work")
jsonl=$out/embed.jsonl vectors=$work/vectors
: >"$jsonl"
rm -f "$vectors"/*.npy
# Nothing may come from the Hugging Face hub (the GPU machine has no network).
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
# Keep the device tool's 12,000-character output tail for the tables, not progress bars.
export TRANSFORMERS_VERBOSITY=error HF_HUB_DISABLE_PROGRESS_BARS=1 PYTHONWARNINGS=ignore

st=${ST_DIR:-$work/st_$shape} ce=${CE_DIR:-$work/ce_$shape}
[[ -f $st/config.json ]] || python3 "$root/bench/serve/make_st_model.py" \
  --tokenizer-dir "$tokenizer_dir" --st-out "$st" --shape "$shape" >/dev/null
[[ -f $ce/config.json ]] || python3 "$root/bench/serve/make_st_model.py" \
  --tokenizer-dir "$tokenizer_dir" --ce-out "$ce" --shape "$shape" >/dev/null
# One texts file and one pairs file that every path reads whole.
texts=$work/texts.tsv pairs=$work/pairs.tsv
if ((limit > 0)); then head -n $((limit + 1)) "$data" > "$texts"; else cp "$data" "$texts"; fi
(cd "$root/bench/baselines" && python3 embed_anchors.py --write-pairs "$pairs" --data "$texts")

tag() { sed -u "s/^{/{\"round\": $1, /"; }
# A failed step is reported and the others still run: one device call gets every row it can.
failed=0
warn() { echo "embed_serve.sh: FAILED: $*" >&2; failed=$((failed + 1)); }
for ((r = 1; r <= rounds; r++)); do
  for task in $tasks; do
    if [[ $task == embed ]]; then
      model=$st input=$texts input_flag=--data task_anchors=$anchors
    else
      model=$ce input=$pairs input_flag=--pairs task_anchors=$rerank_anchors
    fi
    for a in $amp; do
      for att in $attentions; do
        # The default backend keeps the plain label that http_load.py's --offline-name reads.
        label=padless_$a${att:+_$att}
        label=${label%_auto}
        echo "== round $r: padless $task ($device, $a, attention $att)" >&2
        # shellcheck disable=SC2086
        "$build/bench/serve/padless_bench_embed" --model "$model" --data "$input" --device "$device" \
          --amp "$a" --attention "$att" --max_batch_tokens "$batch_tokens" --label "$label" \
          --vectors_out "$vectors/${task}_$label.npy" $engine_flags | tag "$r" |
          tee -a "$jsonl" || warn "padless_bench_embed $task $a $att"
      done
    done
    echo "== round $r: $task anchors ($task_anchors; sentence-transformers $st_amps)" >&2
    (cd "$root/bench/baselines" && python3 embed_anchors.py --task "$task" --model "$model" \
        "$input_flag" "$input" --device "$device" --anchors "$task_anchors" --amps "$st_amps" \
        --st-limit-fp32 "$st_fp32_limit" --vectors-dir "$vectors") | tag "$r" |
      tee -a "$jsonl" || warn "embed_anchors.py $task"
  done
done

if [[ $http == 1 ]]; then
  echo "== padless serve over HTTP ($device, $first_amp)" >&2
  # shellcheck disable=SC2086
  (cd "$root/bench/serve" && python3 http_load.py --padless "$padless" --model "$st" \
      --data "$texts" --device "$device" --amp "$first_amp" --max-batch-tokens "$batch_tokens" \
      --offline-jsonl "$jsonl" --offline-name "padless_$first_amp" $http_flags) |
    tee -a "$jsonl" || warn "http_load.py"
fi
if [[ $flood == 1 ]]; then
  echo "== connection flood ($flood_idle idle, $flood_slow slow)" >&2
  # shellcheck disable=SC2086
  (cd "$root/bench/serve" && python3 conn_flood.py --padless "$padless" --model "$st" \
      --data "$texts" --device "$device" --amp "$first_amp" --idle "$flood_idle" \
      --slow "$flood_slow" ${FLOOD_FLAGS:-}) | tee -a "$jsonl" || warn "conn_flood.py"
fi
tar -C "$work" -cf "$out/vectors.tar" vectors
python3 "$root/bench/serve/embed_table.py" "$jsonl" "$vectors" | tee "$out/table.md"
((failed == 0)) || { echo "embed_serve.sh: $failed step(s) failed (above)" >&2; exit 1; }
