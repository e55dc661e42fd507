#!/usr/bin/env bash
# Makes sure Redis answers on 127.0.0.1:6379, which the Celery round-trip test uses.
# As root it installs and starts Redis when needed; anyone else only gets told how.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

redis_answers() {
  command -v redis-cli >/dev/null 2>&1 && redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG
}

if redis_answers; then
  echo "Redis answers on 127.0.0.1:6379."
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "Redis does not answer on 127.0.0.1:6379; the Celery round-trip test will fail." >&2
  echo "Start it (as root: scripts/ensure-redis.sh), or: redis-server --port 6379 --daemonize yes" >&2
  exit 0
fi

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  bash "$here/ensure-system-packages.sh" "redis-server:redis-server" "redis-cli:redis-tools"
fi

# Installing the package may already have started a server.
if ! redis_answers; then
  echo "Starting Redis on 127.0.0.1:6379."
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi

for _ in $(seq 50); do
  if redis_answers; then
    echo "Redis answers on 127.0.0.1:6379."
    exit 0
  fi
  sleep 0.2
done
echo "Redis did not answer on 127.0.0.1:6379 within 10 s; see /var/log/redis/ci.log." >&2
exit 1
