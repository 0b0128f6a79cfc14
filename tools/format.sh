#!/usr/bin/env bash
# clang-format for C++ and prettier for JS/CSS/HTML/JSON/Markdown. `--check` fails on any
# difference (used by the test command); without it, files are rewritten.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t cpp < <(git ls-files --cached --others --exclude-standard -- 'cpp/*.cpp' 'cpp/*.hpp' 'tests/*.cpp' 'tests/*.hpp' 'bench/*.cpp')
if [ "${1:-}" = --check ]; then
  clang-format --dry-run -Werror "${cpp[@]}"
  npx prettier --check --log-level warn .
  echo "format: clean"
else
  clang-format -i "${cpp[@]}"
  npx prettier --write --log-level warn .
fi
