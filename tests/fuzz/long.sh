#!/usr/bin/env bash
# The long fuzz run (not part of npm test): one libFuzzer target in chunks of CHUNK seconds
# until build/fuzz-long/stop exists, on a copy of the harness built by run.sh (so that a rebuild
# while it runs changes nothing), at the lowest priority. Each chunk's final stats go to
# build/fuzz-long/<target>-<k>.log; the executions are summed by
#   grep -h number_of_executed_units build/fuzz-long/*.log | awk '{s += $2} END {print s}'
# A unit over TRAINMEM_FUZZ_TIMEOUT (default 60 s: the shared machine at nice 19 runs the ASan
# build 5-10x slower than run.sh's 10 s assumes) is a finding.
# TRAINMEM_FUZZ_FAST=1 builds and runs UBSan alone at -O2 (build/fuzz-fast), about 2.1x more
# inputs per second than the CI's ASan + UBSan build; replay its corpus under ASan afterwards:
#   build/fuzz/fuzz_call -runs=0 build/fuzz-long/corpus_call
# TRAINMEM_FUZZ_MAX_LEN overrides the largest input (call: 16384 as in the CI).
# Usage: tests/fuzz/long.sh call|structured [CHUNK=600]   (run tests/fuzz/run.sh once before)
set -euo pipefail
cd "$(dirname "$0")/../.."
target=$1
chunk=${2:-600}
out=build/fuzz-long
mkdir -p "$out/bin" "$out/corpus_$target" "$out/artifacts_$target"
bin=build/fuzz
if [ "${TRAINMEM_FUZZ_FAST:-0}" = 1 ]; then
  bin=build/fuzz-fast
  make -s -f tests/fuzz/Makefile -j"${TRAINMEM_FUZZ_JOBS:-2}" BUILD="$PWD/$bin" OPT=-O2 \
    SAN="-fsanitize=fuzzer,undefined -fno-sanitize-recover=all" "$PWD/$bin/fuzz_$target"
fi
cp -f "$bin/fuzz_$target" "$out/bin/"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
case "$target" in
  call) args=(build/fuzz/seeds tests/fuzz/regressions -dict=build/fuzz/all.dict
    -max_len="${TRAINMEM_FUZZ_MAX_LEN:-16384}") ;;
  structured) args=(tests/fuzz/regressions_structured -max_len="${TRAINMEM_FUZZ_MAX_LEN:-64}") ;;
esac
k=0
while [ ! -e "$out/stop" ]; do
  k=$((k + 1))
  nice -n 19 "$out/bin/fuzz_$target" "$out/corpus_$target" "${args[@]}" \
    -max_total_time="$chunk" -timeout="${TRAINMEM_FUZZ_TIMEOUT:-60}" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -artifact_prefix="$out/artifacts_$target/" -print_final_stats=1 -close_fd_mask=0 \
    >"$out/$target-$k.log" 2>&1 || { echo "finding in chunk $k" >>"$out/$target-$k.log"; break; }
done
