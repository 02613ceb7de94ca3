#!/usr/bin/env bash
# Builds padless's libFuzzer targets (tests/fuzz) with clang, ASan and UBSan in build-fuzz, then
# runs each for a bounded time on a temporary copy of its seed corpus (the repository is never
# written). Prints target | execs | execs/s | corpus size | crashes, and exits non-zero on any
# crash, printing the reproducer. Idempotent: installs clang / libFuzzer and torch only if missing.
#   scripts/fuzz.sh [seconds-per-target]        (default 60)
# Environment: PADLESS_FUZZ_SEED (default 20261130; 0: random), PADLESS_FUZZ_TARGETS (space-separated subset), PADLESS_FUZZ_BUILD (build dir),
#   PADLESS_JOBS (build jobs, default nproc).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
# A fixed seed makes a run reproducible: a time-bounded run explores a prefix of the same sequence
# of inputs, so a CI run explores what a longer run with the same seed already did on this commit.
# PADLESS_FUZZ_SEED=0 lets libFuzzer pick a seed (new inputs every run).
seed=${PADLESS_FUZZ_SEED:-20261130}
build=${PADLESS_FUZZ_BUILD:-$root/build-fuzz}
jobs=${PADLESS_JOBS:-$(nproc)}
all_targets=(corpus_reader_fuzzer tokenizer_fuzzer tokenizer_json_fuzzer corpus_cache_fuzzer model_dir_fuzzer
             planner_fuzzer safetensors_fuzzer predict_request_fuzzer)
read -r -a targets <<< "${PADLESS_FUZZ_TARGETS:-${all_targets[*]}}"
step() { printf '== %s\n' "$*" >&2; }
start=$(date +%s)

# 1. clang and the libFuzzer runtime (Debian 12: clang-14; libclang_rt.fuzzer is in
#    libclang-rt-14-dev), the libraries padless builds against, and torch (scripts/setup.sh's steps).
packages=(clang-14 libclang-rt-14-dev cmake ninja-build python3 python3-pip
          libsentencepiece-dev libabsl-dev nlohmann-json3-dev libutf8proc-dev libcpp-httplib-dev
          libboost-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing ${missing[*]}"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.__version__.split("+")[0] == "2.11.0" else 1)' \
    2>/dev/null; then
  step "installing torch==2.11.0 (pip)"
  python3 -m pip install --quiet --disable-pip-version-check torch==2.11.0 \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages torch==2.11.0
fi
cc=$(command -v clang-14 || command -v clang)
cxx=$(command -v clang++-14 || command -v clang++)

# 2. Configure once (clang, PADLESS_FUZZ, no CUDA kernels, no tests or benchmarks, a unity build:
#    PADLESS_UNITY, CMakeLists.txt), then build only the fuzz targets.
if [[ ! -f $build/build.ninja ]]; then
  step "configuring $build"
  # -O1 rather than Release's -O3: the build is most of this stage's time (clang with ASan, UBSan
  # and coverage instrumentation), and libFuzzer's own advice for sanitized targets is -O1 or -O2.
  CC=$cc CXX=$cxx cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DPADLESS_FUZZ=ON -DPADLESS_BUILD_TESTS=OFF -DPADLESS_BUILD_BENCH=OFF -DPADLESS_CUDA=OFF \
    -DPADLESS_UNITY=ON >/dev/null
fi
# A ccache launcher (the CMAKE_CXX_COMPILER_LAUNCHER environment variable) caches the files that
# use the precompiled LibTorch header only with this sloppiness (as in scripts/setup.sh).
if grep -qs '^CMAKE_CXX_COMPILER_LAUNCHER:.*ccache' "$build/CMakeCache.txt"; then
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}pch_defines,time_macros
fi
step "building ${targets[*]} ($jobs jobs)"
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
build_s=$(( $(date +%s) - start ))

# 3. Run each target on a copy of its seeds in a temporary directory. Scratch files of the
#    file-based loaders go to /dev/shm when there is one (several times faster than a disk).
work=$(mktemp -d "${TMPDIR:-/tmp}/padless_fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
scratch=$work
[[ -d /dev/shm && -w /dev/shm ]] && scratch=$(mktemp -d /dev/shm/padless_fuzz.XXXXXX) && \
  trap 'rm -rf "$work" "$scratch"' EXIT
export OMP_NUM_THREADS=1
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0"
rows=()
failed=0
for t in "${targets[@]}"; do
  corpus=$work/$t/corpus
  mkdir -p "$corpus" "$work/$t/artifacts"
  cp "$root/tests/fuzz/corpus/$t"/* "$corpus"/
  step "fuzzing $t for ${seconds}s"
  dict=()
  [[ -f $root/tests/fuzz/$t.dict ]] && dict=(-dict="$root/tests/fuzz/$t.dict")
  set +e
  (cd "$work/$t" && TMPDIR=$scratch "$build/tests/fuzz/$t" "${dict[@]}" -max_total_time="$seconds" \
     -seed="$seed" -reload=0 -print_final_stats=1 -timeout=25 -rss_limit_mb=4096 -max_len=8192 \
     -artifact_prefix="$work/$t/artifacts/" "$corpus" >"$work/$t/log" 2>&1)
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t/log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t/log")
  size=$(find "$corpus" -type f | wc -l)
  crashes=$(find "$work/$t/artifacts" -type f | wc -l)
  if ((rc != 0 || crashes > 0)); then
    failed=1
    ((crashes == 0)) && crashes="rc=$rc"
    echo "---- $t failed (exit $rc); log tail:" >&2
    grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse)' "$work/$t/log" | tail -40 >&2
    for a in "$work/$t/artifacts"/*; do
      [[ -f $a ]] || continue
      echo "---- reproducer $(basename "$a") (base64; replay: $build/tests/fuzz/$t FILE):" >&2
      base64 "$a" >&2
      mkdir -p "$build/crashes" && cp "$a" "$build/crashes/$t-$(basename "$a")"
      echo "     kept as $build/crashes/$t-$(basename "$a")" >&2
    done
  fi
  rows+=("$(printf '%-22s | %10s | %8s | %11s | %s' "$t" "${execs:-?}" "${rate:-?}" "$size" "$crashes")")
done

printf '%-22s | %10s | %8s | %11s | %s\n' target execs execs/s "corpus size" crashes
printf '%s\n' "${rows[@]}"
echo "fuzz.sh: build ${build_s} s, total $(( $(date +%s) - start )) s, ${seconds} s per target"
exit $failed
