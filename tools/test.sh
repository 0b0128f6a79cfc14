#!/usr/bin/env bash
# The README's test command (`npm test`): sets up what is missing, builds, and runs every
# suite. Stops at the first failing step and says which.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step prints the seconds spent so far, so a slow suite shows where the time goes.
step() { printf '\n==== [%ds] %s\n' "$SECONDS" "$*"; }
trap 'printf "\n==== [%ds] done\n" "$SECONDS"' EXIT

step "setup (Debian packages and npm dependencies, only when missing)"
bash tools/setup.sh

step "format: clang-format and prettier"
bash tools/format.sh --check

step "native build + Catch2 (ctest)"
bash tools/build.sh native
(cd build/native && ctest --output-on-failure -j2)

step "WebAssembly build"
bash tools/build.sh wasm

step "Catch2 compiled to WebAssembly (32-bit size_t), run under Node"
bash tools/build.sh wasm-tests
node build/wasm/trainmem_tests_wasm.cjs

if [ -x tests/fuzz/run.sh ]; then
  step "bounded fuzzing (libFuzzer + ASan/UBSan)"
  tests/fuzz/run.sh "${TRAINMEM_FUZZ_SECONDS:-60}"
fi

if /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  step "the tracer's Python tests (python/tests, Debian's torch)"
  PYTHONPATH=python /usr/bin/python3 -m unittest discover -s python/tests
else
  step "the tracer's Python tests: skipped (no python3-torch)"
fi

step "Node tests (WASM core, npm package, CLI)"
# Two files at a time: most are one Node process on one core, and CI has two.
node --test --test-concurrency=2 tests/js/

step "browser tests (Debian Chromium + playwright-core)"
# The page bundle is built once here, so that the suites running side by side never build it.
bash tools/build-page.sh
node --test --test-concurrency=2 tests/e2e/
