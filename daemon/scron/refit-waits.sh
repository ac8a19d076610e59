#!/usr/bin/env bash
# The weekly refit of the daemon's wait model on the site's own accounting (docs/daemon.md, from
# scrontab): the jobs the daemon has seen (`mirage trace export`), a wait model fitted on the
# weeks before the latest (`mirage train --agent wait-model`), judged against the model in use on
# the latest week's real waits (`mirage trace refit-waits`), which swaps it in only if its pinball
# loss is lower and says which in one line. The daemon reads the file when it starts.
#   mirage-refit-waits CONFIG MODEL [FIT_WEEKS]   (FIT_WEEKS: 8)
# MIRAGE_ACCOUNTING=FILE reads a log the site already has (sacct or SWF) instead of the export;
# MIRAGE_TODAY=YYYY-MM-DD runs as on that day (to refit on a past week of such a log);
# MIRAGE_TRACE_FLAGS adds flags for reading it (such as --cluster-nodes 88 --lenient).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $(basename "$0") CONFIG MODEL [FIT_WEEKS]" >&2
  exit 2
fi
config=$1 model=$2 weeks=${3:-8}
mirage=${MIRAGE:-$(dirname "$0")/mirage}
read -r -a flags <<<"${MIRAGE_TRACE_FLAGS:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
today=${MIRAGE_TODAY:-$(date -u +%F)}
judge_from=$(date -u -d "$today - 7 days" +%F)
fit_from=$(date -u -d "$judge_from - $((weeks * 7)) days" +%F)
log=${MIRAGE_ACCOUNTING:-$work/site.swf}
[ -n "${MIRAGE_ACCOUNTING:-}" ] || "$mirage" trace export --config "$config" --out "$log" >/dev/null
"$mirage" train --agent wait-model --trace "$log" "${flags[@]}" --from "$fit_from" \
  --to "$judge_from" --out "$work/refit.json" >/dev/null
"$mirage" trace refit-waits "$log" "${flags[@]}" --current "$model" --candidate "$work/refit.json" \
  --from "$judge_from" --to "$today"
