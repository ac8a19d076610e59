#!/usr/bin/env bash
# Configures (once) and builds mirage into build/ (or $MIRAGE_BUILD_DIR); reuses what is built.
#   scripts/build.sh            everything: the program, its learned-agent plugin, tests, benchmarks
#   scripts/build.sh TARGET...  only these (the quick start builds `mirage` alone)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${MIRAGE_BUILD_DIR:-build}"
jobs="${MIRAGE_JOBS:-$(nproc)}"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]+"${targets[@]}"}"
