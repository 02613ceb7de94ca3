#!/usr/bin/env bash
# The ModernBERT benchmark of issue 45 (item 4) in one call: a random-weight ModernBERT-base-shaped
# Hugging Face checkpoint (make_model.py), IMDB and a long-document set made from it
# (make_long_docs.py), then, in one run, padless against its two anchors (torch_varlen.py, the
# plain-PyTorch varlen ModernBERT, and hf_anchor.py, transformers'
# ModernBertForSequenceClassification):
#   train   `padless train --init-from` (packed varlen, bf16) and both anchors, real tokens/s of the
#           steps after the warm-up, on IMDB (lengths as they are) and on the long documents;
#   serve   padless_bench_serve (the engine, text in, probabilities out) and both anchors on IMDB;
#   memory  peak allocated memory per real token of a training step at each of MEM_LENS: short
#           `padless train` runs at --max-len L against the anchors' memory modes.
# JSON lines go to OUT/modernbert.jsonl, the tables (modernbert_table.py) to OUT/table.md and
# stdout, every step's log to OUT/logs.tgz; the bulky files (checkpoint, data, padless's outputs)
# stay in WORK. Each step runs under a timeout and the whole run under a deadline (TOTAL_S from the
# start of this process: .gpu/remote.sh execs this script, so its build counts); a step that
# fails, times out or finds no time left becomes an "error" row and the tables print what exists.
#
#   bash bench/modernbert/modernbert_bench.sh BUILD_DIR OUT [DEVICE]
# DEVICE cuda (default) or cpu (the tiny shape on a few dozen texts: a test of the scripts).
# Environment (defaults cuda / cpu):
#   SHAPE base / tiny; IMDB (.gpu/data/imdb_train.tsv, else ../shared/data/imdb_train.tsv);
#   IMDB_LIMIT texts of IMDB used (0 = all / 48); MAX_LEN (8192 / 1024); BUDGET token slots per
#   training step (16384 / 2048); SERVE_BUDGET tokens per serving batch (32768 / 4096);
#   WARMUP, STEPS training steps (20, 40 / 2, 4); SERVE_LIMIT texts served (8000 / 48);
#   LONG_DOCS, LONG_MIN, LONG_MAX (400, 4096, 8192 / 12, 512, 1024); MEM_LENS
#   (1024,2048,4096,8192 / 256,512,1024); MEM_DOCS long documents for the memory runs (64 / 12);
#   ATTENTION padless train's --attention (flash; fa3 where built: FlashAttention-3);
#   MEM_CHECKPOINT padless's --checkpoint modes of the memory runs ("none all": without activation
#   checkpointing, then with every layer recomputed); TASKS (check train serve memory); SERVE_SETS (imdb; "imdb long" serves the long documents too);
#   ENGINE_FLAGS more padless_bench_serve flags;
#   TOTAL_S seconds for everything (560); WORK
#   (/tmp/modernbert_bench_work; the checkpoint and data there are reused by a later call).
set -uo pipefail  # no -e: a failed step is recorded and the next one runs
usage="usage: bash bench/modernbert/modernbert_bench.sh BUILD_DIR OUT [cuda|cpu]"
build=$(realpath "${1:?$usage}") out=${2:?$usage} device=${3:-cuda}
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/bench/modernbert
if [[ $device == cpu ]]; then
  shape=${SHAPE:-tiny} imdb_limit=${IMDB_LIMIT:-48} max_len=${MAX_LEN:-1024}
  budget=${BUDGET:-2048} serve_budget=${SERVE_BUDGET:-4096} warmup=${WARMUP:-2}
  steps=${STEPS:-4} serve_limit=${SERVE_LIMIT:-48} long_docs=${LONG_DOCS:-12}
  long_min=${LONG_MIN:-512} long_max=${LONG_MAX:-1024} mem_lens=${MEM_LENS:-256,512,1024}
  mem_docs=${MEM_DOCS:-12} amp=off
else
  shape=${SHAPE:-base} imdb_limit=${IMDB_LIMIT:-0} max_len=${MAX_LEN:-8192}
  budget=${BUDGET:-16384} serve_budget=${SERVE_BUDGET:-32768} warmup=${WARMUP:-20}
  steps=${STEPS:-40} serve_limit=${SERVE_LIMIT:-8000} long_docs=${LONG_DOCS:-400}
  long_min=${LONG_MIN:-4096} long_max=${LONG_MAX:-8192} mem_lens=${MEM_LENS:-1024,2048,4096,8192}
  mem_docs=${MEM_DOCS:-64} amp=bf16
fi
mem_steps=3 tasks=${TASKS:-check train serve memory} serve_sets=${SERVE_SETS:-imdb}
imdb_src=$root/.gpu/data/imdb_train.tsv  # the copy that travels to the GPU machine
[[ -f $imdb_src ]] || imdb_src=$root/../shared/data/imdb_train.tsv
imdb_src=${IMDB:-$imdb_src}
work=${WORK:-/tmp/modernbert_bench_work}
mkdir -p "$out" "$work/logs"
out=$(realpath "$out") work=$(realpath "$work")
logs=$work/logs jsonl=$out/modernbert.jsonl model=$work/model_$shape
padless=$build/cli/padless serve_bench=$build/bench/serve/padless_bench_serve
rm -f "$logs"/* && : >"$jsonl"
# Nothing may come from the Hugging Face hub (the GPU machine has no network); keep the output
# tail for the tables, not progress bars.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 TRANSFORMERS_VERBOSITY=error
export HF_HUB_DISABLE_PROGRESS_BARS=1 PYTHONWARNINGS=ignore TOKENIZERS_PARALLELISM=true

# --- time: the deadline counts from this process's start (remote.sh's build included)
proc_age() {
  local hz start up
  hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
  if ! start=$(awk '{print $22}' "/proc/$$/stat" 2>/dev/null) ||
    ! up=$(cut -d' ' -f1 /proc/uptime 2>/dev/null); then
    echo 0
    return
  fi
  awk -v u="$up" -v s="$start" -v h="$hz" \
    'BEGIN { a = int(u - s / h); print (a > 0 && a < 3600) ? a : 0 }'
}
deadline=$((SECONDS + ${TOTAL_S:-560} - $(proc_age)))
reserve=15  # seconds kept for the tables and the log archive
remaining() { echo $((deadline - SECONDS)); }
wants() { [[ " $tasks " == *" $1 "* ]]; }

error_row() {  # step, why
  printf '{"table": "error", "step": "%s", "why": "%s", "log": "logs/%s.log"}\n' "$1" "$2" "$1" \
    >>"$jsonl"
}

# step NAME LIMIT_S CMD...: CMD under timeout (LIMIT_S, or less when the deadline is nearer),
# stdout and stderr to WORK/logs/NAME.log; a failure, a timeout or a skip becomes an error row.
step() {
  local name=$1 limit=$2 left rc
  shift 2
  left=$(($(remaining) - reserve))
  if ((left < 20)); then
    echo "== skip $name: ${left}s left" >&2
    error_row "$name" "skipped: ${left}s left before the deadline and its reserve"
    return 1
  fi
  ((limit > left)) && limit=$left
  echo "== [${SECONDS}s, $(remaining)s left] $name (timeout ${limit}s)" >&2
  timeout --kill-after=10 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  ((rc == 0)) && return 0
  if ((rc == 124 || rc == 137)); then
    error_row "$name" "timed out after ${limit}s"
  else
    error_row "$name" "exit $rc"
  fi
  tail -n 4 "$logs/$name.log" | cut -c1-300 >&2
  return 1
}

setup_row() {  # what, file whose last line is a JSON object
  printf '{"table": "setup", "what": "%s", "info": %s}\n' "$1" "$(tail -n 1 "$2")" >>"$jsonl"
}

finish() {  # the tables and the logs, also after a failure
  trap - EXIT INT TERM
  python3 "$here/modernbert_table.py" "$jsonl" | tee "$out/table.md"
  tar czf "$out/logs.tgz" -C "$work" logs 2>/dev/null
}
trap finish EXIT
trap 'exit 130' INT TERM

gpu_name() {
  if [[ $device == cuda ]] && command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1
  else
    echo cpu
  fi
}
gpu=$(gpu_name)
echo "== $gpu, shape $shape, work in $work, $(remaining)s before the deadline" >&2

# --- setup: the checkpoint (reused when WORK has it), the data sets
# The checkpoint is written to a scratch directory and renamed when complete: a run cut short
# must not leave a half-written one for the next call to reuse.
make_model() {
  local partial=$model.partial
  if [[ -f $model/config.json ]]; then
    echo "{\"reused\": \"$model\"}" >"$logs/make_model.log"
  else
    rm -rf "$partial"
    if [[ $shape == tiny ]]; then
      step make_model 120 python3 "$here/make_model.py" --out "$partial" --shape tiny \
        --tokenizer "$root/tests/tokenize/data/modernbert/tokenizer.json" || return 1
    else  # a ModernBERT-sized byte-level BPE trained on the IMDB texts (none can be downloaded)
      step make_model 240 python3 "$here/make_model.py" --out "$partial" --shape "$shape" \
        --train-on "$imdb_src" || return 1
    fi
    mv "$partial" "$model"
  fi
  setup_row model "$logs/make_model.log"
}

make_data() {  # the long documents are reused while their parameters and checkpoint are the same
  local stem=$work/long_${shape}_${long_docs}_${long_min}_${long_max}
  imdb=$work/imdb.tsv long=$stem.tsv mem_data=$stem.mem${mem_docs}.tsv
  if ((imdb_limit > 0)); then
    head -n $((imdb_limit + 1)) "$imdb_src" >"$imdb"
  else
    cp "$imdb_src" "$imdb"
  fi
  if [[ ! -f $stem.json || $stem.json -ot $model/config.json ]]; then
    rm -f "$stem.json"
    step make_long_docs 120 python3 "$here/make_long_docs.py" --data "$imdb_src" \
      --model "$model" --out "$long" --docs "$long_docs" --min-tokens "$long_min" \
      --max-tokens "$long_max" || return 1
    tail -n 1 "$logs/make_long_docs.log" >"$stem.json"
  fi
  setup_row "long documents (IMDB reviews of one label joined, seed 45)" "$stem.json"
  head -n $((mem_docs + 1)) "$long" >"$mem_data"
}

make_model || { echo "== no checkpoint: nothing to measure" >&2; exit 1; }
make_data || echo "== no long documents: their rows will be missing" >&2

# --- the runs
anchor() {  # NAME LIMIT_S SCRIPT MODE DATASET DATA [more flags]: one anchor run appending its row
  local name=$1 limit=$2 script=$3 mode=$4 dataset=$5 data=$6
  shift 6
  step "$name" "$limit" python3 "$here/$script" "$mode" --model "$model" --data "$data" \
    --dataset "$dataset" --max-len "$max_len" --device "$device" --amp "$amp" --seed 1234 \
    --json "$jsonl" "$@"
}

# padless_train NAME DATA MAX_LEN STEPS [CHECKPOINT]: `padless train` from the checkpoint (with
# --checkpoint CHECKPOINT, default none); its metrics and train_log.csv are kept in the logs, its
# output directory (a model, a token cache) removed.
padless_train() {
  local name=$1 data=$2 len=$3 n=$4 checkpoint=${5:-none} dir=$work/$1
  rm -rf "$dir"
  step "$name" 240 "$padless" train --data "$data" --out "$dir" --init-from "$model" \
    --batching packed_varlen --max-len "$len" --max-tokens "$budget" --max-steps "$n" \
    --amp "$amp" --clip-norm 0 --dropout 0 --attention "${ATTENTION:-flash}" \
    --checkpoint "$checkpoint" --checkpoint-every 1000000 --device "$device" --seed 1234 --quiet \
    --metrics-json "$logs/$name.json"
  local rc=$?
  cp "$dir/train_log.csv" "$logs/$name.csv" 2>/dev/null
  rm -rf "$dir"  # the model it wrote and its token cache: gigabytes, not needed
  return $rc
}

padless_rows() {  # MODE NAME DATASET [more flags]: padless's files as a row of the JSONL
  local mode=$1 name=$2 dataset=$3
  shift 3
  python3 "$here/padless_rows.py" "$mode" --metrics "$logs/$name.json" --log "$logs/$name.csv" \
    --dataset "$dataset" --budget "$budget" --device "$gpu" --amp "$amp" --json "$jsonl" "$@" \
    >>"$logs/$name.log" 2>&1 || error_row "$name" "padless_rows.py failed"
}

train_set() {  # DATASET DATA
  local ds=$1 data=$2
  [[ -f $data ]] || return
  padless_train "train_padless_$ds" "$data" "$max_len" $((warmup + steps)) &&
    padless_rows train "train_padless_$ds" "$ds" --warmup "$warmup" --max-len "$max_len"
  for script in torch_varlen hf_anchor; do
    anchor "train_${script}_$ds" 240 "$script.py" train "$ds" "$data" --budget "$budget" \
      --warmup "$warmup" --steps "$steps"
  done
}

serve_set() {  # DATASET DATA
  local ds=$1 data=$2
  # shellcheck disable=SC2086  # ENGINE_FLAGS: several flags, split on purpose
  step "serve_padless_$ds" 150 "$serve_bench" --model "$model" --data "$data" \
    --limit "$serve_limit" --device "$device" --amp "$amp" --max_len "$max_len" \
    --max_batch_tokens "$serve_budget" --loads= --label padless_engine ${ENGINE_FLAGS:-} &&
    padless_rows serve "serve_padless_$ds" "$ds" --budget "$serve_budget" --max-len "$max_len" \
      <"$logs/serve_padless_$ds.log"
  for script in torch_varlen hf_anchor; do
    anchor "serve_${script}_$ds" 150 "$script.py" serve "$ds" "$data" --budget "$serve_budget" \
      --limit "$serve_limit"
  done
}

memory_runs() {  # peak memory per real token at each length: padless, then the anchors
  local n ck name
  [[ -f $mem_data ]] || return
  for ck in ${MEM_CHECKPOINT:-none all}; do
    for n in ${mem_lens//,/ }; do
      name=mem_padless_$n
      [[ $ck == none ]] || name=mem_padless_${ck//[^a-z0-9]/_}_$n
      padless_train "$name" "$mem_data" "$n" $((mem_steps + 1)) "$ck" &&
        padless_rows memory "$name" long --seq-len "$n" --checkpoint "$ck"
    done
  done
  anchor mem_hf_anchor 240 hf_anchor.py memory long "$mem_data" --budget "$budget" \
    --lens "$mem_lens" --mem-steps "$mem_steps"
  anchor mem_torch_varlen 180 torch_varlen.py memory long "$mem_data" --budget "$budget" \
    --lens "$mem_lens" --mem-steps "$mem_steps"
}

# torch_varlen's logits against transformers' on a packed batch of long documents (windows and
# rotary positions that leak across sequences would show), before anything is timed.
wants check && anchor check_torch_varlen 120 torch_varlen.py check long "$long" --limit 3
if wants train; then
  train_set imdb "$imdb"
  train_set long "$long"
fi
if wants serve; then
  for ds in $serve_sets; do
    if [[ $ds == long ]]; then serve_set long "$long"; else serve_set imdb "$imdb"; fi
  done
fi
wants memory && memory_runs
echo "== done in ${SECONDS}s of this script" >&2
