#!/usr/bin/env bash
# Every C++ source and header of the repository as clang-format (the .clang-format beside this
# folder) writes it; names the files that are not and exits 1. CI runs it first.
#   scripts/check-format.sh          check
#   scripts/check-format.sh --fix    rewrite the files in place
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! out="$(clang-format --dry-run -Werror "${files[@]}" 2>&1)"; then
  echo "$out" | grep -o '^[^:]*:[0-9]*:[0-9]*: error' | cut -d: -f1 | sort -u |
    sed 's/^/check-format: not as clang-format writes it: /' >&2
  echo "check-format: run scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files as clang-format writes them"
