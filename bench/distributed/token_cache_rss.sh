#!/usr/bin/env bash
# Start-up time and peak resident memory per rank of `padless train` against corpus size, with the
# memory-mapped token cache (issue 28.3): IMDB repeated 1x, 3x and 10x, trained for one step by 2
# ranks on Gloo, against "one shard alone" (1 rank on 5x IMDB: the tokens one rank of the 10x job
# owns). Each rank runs under /usr/bin/time (its own peak RSS, %M, and wall seconds), joined through
# the torchrun variables rather than the launcher, so that each rank is measured by itself.
# Every corpus is run twice: "built" (rank 0 tokenizes into the cache, the other ranks wait at the
# start barrier and map it) and "hit" (the cache is reused: the start-up a later job pays).
#
#   bash bench/distributed/token_cache_rss.sh                # prints a Markdown table
#   SIZES="1 10" WORK=/tmp/tc bash bench/distributed/token_cache_rss.sh
#
# Environment: PADLESS (the CLI, default build/cli/padless), IMDB (default
# ../shared/data/imdb_train.tsv), WORK (scratch, default /tmp/padless_token_cache_bench), SIZES.
set -euo pipefail
cd "$(dirname "$0")/../.."
PADLESS=${PADLESS:-build/cli/padless}
IMDB=${IMDB:-../shared/data/imdb_train.tsv}
WORK=${WORK:-/tmp/padless_token_cache_bench}
SIZES=${SIZES:-"1 3 10"}
mkdir -p "$WORK"
export OMP_NUM_THREADS=1

# IMDB repeated k times (one header).
corpus() {
  local k=$1 path="$WORK/imdb_${1}x.tsv"
  if [[ ! -s $path ]]; then
    { head -n 1 "$IMDB"; for _ in $(seq "$k"); do tail -n +2 "$IMDB"; done; } >"$path"
  fi
  echo "$path"
}

# A tiny model to start from: its tokenizer keeps tokenizer training out of every timing.
BASE="$WORK/base"
if [[ ! -s $BASE/config.json ]]; then
  "$PADLESS" train --data "$IMDB" --out "$BASE" --preset tiny --epochs 1 --max-steps 1 \
    --max-len 512 --device cpu --threads 2 >/dev/null 2>"$WORK/base.err"
fi

# Prefixes each line with the seconds since the job started (bash 5's EPOCHREALTIME).
stamp() { while IFS= read -r l; do echo "$(echo "$EPOCHREALTIME - $T0" | bc) $l"; done; }

# One job of `world` ranks on `data` with the cache `cache`; prints one table row per rank.
job() {
  local label=$1 world=$2 data=$3 cache=$4 phase=$5
  local out="$WORK/out_${label}_${phase}" port=$((29600 + RANDOM % 2000))
  rm -rf "$out"
  local pids=()
  T0=$EPOCHREALTIME
  for ((r = 0; r < world; ++r)); do
    env WORLD_SIZE="$world" RANK="$r" LOCAL_RANK="$r" LOCAL_WORLD_SIZE="$world" \
      MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" \
      /usr/bin/time -f "%e %M" -o "$WORK/time.$r" \
      "$PADLESS" train --data "$data" --out "$out" --init-from "$BASE" --token-cache "$cache" \
      --epochs 1 --max-steps 1 --max-len 512 --device cpu --threads 1 \
      >"$WORK/out.$r" 2> >(stamp >"$WORK/err.$r") &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$WORK"/err.*; exit 1; }; done
  sleep 0.2  # the stamping readers finish their files
  local mib=$(($(stat -c %s "$cache") / 1048576))
  for ((r = 0; r < world; ++r)); do
    read -r wall rss_kb <"$WORK/time.$r"
    local line
    line=$(grep -o "token cache: [a-z]*.*" "$WORK/err.$r" | tail -n 1 || true)
    local how=${line#token cache: }
    how=${how%% *}
    local secs=${line##*, }
    # Start-up: launch to the rank's first step (rank 0's start line; the others have none, so
    # their cache line, after which they only build the model and join the first collective).
    local up
    up=$(grep -m1 -E "training .* on cpu|token cache: mapped" "$WORK/err.$r" | cut -d' ' -f1)
    printf "| %s | %d | %d MiB | %s | %d | %s | %s | %.2f s | %.2f s | %d MiB |\n" "$label" \
      "$world" "$mib" "$phase" "$r" "${how:-"(quiet)"}" "${secs:-}" "$up" "$wall" \
      $((rss_kb / 1024))
  done
  rm -rf "$out"
}

echo "| corpus | ranks | cache file | phase | rank | token cache | cache open/build | start-up | wall (one step) | peak RSS |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for k in $SIZES; do
  data=$(corpus "$k")
  cache="$WORK/cache_${k}x.tokens"
  rm -f "$cache"
  job "${k}x IMDB" 2 "$data" "$cache" built
  job "${k}x IMDB" 2 "$data" "$cache" hit
done
# One shard alone: the 10x job's rank owns half of it.
data=$(corpus 5)
cache="$WORK/cache_5x.tokens"
rm -f "$cache"
job "5x IMDB (one shard of 10x)" 1 "$data" "$cache" built
job "5x IMDB (one shard of 10x)" 1 "$data" "$cache" hit
# The whole 10x corpus on one rank, from the cache the loop above left: the per-rank cost against
# corpus size without the process group's start.
if [[ -s $WORK/cache_10x.tokens ]]; then
  job "10x IMDB" 1 "$(corpus 10)" "$WORK/cache_10x.tokens" hit
fi
