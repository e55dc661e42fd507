#!/usr/bin/env bash
# Runs the pytest suite on SQLite and on PostgreSQL side by side, one process each, and
# fails when either fails. The machine has two cores and each suite leaves one partly idle
# (waiting on its database server, a worker, a browser or a subprocess), so together they
# take little more than the PostgreSQL suite alone.
#
# Each suite writes to a log of its own (test-output/pytest-<database>.log), printed whole
# as soon as that suite ends, so the two outputs never interleave; a line a minute tells
# what is still running. The suites share nothing that one could take from the other: each
# process has its own database (test-db-<pid>.sqlite3, .pgdata/<pid>), live servers on
# ports the system picks, and Celery workers on queues named with a fresh uuid.
#
# Usage: scripts/test-suites.sh MAKE [MAKE-ARGUMENTS...]
#   (called by `make test`; runs `MAKE test-sqlite` and `MAKE test-postgres`)
set -uo pipefail

cd "$(dirname "$0")/.."
make_command=("$@")
[ "${#make_command[@]}" -gt 0 ] || make_command=(make)
logs=test-output
mkdir -p "$logs"

names=(sqlite postgres)
declare -A pid log status
for name in "${names[@]}"; do
  log[$name]="$logs/pytest-$name.log"
  # A process group of its own (setsid), so that an interrupted run ends all of it.
  setsid -w "${make_command[@]}" --no-print-directory "test-$name" >"${log[$name]}" 2>&1 </dev/null &
  pid[$name]=$!
done

stop_suites() {
  for name in "${names[@]}"; do
    kill -- "-${pid[$name]}" 2>/dev/null || kill "${pid[$name]}" 2>/dev/null || true
  done
}
trap 'stop_suites; exit 130' INT TERM

printf 'pytest on SQLite and on PostgreSQL, side by side; logs in %s/\n' "$logs"
start=$SECONDS
next_report=60
pending=("${names[@]}")
while [ "${#pending[@]}" -gt 0 ]; do
  still=()
  for name in "${pending[@]}"; do
    if kill -0 "${pid[$name]}" 2>/dev/null; then
      still+=("$name")
      continue
    fi
    wait "${pid[$name]}"
    status[$name]=$?
    printf '\n---- pytest on %s: %s (log %s) ----\n' "$name" \
      "$([ "${status[$name]}" -eq 0 ] && echo passed || echo "FAILED (exit ${status[$name]})")" \
      "${log[$name]}"
    cat "${log[$name]}"
  done
  pending=("${still[@]}")
  if [ "${#pending[@]}" -gt 0 ]; then
    sleep 1
    if [ $((SECONDS - start)) -ge "$next_report" ]; then
      printf '... %ds, still running: %s\n' "$((SECONDS - start))" "${pending[*]}"
      next_report=$((next_report + 60))
    fi
  fi
done

failed=()
for name in "${names[@]}"; do
  [ "${status[$name]}" -eq 0 ] || failed+=("$name")
done
if [ "${#failed[@]}" -gt 0 ]; then
  printf '\npytest FAILED on: %s (see the output above, or %s/pytest-<database>.log)\n' \
    "${failed[*]}" "$logs" >&2
  exit 1
fi
printf '\npytest passed on SQLite and on PostgreSQL.\n'
