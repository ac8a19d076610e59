#!/usr/bin/env bash
# Runs every test: unit suites, then the long suites (label `long`: scenarios of minutes, such as
# the daemon killed 30 times on its simulated cluster; label `slurm`: a real Slurm cluster on this
# machine, which needs root and scripts/install-deps.sh). Builds first, reusing the build.
#   scripts/test.sh            all tests
#   scripts/test.sh --unit     unit tests only (no long scenario, no Slurm cluster)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build_dir="${MIRAGE_BUILD_DIR:-build}"
if [ "${1:-}" = "--unit" ]; then
  ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -LE "slurm|long"
else
  # One run, so one closing summary; the slurm-labelled tests are RUN_SERIAL.
  ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
fi
