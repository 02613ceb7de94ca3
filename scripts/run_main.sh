#!/usr/bin/env bash
# The main job: sets everything up (scripts/setup.sh), then trains the `tiny` classifier on the
# bundled SST-2 slice with packed batches and reports dev accuracy, padding efficiency and peak
# memory. Outputs go to out/sst2/ (model directory, metrics.json, per-step log).
#   scripts/run_main.sh [extra `padless train` flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PADLESS_BUILD_DIR:-$root/build}
# The main job needs the CLI alone; the tests and benchmarks are built by scripts/test.sh.
PADLESS_TARGETS=${PADLESS_TARGETS:-padless_cli} "$root/scripts/setup.sh" "$build"
out=$root/out/sst2
mkdir -p "$out"
"$build/cli/padless" train \
  --data "$root/data/sst2_train_20k.tsv" --dev "$root/data/sst2_dev.tsv" --out "$out" \
  --preset tiny --batching packed --max-len 64 --max-tokens 4096 --lr 1e-3 --epochs 2 \
  --vocab-size 8000 --eval-every 20 --metrics-json "$out/metrics.json" "$@"
echo "== metrics ($out/metrics.json)"
cat "$out/metrics.json"
