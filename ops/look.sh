#!/usr/bin/env bash
# One command to look at memstream: install, build the bundled demo chats, serve them, and print where the
# inspector is. Usage: bash ops/look.sh [port]   (stop with Ctrl-C)
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${1:-8080}"
DATA="${MEMSTREAM_LOOK_DIR:-.memstream-demo}"
bash ops/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
echo "building the demo data in $DATA ..."
.venv/bin/memstream demo --data-dir "$DATA" >/dev/null
echo "inspector: http://127.0.0.1:${PORT}/ui    API docs: http://127.0.0.1:${PORT}/docs    (Ctrl-C stops)"
exec .venv/bin/memstream serve --data-dir "$DATA" --port "$PORT"
