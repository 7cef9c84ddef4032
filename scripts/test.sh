#!/usr/bin/env bash
# Builds and runs the whole test suite twice: optimised (build/), then under AddressSanitizer and
# UndefinedBehaviorSanitizer (build-asan/). Warnings are errors in both. Benchmarks are built
# (not run) in the optimised tree, so they cannot rot.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

echo "== optimised build and tests"
./scripts/build.sh all
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSYNTORCH_SANITIZE=ON -DSYNTORCH_WERROR=ON \
  -DSYNTORCH_BUILD_BENCH=OFF -DSYNTORCH_BUILD_PYTHON=OFF >/dev/null
cmake --build build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
