#!/usr/bin/env bash
# Configures and builds the optimised tree in build/ (the syntorch binary is build/syntorch).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYNTORCH_WERROR=ON >/dev/null
cmake --build build
