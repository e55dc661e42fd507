#!/usr/bin/env bash
# Runs one phase of the build and prints how long it took, so a slow phase shows in the log.
# Usage: scripts/timed.sh NAME COMMAND [ARG...]; exits with COMMAND's status.
set -uo pipefail

name=$1
shift
printf '\n==> %s\n' "$name"
start=$EPOCHREALTIME
"$@"
status=$?
elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
if [ "$status" -eq 0 ]; then
  printf '<== %s: ok in %ss\n' "$name" "$elapsed"
else
  printf '<== %s: FAILED (exit %d) after %ss\n' "$name" "$status" "$elapsed"
fi
exit "$status"
