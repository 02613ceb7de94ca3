#!/usr/bin/env bash
# Sanitizer jobs: builds padless with ASan+UBSan or TSan in its own build folder (through
# scripts/setup.sh, so it is idempotent and installs what is missing) and runs the tests under it.
#   scripts/sanitize.sh address [extra ctest args]   build-asan: the whole CPU suite, except tests
#                                                    labelled sanitizer_slow and install_consumer,
#                                                    one ctest test per test binary (all its tests
#                                                    in one process: PADLESS_CTEST_PER_BINARY,
#                                                    tests/CMakeLists.txt)
#   scripts/sanitize.sh thread  [extra ctest args]   build-tsan: the loader and every multi-threaded
#                                                    test (encode, inference, the serving engine,
#                                                    memory meter, the HTTP transport), from
#                                                    padless_tsan_tests (tests/CMakeLists.txt)
# Environment: PADLESS_JOBS (default nproc), PADLESS_SANITIZE_BUILD_DIR (default build-asan /
# build-tsan under the repository root).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-}
shift || true
jobs=${PADLESS_JOBS:-$(nproc)}
supp=$root/tests/sanitizers

case $kind in
  address)
    build=${PADLESS_SANITIZE_BUILD_DIR:-$root/build-asan}
    # Everything the suite needs (libraries, CLI, test binaries); benchmarks are off.
    targets=""
    ;;
  thread)
    build=${PADLESS_SANITIZE_BUILD_DIR:-$root/build-tsan}
    # The one binary, defined in TSan builds only, that holds the test files of the threaded tests
    # (built from the suites' own files; no CLI, no other test).
    targets="padless_tsan_tests"
    ;;
  *)
    echo "usage: scripts/sanitize.sh address|thread [extra ctest args]" >&2
    exit 2
    ;;
esac

# Debug keeps assert() live; CMakeLists.txt raises sanitizer Debug builds to -O1. No CUDA kernels:
# the sanitizers do not instrument device code, and nvcc would double the build time. A unity build
# (PADLESS_UNITY, CMakeLists.txt): the normal build already compiles every file on its own.
# CPU seconds next to wall seconds: CI's machine is shared, so wall time alone says little.
TIMEFORMAT="sanitize.sh $kind build: %0R s wall, %0U s user + %0S s sys"
time PADLESS_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Debug -DPADLESS_SANITIZE=$kind -DPADLESS_CUDA=OFF \
-DPADLESS_BUILD_BENCH=OFF -DPADLESS_UNITY=ON ${PADLESS_CMAKE_ARGS:-}" PADLESS_TARGETS="$targets" \
  "$root/scripts/setup.sh" "$build"

# Torch's CPU thread pool spins on a loaded machine; the tests are single-threaded in torch.
export OMP_NUM_THREADS=1
# The parity tests compare with their golden files instead of running transformers again (5-15 s
# a run under ASan): the sanitizers check padless's C++, and CI's first stage runs the live
# comparison already.
export PADLESS_NO_PYTHON=1
# The CLI tests' SST-2 model trains on 2k rows for one epoch instead of 20k for two (about 60 s
# under ASan), and its accuracy checks skip: the sanitizers check memory, the first stage accuracy
# (tests/train/train_cli_test.cc).
export PADLESS_TEST_QUICK_MODEL=1
# halt_on_error / -fno-sanitize-recover: any finding fails the test. protect_shadow_gap=0 lets the
# CUDA driver map its memory when the suite runs on a GPU machine.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:\
strict_init_order=1:detect_stack_use_after_return=0:protect_shadow_gap=0"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"

select=()
if [[ $kind == address ]]; then
  # install_consumer builds a separate, unsanitized CMake project against the install tree: it
  # cannot link our instrumented archives and checks packaging, not memory.
  select=(-LE '^(sanitizer_slow|install)$')
else
  # Each pattern must keep matching a test, so a rename cannot silently empty the TSan job.
  patterns=('^LoaderTest\.' '^BatchEncoderTest\.' '^InferenceTest\.PredictIsThreadSafe'
            '^InferenceEngineTest\.' '^LongTexts/ConcurrentTest\.'
            '^CpuMemoryMeterTest\.ConcurrentAllocationsBalance$' '^EventServerTest\.'
            '^EmbeddingEngineKindTest\.OnDone' '^EmbeddingRoutesTest\.' '^RerankRoutesTest\.')
  for p in "${patterns[@]}"; do
    if ! ctest --test-dir "$build" -N -R "$p" | grep -q 'Total Tests: [1-9]'; then
      echo "sanitize.sh: no test matches $p" >&2
      exit 1
    fi
  done
  select=(-R "$(IFS='|'; echo "${patterns[*]}")" -LE '^sanitizer_slow$')
fi

echo "== ctest ($kind)" >&2
rc=0
TIMEFORMAT="sanitize.sh $kind tests: %0R s wall, %0U s user + %0S s sys"
time ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs" --timeout 1500 \
  "${select[@]}" "$@" || rc=$?
exit $rc
