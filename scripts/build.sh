#!/usr/bin/env bash
# Configures (once) and builds mirage into build/ (or $MIRAGE_BUILD_DIR); reuses what is built.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${MIRAGE_BUILD_DIR:-build}"
jobs="${MIRAGE_JOBS:-$(nproc)}"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build_dir" -j "$jobs"
