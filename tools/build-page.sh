#!/usr/bin/env bash
# Page build step (run by tools/start.sh, and by the browser tests when web/app/dist is missing
# or older than its sources): bundles and minifies the page into web/app/dist/ with esbuild
# (no CDN).
set -euo pipefail
cd "$(dirname "$0")/.."
for pkg in esbuild; do
  if [ ! -d "node_modules/$pkg" ]; then
    echo "build-page: npm package $pkg missing (run npm install)" >&2
    exit 1
  fi
done
node tools/build-page.mjs
echo "build-page: web/app/dist/ built ($(du -sk web/app/dist | cut -f1) KiB)"
