#!/usr/bin/env bash
# The test command: sets everything up (scripts/setup.sh), then runs the whole CPU test suite with
# ctest. GPU tests skip themselves on machines without a GPU. The soak test (label `soak`, a few
# minutes of training that checks memory stays flat) is left out unless PADLESS_SOAK=1; CI runs it
# separately (.ci/run).
#   scripts/test.sh [extra ctest args]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PADLESS_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" "$build"
jobs=${PADLESS_JOBS:-$(nproc)}
# One OpenMP thread per test process: ctest runs $jobs test binaries at once, and LibTorch's
# intra-op pool, sized to every core in each of them, oversubscribes the cores with threads that
# spin in each other's way (clean clone of e967632: stage-1 ctest 341 s, 171 s with one thread).
# scripts/sanitize.sh runs so too.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
echo "== ctest" >&2
exclude=(-LE soak)
[[ ${PADLESS_SOAK:-0} == 1 ]] && exclude=()
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 1500 "${exclude[@]}" "$@"
