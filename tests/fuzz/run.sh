#!/usr/bin/env bash
# Bounded libFuzzer runs over trainmem::call (tests/fuzz/fuzz_call.cpp: request bytes), the
# structured generator of large placement and planner requests (tests/fuzz/fuzz_structured.cpp:
# chain length, budget and strategy as parameters), the snapshot reader
# (tests/fuzz/fuzz_snapshot.cpp) and the trace reader (tests/fuzz/fuzz_trace.cpp), clang with
# AddressSanitizer + UndefinedBehaviorSanitizer.
# Usage: tests/fuzz/run.sh [SECONDS]
#   SECONDS (default 60): the whole budget of this command, build included: the fuzzers share
#   what the (incremental) build leaves, at least TRAINMEM_FUZZ_MIN_SECONDS (default 15) — 30 %
#   to fuzz_call, 30 % to fuzz_structured, 20 % to fuzz_snapshot, the rest to fuzz_trace.
#   TRAINMEM_FUZZ_TARGET=call|structured|snapshot|trace gives the whole time to one of them.
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
mkdir -p "$out/corpus" "$out/corpus_structured" "$out/corpus_snapshot" "$out/corpus_trace" \
  "$out/artifacts" tests/fuzz/regressions_snapshot tests/fuzz/regressions_structured \
  tests/fuzz/regressions_trace
rm -rf "$out/seeds" "$out/seeds_snapshot" "$out/seeds_trace"
make -s -f tests/fuzz/Makefile -j"${TRAINMEM_FUZZ_JOBS:-2}" BUILD="$PWD/$out"
/usr/bin/python3 tests/fuzz/gen_corpus.py "$PWD" "$out/seeds" "$out/all.dict"
/usr/bin/python3 tests/fuzz/gen_snapshot_seeds.py "$PWD" "$out/seeds_snapshot"
/usr/bin/python3 tests/fuzz/gen_trace_seeds.py "$PWD" "$out/seeds_trace"
left=$((budget - ($(date +%s) - start)))
min=${TRAINMEM_FUZZ_MIN_SECONDS:-15}
[ "$left" -ge "$min" ] || left=$min
target=${TRAINMEM_FUZZ_TARGET:-both}
case "$target" in
  call) t_call=$left t_struct=0 t_snap=0 t_trace=0 ;;
  structured) t_call=0 t_struct=$left t_snap=0 t_trace=0 ;;
  snapshot) t_call=0 t_struct=0 t_snap=$left t_trace=0 ;;
  trace) t_call=0 t_struct=0 t_snap=0 t_trace=$left ;;
  *) t_call=$((left * 3 / 10)) t_struct=$((left * 3 / 10)) t_snap=$((left * 2 / 10))
     t_trace=$((left - left * 8 / 10)) ;;
esac
# detect_leaks: LeakSanitizer reports any request that leaks memory as a finding.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fuzz() { # name seconds max_len corpus... -- flags
  local name=$1 seconds=$2 max_len=$3
  shift 3
  echo "fuzz: $name for ${seconds} s"
  "$out/$name" "$@" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -artifact_prefix="$out/artifacts/" \
    -print_final_stats=1 -close_fd_mask=0 2>&1 | grep --line-buffered -v '^#[0-9]*.*\(NEW\|REDUCE\)' || {
    echo "fuzz: $name FAILED (see $out/artifacts/)"
    exit 1
  }
}
if [ "$t_call" -gt 0 ]; then
  fuzz fuzz_call "$t_call" 16384 "$out/corpus" "$out/seeds" tests/fuzz/regressions \
    -dict="$out/all.dict" "$@"
fi
if [ "$t_struct" -gt 0 ]; then
  # 64 bytes of parameters describe up to 100,000 layers (several MB of request text)
  fuzz fuzz_structured "$t_struct" 64 "$out/corpus_structured" tests/fuzz/regressions_structured "$@"
fi
if [ "$t_snap" -gt 0 ]; then
  fuzz fuzz_snapshot "$t_snap" 8192 "$out/corpus_snapshot" "$out/seeds_snapshot" \
    tests/fuzz/regressions_snapshot -dict=tests/fuzz/snapshot.dict "$@"
fi
if [ "$t_trace" -gt 0 ]; then
  fuzz fuzz_trace "$t_trace" 24576 "$out/corpus_trace" "$out/seeds_trace" \
    tests/fuzz/regressions_trace -dict=tests/fuzz/trace.dict "$@"
fi
echo "fuzz: no findings"
