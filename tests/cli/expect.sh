#!/usr/bin/env bash
# Runs a command and checks its exit status and that its output (stdout and stderr) matches an
# extended regular expression.
#   expect.sh STATUS REGEX -- COMMAND...
set -u
want_status="$1" pattern="$2"
shift 2
[ "$1" = "--" ] && shift
output="$("$@" 2>&1)"
status=$?
if [ "$status" -ne "$want_status" ]; then
  printf 'expected exit status %s, got %s from: %s\n--- output ---\n%s\n' "$want_status" "$status" "$*" "$output"
  exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$output"; then
  printf 'output does not match /%s/ from: %s\n--- output ---\n%s\n' "$pattern" "$*" "$output"
  exit 1
fi
echo "ok: status $status, output matches /$pattern/"
