#!/usr/bin/env bash
# Debian's Chromium (and CJK fonts) for the inspector's browser test (tests/ui/), when missing. Needs root and
# apt; without them the browser test skips and says why. Never fails the caller.
set -uo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ops/browser.sh: no chromium and no root apt-get; the browser test will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1
apt-get install -y -qq chromium fonts-noto-cjk >/dev/null 2>&1 \
  || echo "ops/browser.sh: could not install chromium; the browser test will skip" >&2
exit 0
