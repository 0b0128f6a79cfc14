#!/usr/bin/env bash
# Builds the core: `native` (g++, Catch2 tests), `wasm` (Emscripten ES module into
# web/lib/wasm/), or both (default); `wasm-tests` builds the Catch2 suite for WebAssembly
# (build/wasm/trainmem_tests_wasm.cjs, run with node). Incremental: reruns cost little.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
jobs=$(nproc 2>/dev/null || echo 2)

if [ "$what" = all ] || [ "$what" = native ]; then
  cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/native -j"$jobs"
fi
if [ "$what" = all ] || [ "$what" = wasm ]; then
  # Debian's emcc runs acorn with the machine's node: it needs NODE_PATH to find it.
  export NODE_PATH=/usr/share/nodejs
  emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/wasm -j"$jobs"
fi
if [ "$what" = wasm-tests ]; then
  export NODE_PATH=/usr/share/nodejs
  emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/wasm --target trainmem_tests_wasm -j"$jobs"
fi
