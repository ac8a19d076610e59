#!/usr/bin/env bash
# Runs every test: unit suites, then the long suites (label `long`: scenarios of minutes, such as
# the daemon killed 30 times on its simulated cluster; label `slurm`: a real Slurm cluster on this
# machine, which needs root). Installs what is missing and builds first, reusing the build.
#   scripts/test.sh            all tests
#   scripts/test.sh --unit     unit tests only (no long scenario, no Slurm cluster)
# Tests that read real job logs (label `real-logs`) run when MIRAGE_TRACES names their folder
# (the public logs of README.md's "Real traces", laid out as docs/traces.md says); without it they
# are left out and counted in one line. The binary tarball's test as a user at a site (label
# `package`, tests/package/) runs only when asked for: ctest --test-dir build -L package.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every package the tests need (nothing to do where they are: the quick start installs fewer).
bash scripts/install-deps.sh
build_dir="${MIRAGE_BUILD_DIR:-build}"
traces="${MIRAGE_TRACES:-}"
if [ -n "$traces" ]; then
  [ -d "$traces" ] || { echo "test.sh: MIRAGE_TRACES=$traces is not a folder" >&2; exit 2; }
  traces="$(cd "$traces" && pwd)"
fi
# The folder is fixed at configure time: configure again when it changed.
if [ -f "$build_dir/CMakeCache.txt" ] &&
  [ "$(sed -n 's/^MIRAGE_TRACES:PATH=//p' "$build_dir/CMakeCache.txt")" != "$traces" ]; then
  cmake -S . -B "$build_dir" -DMIRAGE_TRACES="$traces" >/dev/null
fi
MIRAGE_TRACES="$traces" bash scripts/build.sh
exclude=(package)
if [ -z "$traces" ]; then
  n="$(ctest --test-dir "$build_dir" -N -L real-logs | sed -n 's/^Total Tests: //p')"
  echo "test.sh: ${n:-0} tests read real job logs and are left out: set MIRAGE_TRACES=DIR, the folder of the real logs (README.md, Real traces), to run them"
  exclude+=(real-logs)
fi
if [ "${1:-}" = "--unit" ]; then
  exclude+=(slurm long)
fi
label_exclude=()
if [ ${#exclude[@]} -gt 0 ]; then
  label_exclude=(-LE "$(IFS='|'; echo "${exclude[*]}")")
fi
# One run, so one closing summary; the slurm-labelled tests are RUN_SERIAL.
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" "${label_exclude[@]+"${label_exclude[@]}"}"
