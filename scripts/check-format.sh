#!/usr/bin/env bash
# Every C++ source and header of the repository as clang-format (the .clang-format beside this
# folder) writes it; names the files that are not and exits 1. CI runs it first.
#   scripts/check-format.sh          check
#   scripts/check-format.sh --fix    rewrite in place the files that are not
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if ! out="$(clang-format --dry-run -Werror "${files[@]}" 2>&1)"; then
  mapfile -t unformatted < <(echo "$out" | grep -o '^[^:]*:[0-9]*:[0-9]*: error' | cut -d: -f1 | sort -u)
  if [ "${1:-}" = "--fix" ]; then
    # Only the files that differ: rewriting every file would make the next build compile them all.
    clang-format -i "${unformatted[@]}"
    echo "check-format: rewrote ${#unformatted[@]} files"
    exit 0
  fi
  printf 'check-format: not as clang-format writes it: %s\n' "${unformatted[@]}" >&2
  echo "check-format: run scripts/check-format.sh --fix" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files as clang-format writes them"
