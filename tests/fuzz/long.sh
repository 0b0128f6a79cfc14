#!/usr/bin/env bash
# The long fuzz run (not part of npm test): one libFuzzer target in chunks of CHUNK seconds
# until build/fuzz-long/stop exists, on a copy of the harness built by run.sh (so that a rebuild
# while it runs changes nothing), at the lowest priority. Each chunk's final stats go to
# build/fuzz-long/<target>-<k>.log; the executions are summed by
#   grep -h number_of_executed_units build/fuzz-long/*.log | awk '{s += $2} END {print s}'
# A unit over TRAINMEM_FUZZ_TIMEOUT (default 60 s: the shared machine at nice 19 runs the ASan
# build 5-10x slower than run.sh's 10 s assumes) is a finding.
# Usage: tests/fuzz/long.sh call|structured [CHUNK=600]   (run tests/fuzz/run.sh once before)
set -euo pipefail
cd "$(dirname "$0")/../.."
target=$1
chunk=${2:-600}
out=build/fuzz-long
mkdir -p "$out/bin" "$out/corpus_$target" "$out/artifacts_$target"
cp -f "build/fuzz/fuzz_$target" "$out/bin/"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
case "$target" in
  call) args=(build/fuzz/seeds tests/fuzz/regressions -dict=build/fuzz/all.dict -max_len=16384) ;;
  structured) args=(tests/fuzz/regressions_structured -max_len=64) ;;
esac
k=0
while [ ! -e "$out/stop" ]; do
  k=$((k + 1))
  nice -n 19 "$out/bin/fuzz_$target" "$out/corpus_$target" "${args[@]}" \
    -max_total_time="$chunk" -timeout="${TRAINMEM_FUZZ_TIMEOUT:-60}" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -artifact_prefix="$out/artifacts_$target/" -print_final_stats=1 -close_fd_mask=0 \
    >"$out/$target-$k.log" 2>&1 || { echo "finding in chunk $k" >>"$out/$target-$k.log"; break; }
done
