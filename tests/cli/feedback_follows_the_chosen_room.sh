#!/usr/bin/env bash
# With --feedback forced, the followers written are those the chosen room's dependencies leave:
# calibrating with the room chosen by replay gives the same followers as naming that room.
#   feedback_follows_the_chosen_room.sh MIRAGE TRACE DIR
set -euo pipefail
mirage="$1" trace="$2" dir="$3"
"$mirage" trace calibrate "$trace" --lenient --feedback --out "$dir/fb-chosen.toml" >/dev/null
grep -q "a congested day's room what the log's jobs held at their most (of [0-9]* shares replayed" \
  "$dir/fb-chosen.toml" || { echo "the room chosen is not the most held: the test needs another log"; exit 1; }
"$mirage" trace calibrate "$trace" --lenient --feedback --capacity-share 0 \
  --out "$dir/fb-named.toml" >/dev/null
chosen="$(sed -n '/^\[dependencies\]/,/^\[priority\]/p' "$dir/fb-chosen.toml")"
named="$(sed -n '/^\[dependencies\]/,/^\[priority\]/p' "$dir/fb-named.toml")"
if [ "$chosen" != "$named" ]; then
  echo "dependencies and followers differ between the chosen room and the same room named:"
  diff <(echo "$chosen") <(echo "$named") | head -20
  exit 1
fi
echo "ok: $(grep '^\[feedback\]' "$dir/fb-chosen.toml")"
