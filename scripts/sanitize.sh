#!/usr/bin/env bash
# The unit suites once under AddressSanitizer and UndefinedBehaviorSanitizer (leaks included), in
# a build of their own (build-sanitize/, or $MIRAGE_BUILD_DIR-sanitize). The learned agents'
# suites are left out: Debian's LibTorch is not built with the sanitizers. Exits 1 on any report.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${MIRAGE_BUILD_DIR:-build}-sanitize"
jobs="${MIRAGE_JOBS:-$(nproc)}"
# -O1 and line tables only: the build is most of this script's time, and reports still name the
# file and line.
flags="-O1 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Sanitize -DMIRAGE_BUILD_BENCH=OFF \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
fi
suites=(core_tests trace_tests simulator_tests episode_tests daemon_tests)
cmake --build "$dir" -j "$jobs" --target "${suites[@]}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Each suite runs as one gtest shard per processor (the suites' tests already run side by side
# under ctest -j), so the slowest suite no longer runs alone on one core.
failed=0
for s in "${suites[@]}"; do
  bin="$(find "$dir/tests" -type f -name "$s" -perm -u+x | head -n 1)"
  pids=()
  for ((i = 0; i < jobs; i++)); do
    GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=$i "$bin" --gtest_brief=1 >"$dir/$s.$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < jobs; i++)); do
    log="$dir/$s.$i.log"
    if wait "${pids[$i]}" && ! grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$log"; then
      echo "sanitize: $s (shard $((i + 1)) of $jobs): $(tail -n 1 "$log")"
    else
      echo "sanitize: $s (shard $((i + 1)) of $jobs) FAILED under the sanitizers (log: $log)" >&2
      grep -E -A20 "ERROR: (Address|Leak)Sanitizer|runtime error:|\[  FAILED  \]" "$log" | head -n 60 >&2
      failed=1
    fi
  done
done
exit $failed
