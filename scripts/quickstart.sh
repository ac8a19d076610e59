#!/usr/bin/env bash
# One command on a fresh Debian bookworm machine: install the packages, build, and run the main
# job on the embedded default: chains of two 48-hour segments replayed on the bundled sample
# trace, and what each baseline policy makes them wait (interruption) and hold twice (overlap).
# Arguments go to `mirage eval` (for example --nodes 1, or --trace FILE --from --to).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --program
# The program alone: the learned-agent plugin (LibTorch), the tests and the benchmarks are built
# by scripts/build.sh or scripts/test.sh when wanted.
bash scripts/build.sh mirage
"${MIRAGE_BUILD_DIR:-build}/cli/mirage" eval --nodes 4 --policies reactive,average,forecast \
  --successor-wait both "$@"
