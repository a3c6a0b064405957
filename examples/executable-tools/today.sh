#!/usr/bin/env bash
# today: a toolgate protocol tool written in bash.
# `today.sh description` prints what the tool is; `today.sh run` prints the result as JSON.
set -euo pipefail

case "${1:-}" in
  description)
    cat <<'JSON'
{
  "name": "today",
  "description": "Tells the current date, weekday, ISO week and Unix time of the machine the agent runs on.",
  "input_schema": {
    "type": "object",
    "properties": {
      "utc": { "type": "boolean", "description": "Use UTC instead of the local time zone" }
    },
    "additionalProperties": false
  }
}
JSON
    ;;
  run)
    input=$(cat)
    # The input was validated against input_schema, so a plain match is enough here.
    if [[ "$input" =~ \"utc\"[[:space:]]*:[[:space:]]*true ]]; then export TZ=UTC; fi
    printf '{"date": "%s", "weekday": "%s", "iso_week": %d, "unix_time": %d, "time_zone": "%s"}\n' \
      "$(date +%F)" "$(date +%A)" "$((10#$(date +%V)))" "$(date +%s)" "$(date +%Z)"
    ;;
  *)
    echo "usage: $0 description|run" >&2
    exit 2
    ;;
esac
