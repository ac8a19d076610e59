#!/usr/bin/env bash
# Runs every test: unit suites, then the long suite (label `slurm`: a real Slurm cluster on this
# machine, which needs root and scripts/install-deps.sh). Builds first, reusing the build.
#   scripts/test.sh            all tests
#   scripts/test.sh --unit     unit tests only (no Slurm cluster)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build_dir="${MIRAGE_BUILD_DIR:-build}"
if [ "${1:-}" = "--unit" ]; then
  ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -LE slurm
else
  # One run, so one closing summary; the slurm-labelled tests are RUN_SERIAL.
  ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
fi
