#!/usr/bin/env bash
# Configures (once) and builds mirage into build/ (or $MIRAGE_BUILD_DIR); reuses what is built.
#   scripts/build.sh            everything: the program, its learned-agent plugin, tests, benchmarks
#   scripts/build.sh TARGET...  only these (the quick start builds `mirage` alone)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${MIRAGE_BUILD_DIR:-build}"
jobs="${MIRAGE_JOBS:-$(nproc)}"
# ccache, where installed, lets a second checkout (a worktree, a fresh clone) reuse what one built.
launcher=()
if command -v ccache >/dev/null && [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]+"${launcher[@]}"}"
else
  # Again (a second): what was not found before (LibTorch, after the quick start's smaller
  # install) is looked for anew.
  cmake -S . -B "$build_dir" >/dev/null
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]+"${targets[@]}"}"
