#!/usr/bin/env bash
# One command on a fresh clone: install test dependencies, start what the tests need, run the whole suite.
# Redis is started on a free loopback port unless MEMSTREAM_TEST_REDIS_URL names one; the Kafka-wire broker
# and the Elasticsearch-API server are started by the test session itself on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ops/install.sh prod,test
bash ops/browser.sh  # Debian's chromium for the inspector's browser test (skips without it)
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# Redis: MEMSTREAM_TEST_REDIS_URL if given; else a private redis-server on a free loopback port, stopped on
# exit (no shared state with a Redis that may already run on 6379).
if [ -z "${MEMSTREAM_TEST_REDIS_URL:-}" ] && command -v redis-server > /dev/null; then
  port=$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis_dir=$(mktemp -d)
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$redis_dir" --daemonize yes \
    --pidfile "$redis_dir/redis.pid" > /dev/null
  trap 'kill "$(cat "$redis_dir/redis.pid" 2> /dev/null)" 2> /dev/null || true; rm -rf "$redis_dir"' EXIT
  for _ in $(seq 50); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.1; done
  export MEMSTREAM_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
fi
ruff check .
set +e
python -m pytest -q -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "no tests were collected" >&2
  exit 1
fi
exit "$rc"
