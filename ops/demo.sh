#!/usr/bin/env bash
# One command on a fresh clone: install memstream and run the demo on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ops/install.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/memstream demo "$@"
