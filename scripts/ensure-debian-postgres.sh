#!/usr/bin/env bash
# Makes sure a PostgreSQL server WITHOUT pgvector answers on 127.0.0.1:5432 (Debian's own
# package), which tests/embeddings/test_pgvector_missing_extension.py migrates against to
# prove the app works where the extension is missing. As root it installs and starts the
# server when needed; anyone else only gets told how.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

answers() {
  command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h 127.0.0.1 -p 5432
}

if answers; then
  echo "PostgreSQL answers on 127.0.0.1:5432."
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "PostgreSQL does not answer on 127.0.0.1:5432; the missing-extension tests will fail." >&2
  echo "Install Debian's postgresql package and start it (trust auth for local connections)." >&2
  exit 0
fi

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  bash "$here/ensure-system-packages.sh" "pg_ctlcluster:postgresql"
fi

version=$(ls /etc/postgresql | sort -V | tail -n 1)
echo "Starting PostgreSQL $version on 127.0.0.1:5432."
pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
for _ in $(seq 1 30); do
  answers && exit 0
  sleep 1
done
echo "PostgreSQL did not start on 127.0.0.1:5432." >&2
exit 1
