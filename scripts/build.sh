#!/usr/bin/env bash
# Configures the optimised tree in build/ and builds the given targets: by default the syntorch
# command line (build/syntorch) and what it links, nothing else, so the README's main job runs
# soon after a fresh clone. `./scripts/build.sh all` builds every target (tests, benchmarks,
# examples, the Python extension), as scripts/test.sh does; `./scripts/build.sh _syntorch` builds
# the Python extension (setup.py calls this).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYNTORCH_WERROR=ON >/dev/null
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(syntorch)
cmake --build build --target "${targets[@]}"
