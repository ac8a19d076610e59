#!/usr/bin/env bash
# One command on a fresh Debian bookworm machine: install the packages, build, and run the main
# job on the embedded default (replay the bundled sample trace and print the summary).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
"${MIRAGE_BUILD_DIR:-build}/cli/mirage" simulate "$@"
