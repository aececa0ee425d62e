#!/usr/bin/env bash
# Generate the secrets docker-compose.yml needs, once: a random ELASTIC_PASSWORD in .env (mode 600).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -f .env ] && grep -q '^ELASTIC_PASSWORD=' .env; then
  echo ".env already has ELASTIC_PASSWORD; keeping it" >&2
  exit 0
fi
umask 077
password=$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')
echo "ELASTIC_PASSWORD=$password" >> .env
echo "wrote ELASTIC_PASSWORD to .env (keep it out of version control)" >&2
