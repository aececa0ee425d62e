#!/usr/bin/env bash
# One command on a fresh clone: install test dependencies, start what the tests need, run the whole suite.
# Redis (127.0.0.1:6379) is expected to be running; the Kafka-wire broker and the Elasticsearch-API
# server are started by the test session itself on free loopback ports (tests/integration/).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ops/install.sh prod,test
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
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
