# Sourced by ./run-tests and ./run-demo: a .venv with the locked dependencies (uv.lock),
# made from nothing but Python 3.11+ and pip.
PYTHON=${PYTHON:-python3}
export UV_PYTHON_DOWNLOADS=never PYDANTIC_AI_NO_BANNER=1
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PYTHON" -m venv .venv || {
    rm -rf .venv
    echo "$PYTHON -m venv failed: Debian and Ubuntu ship venv apart (apt install python3-venv)" >&2
    exit 1
  }
fi
if [ ! -x .venv/bin/uv ]; then
  # a venv made by uv itself has no pip: bring it in first
  .venv/bin/python -m pip --version >/dev/null 2>&1 || .venv/bin/python -m ensurepip --upgrade >/dev/null
  .venv/bin/python -m pip install --quiet --disable-pip-version-check uv
fi
echo "== installing locked dependencies (uv.lock)"
extras=()
if [ -n "${EXTRA-dev}" ]; then extras=(--extra "${EXTRA-dev}"); fi
# Bytecode now, not at each import: with PYTHONDONTWRITEBYTECODE set (CI machines set it),
# every process would compile pydantic, pydantic-ai and openai again (~1.7 s a server).
.venv/bin/uv sync --quiet --frozen "${extras[@]}" --inexact --compile-bytecode --python .venv/bin/python
.venv/bin/python -m compileall -q session engine lsp_server acp_edge >/dev/null  # ours, where it changed
