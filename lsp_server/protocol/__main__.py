"""`python -m lsp_server.protocol --write | --check`: the files generated from the models."""

from __future__ import annotations

import argparse
import sys

from .generate import DOCS_PATH, REPO, stale_files, undocumented, write_files


def main(argv: list[str] | None = None) -> int:
    """Regenerate (`--write`) or check (`--check`, exit 1 naming what is stale)."""
    parser = argparse.ArgumentParser(prog="python -m lsp_server.protocol", description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="regenerate the generated files")
    group.add_argument("--check", action="store_true", help="fail if any is stale")
    args = parser.parse_args(argv)
    if args.write:
        for path in write_files():
            sys.stdout.write(f"wrote {path}\n")
    problems = [
        f"{path} is stale: run python -m lsp_server.protocol --write" for path in stale_files()
    ]
    docs = (REPO / DOCS_PATH).read_text(encoding="utf-8")
    problems += [f"{DOCS_PATH} does not document {what}" for what in undocumented(docs)]
    for problem in problems:
        sys.stderr.write(problem + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
