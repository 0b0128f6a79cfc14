#!/usr/bin/env bash
# The README's page command (`npm start`): installs what is missing, builds the WASM core
# and the page, then serves it on http://127.0.0.1:${PORT:-8080}/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh wasm
if [ -f tools/build-page.sh ]; then bash tools/build-page.sh; fi
exec node tools/serve.js
