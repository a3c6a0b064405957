#!/usr/bin/env bash
# Entry point of count_lines: each parameter arrives as --name=value. It runs in the project
# directory (toolgate's work directory).
set -euo pipefail

path=""
contains=""
has_contains=false
for argument in "$@"; do
  case "$argument" in
    --path=*) path="${argument#--path=}" ;;
    --contains=*) contains="${argument#--contains=}"; has_contains=true ;;
    *) echo "unknown argument: $argument" >&2; exit 2 ;;
  esac
done

if [[ ! -f "$path" ]]; then
  printf '{"error": "no such file: %s"}\n' "${path//\"/\\\"}"
  exit 0
fi
if $has_contains; then
  # -F: the text is not a pattern; --: it cannot be read as an option.
  count=$(grep -F -c -- "$contains" "$path" || true)
else
  count=$(wc -l < "$path")
fi
printf '{"lines": %d}\n' "$count"
