#!/usr/bin/env bash
# Typecheck, lint, unit and integration tests, and the .vsix. Installs what it needs (npm ci, Node 24).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source scripts/tools.sh

stamp=node_modules/.lock-stamp
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  stage "npm ci" npm ci --no-fund --no-audit --loglevel=error
  cp package-lock.json "$stamp"
fi
if [ ! -x "$AGENT_ASSIST_SERVER" ]; then
  echo "the server is missing at $AGENT_ASSIST_SERVER (run ../../run-tests once, or set AGENT_ASSIST_SERVER)" >&2
  exit 1
fi
stage "tsc --noEmit" npx tsc --noEmit
stage "eslint" npx eslint .
stage "unit tests" npx vitest run test/unit
stage "integration tests (real server + fake model)" npx vitest run test/integration
stage "vsce package" npx vsce package --no-dependencies -o agent-assist.vsix
