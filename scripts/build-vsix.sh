#!/usr/bin/env bash
# Builds the VS Code extension into editors/vscode/agent-assist.vsix and prints its path:
#   scripts/build-vsix.sh && code --install-extension editors/vscode/agent-assist.vsix
# Needs npm. Node 20+ on PATH is used as it is; an older one (Debian 12 ships 18) is
# replaced for this build by Node 24 from the npm registry, under editors/vscode/.tools
# (~190 MB, once). Then `npm ci` (~205 MB of node_modules, once) and `npm run package`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../editors/vscode" && pwd)"
cd "$ROOT"
command -v npm >/dev/null || {
  echo "build-vsix: npm is needed (Debian: sudo apt install npm)" >&2
  exit 1
}
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ]; then
  echo "== Node $(node --version 2>/dev/null || echo missing) is older than 20: using Node 24 from the npm registry" >&2
  source scripts/tools.sh
fi
stamp=node_modules/.lock-stamp # the same stamp as scripts/test.sh: npm ci once per lockfile
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  echo "== npm ci" >&2
  npm ci --no-fund --no-audit --loglevel=error >&2
  cp package-lock.json "$stamp"
fi
echo "== npm run package" >&2
npm run --silent package -- -o agent-assist.vsix >&2
echo "$ROOT/agent-assist.vsix"
