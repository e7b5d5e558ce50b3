#!/usr/bin/env bash
# Real VS Code (code-server from npm) + Debian's Chromium driven by playwright-core.
# Installs Chromium and code-server's build deps (Debian, as root), code-server and playwright-core
# under .tools/e2e; packages the .vsix if missing; runs scripts/e2e.mjs. Screenshots: test-results/.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source scripts/tools.sh

if ! command -v chromium >/dev/null || [ ! -f /usr/include/gssapi/gssapi.h ] || [ ! -f /usr/include/X11/extensions/XKBfile.h ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "need Debian packages: chromium build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev" >&2
    exit 1
  fi
  stage "apt-get install" bash -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    build-essential python3 pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev chromium >/dev/null'
fi

E2E="$TOOLS/e2e"
if [ ! -x "$E2E/node_modules/.bin/code-server" ] || [ ! -d "$E2E/node_modules/playwright-core" ]; then
  mkdir -p "$E2E"
  echo '{"name":"agent-assist-vscode-e2e-tools","private":true}' >"$E2E/package.json"
  stage "install code-server + playwright-core" \
    bash -c "cd '$E2E' && npm install --no-fund --no-audit --loglevel=error code-server@4.139.1 playwright-core@1.65.1"
fi
if [ ! -d node_modules ]; then
  stage "npm ci" npm ci --no-fund --no-audit --loglevel=error
fi
if [ ! -f agent-assist.vsix ] || [ -n "$(find src media package.json -newer agent-assist.vsix -print -quit)" ]; then
  stage "vsce package" npx vsce package --no-dependencies -o agent-assist.vsix
fi
export CODE_SERVER="$E2E/node_modules/.bin/code-server" PLAYWRIGHT_CORE="$E2E/node_modules/playwright-core/index.js"
export AGENT_ASSIST_REPO="$REPO"
stage "e2e in code-server + chromium" node scripts/e2e.mjs
