#!/usr/bin/env bash
# The test command: sets everything up (scripts/setup.sh), then runs the whole CPU test suite with
# ctest. GPU tests skip themselves on machines without a GPU.
#   scripts/test.sh [extra ctest args]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PADLESS_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh" "$build"
jobs=${PADLESS_JOBS:-$(nproc)}
echo "== ctest" >&2
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 1500 "$@"
