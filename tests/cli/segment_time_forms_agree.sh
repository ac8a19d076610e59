#!/usr/bin/env bash
# `--time` reads sbatch's forms and mirage's alike: 2d, 2-00:00:00, 48:00:00 and 2880 (minutes)
# give the same evaluation, and so does the old `--limit 2880`.
#   segment_time_forms_agree.sh MIRAGE SAMPLE_TRACE
set -euo pipefail
mirage="$1" trace="$2"
run() {
  "$mirage" eval --trace "$trace" --nodes 4 --from 2024-03-06 --to 2024-03-08 --every 12h \
    --calibration none --policies reactive,average --json "$@" 2>/dev/null | grep -v '"wall_seconds"'
}
want="$(run --time 2d)"
for form in "--time 2-00:00:00" "--time 48:00:00" "--time 2880" "--limit 2880"; do
  # shellcheck disable=SC2086 # the flag and its value, two words
  got="$(run $form)"
  if [ "$got" != "$want" ]; then
    printf '%s differs from --time 2d:\n%s\n' "$form" "$(diff <(echo "$want") <(echo "$got"))"
    exit 1
  fi
done
echo "ok: 2d, 2-00:00:00, 48:00:00, 2880 and --limit 2880 agree"
