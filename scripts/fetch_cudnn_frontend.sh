#!/usr/bin/env bash
# Unpacks the header-only cuDNN frontend (NVIDIA/cudnn-frontend, MIT) from the PyPI package
# nvidia-cudnn-frontend into DIR and prints DIR/include, the folder that holds cudnn_frontend.h:
# pass it to CMake as -DPADLESS_CUDNN_FRONTEND_DIR=<it> to build the cuDNN attention backend
# (models' kVarlenCudnn; cmake/PadlessCudnnAttention.cmake). Only the headers and the licences are
# kept (the wheel's Python modules are ~90 MB). Idempotent: a second run prints the folder.
#   scripts/fetch_cudnn_frontend.sh [DIR]
# (default ${XDG_CACHE_HOME:-~/.cache}/padless/cudnn-frontend-<version>). The cuDNN library itself
# comes with the torch wheel (nvidia-cudnn-cu*); the frontend checks its version at run time.
set -euo pipefail
version=1.32.0
dir=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/padless/cudnn-frontend-$version}
if [[ -f $dir/include/cudnn_frontend.h ]]; then echo "$dir/include"; exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip_args=(--quiet --disable-pip-version-check --no-cache-dir --no-deps --target "$tmp/pkg"
          "nvidia-cudnn-frontend==$version")
python3 -m pip install "${pip_args[@]}" >&2 \
  || python3 -m pip install --break-system-packages "${pip_args[@]}" >&2
[[ -f $tmp/pkg/include/cudnn_frontend.h ]] || { echo "no include/cudnn_frontend.h in the wheel" >&2; exit 1; }
mkdir -p "$tmp/out"
mv "$tmp/pkg/include" "$tmp/out/include"
cp -r "$tmp"/pkg/nvidia_cudnn_frontend-*.dist-info/licenses "$tmp/out/licenses" 2>/dev/null || true
mkdir -p "$(dirname "$dir")"
rm -rf "$dir"
mv "$tmp/out" "$dir"
echo "$dir/include"
