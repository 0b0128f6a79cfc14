#!/usr/bin/env bash
# Bounded libFuzzer run over trainmem::call (tests/fuzz/fuzz_call.cpp), clang with
# AddressSanitizer + UndefinedBehaviorSanitizer. Usage: tests/fuzz/run.sh [SECONDS]
#   SECONDS (default 60): the whole budget of this command, build included: the fuzzer gets
#   what the (incremental) build leaves, at least TRAINMEM_FUZZ_MIN_SECONDS (default 15).
# Builds into build/fuzz; the growing corpus lives in build/fuzz/corpus (seeds are
# regenerated from tests/fixtures/golden.json each run; tests/fuzz/regressions holds every
# input that once was a finding, replayed first). Exits non-zero on any finding; the
# crashing input is written to build/fuzz/artifacts/.
# Extra libFuzzer flags may follow, e.g. `tests/fuzz/run.sh 3600 -runs=10000000`.
set -euo pipefail
cd "$(dirname "$0")/../.."
budget=${1:-60}
shift || true
start=$(date +%s)
out=build/fuzz
mkdir -p "$out/corpus" "$out/artifacts"
rm -rf "$out/seeds"
make -s -f tests/fuzz/Makefile -j"${TRAINMEM_FUZZ_JOBS:-2}" BUILD="$PWD/$out"
/usr/bin/python3 tests/fuzz/gen_corpus.py "$PWD" "$out/seeds" "$out/all.dict"
left=$((budget - ($(date +%s) - start)))
min=${TRAINMEM_FUZZ_MIN_SECONDS:-15}
[ "$left" -ge "$min" ] || left=$min
echo "fuzz: running for ${left} s"
# detect_leaks: LeakSanitizer reports any request that leaks memory as a finding.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  "$out/fuzz_call" "$out/corpus" "$out/seeds" tests/fuzz/regressions -dict="$out/all.dict" \
  -max_total_time="$left" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -malloc_limit_mb=1024 -artifact_prefix="$out/artifacts/" -print_final_stats=1 \
  -close_fd_mask=0 "$@" 2>&1 | grep --line-buffered -v '^#[0-9]*.*\(NEW\|REDUCE\)' || {
  echo "fuzz: FAILED (see $out/artifacts/)"
  exit 1
}
echo "fuzz: no findings"
