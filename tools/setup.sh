#!/usr/bin/env bash
# Installs what trainmem needs on a fresh Debian 12 machine, only what is missing:
# Debian's Emscripten, Catch2, nlohmann/json, Chromium, clang's sanitizer/fuzzer runtime,
# PyTorch and torchvision (the tracer's tests); then the npm dev dependencies. Nothing downloads
# a toolchain or a browser by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v emcc >/dev/null 2>&1 || need+=(emscripten)
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
[ -f /usr/include/catch2/catch.hpp ] || need+=(catch2)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v clang++ >/dev/null 2>&1 || need+=(clang)
ls /usr/lib/llvm-14/lib/clang/14*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libclang-rt-14-dev)
# the tracer's tests (python/tests) run on Debian's PyTorch 1.13 and torchvision 0.14
/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || need+=(python3-torch)
/usr/bin/python3 -c 'import torchvision' >/dev/null 2>&1 || need+=(python3-torchvision)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"
fi

# npm dependencies: install when missing or when the lock file changed since.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund
fi
