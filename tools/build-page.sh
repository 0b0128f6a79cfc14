#!/usr/bin/env bash
# Page build step (run by tools/start.sh and by the browser tests when needed): copies the
# charting library (uPlot, MIT) out of node_modules into web/app/dist/, minified as an ES
# module, so the page serves it from its own origin (no CDN).
set -euo pipefail
cd "$(dirname "$0")/.."
out=web/app/dist
mkdir -p "$out"
src=node_modules/uplot/dist
if [ ! -f "$src/uPlot.esm.js" ]; then
  echo "build-page: npm package uplot missing (npm install)" >&2
  exit 1
fi
node_modules/.bin/esbuild "$src/uPlot.esm.js" --minify --format=esm --log-level=warning \
  --legal-comments=inline --outfile="$out/uplot.js"
cp "$src/uPlot.min.css" "$out/uplot.css"
cp node_modules/uplot/LICENSE "$out/uplot.LICENSE.txt"
echo "build-page: $out/uplot.js $(wc -c <"$out/uplot.js") bytes"
