"""The code's shape: no import cycles, modules of one concern, the domain free of the edge."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("session", "engine", "lsp_server", "acp_edge", "mcp_edge")
MAX_LINES = 420  # "about 400": a module past it has more than one concern in it


def modules() -> dict[str, Path]:
    """Return every module of our packages by dotted name."""
    found = {}
    for package in PACKAGES:
        if not (REPO / package).is_dir():
            continue
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Return the imports that run (at module level or in functions), not `TYPE_CHECKING`."""
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for orelse in child.orelse:
                    visit(orelse)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                out.append(child)
            visit(child)

    visit(tree)
    return out


def _every_import(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Return every import, those under `TYPE_CHECKING` and in functions included."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]


def import_graph(*, typing_too: bool = False) -> dict[str, set[str]]:
    """Return, for each module, the modules of ours it imports when it runs.

    `typing_too`: also those it imports for its annotations only (`TYPE_CHECKING`).
    """
    imports = _every_import if typing_too else _runtime_imports
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{alias.name}" for alias in node.names]
                targets = [t if t in known else base for t in targets]
            edges |= {t for t in targets if t in known and t != name}
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """Return one import cycle, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_cycle_finder_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert "engine.model.runner" in graph["lsp_server.server"]  # the graph sees imports
    assert find_cycle(graph) is None


def test_no_import_cycles_of_annotations_either() -> None:
    """A module that names another's type only to annotate is still a circle to a reader."""
    graph = import_graph(typing_too=True)
    assert "session.store.session" in graph["session.store.backend"]  # it sees TYPE_CHECKING
    assert "session.store.session" not in import_graph()["session.store.backend"]
    assert find_cycle(graph) is None


EDGES = ("lsp_server", "acp_edge", "mcp_edge")


def test_session_never_imports_the_engine_or_an_edge() -> None:
    for name, edges in import_graph().items():
        if name.startswith("session"):
            assert not [e for e in edges if e.startswith((*EDGES, "engine"))], name


def test_the_engine_never_imports_an_edge() -> None:
    """The engine serves both edges: it never imports one (nor pygls, lsprotocol or acp).

    One exception: the declaration of the options (`lsp_server.protocol.options`, pydantic
    models only) is read, lazily, to know the option paths `optionNames` may name.
    """
    allowed = {"lsp_server", "lsp_server.protocol", "lsp_server.protocol.options"}
    allowed |= {"lsp_server.protocol.wire", "lsp_server.protocol.types"}
    for name, edges in import_graph().items():
        if name.startswith("engine"):
            assert not [e for e in edges if e.startswith(EDGES) and e not in allowed], name
            assert not third_party_imports(name) & {"pygls", "lsprotocol", "acp"}, name


def test_the_edges_never_import_each_other() -> None:
    for name, edges in import_graph().items():
        for edge in EDGES:
            if name.startswith(edge):
                others = [e for e in edges if e.startswith(EDGES) and not e.startswith(edge)]
                assert not others, name


# The concrete stores and the packages that are theirs: the local store (its files and the
# indexes derived from them) and PostgreSQL. Everything else goes through `SessionStore`
# (session/store/backend.py) and `StoreProjects` (session/store/projects.py), and opens a
# store with `session/store/choose.py`: the store tools (`sessions …`, `doctor`, the demo)
# and the MCP server's scope over every project too.
CONCRETE_STORES = {
    "SessionManager",
    "ProjectLayout",
    "ProjectListing",
    "LocalProjects",
    "PgSessionStore",
    "PgProjects",
    "PgStore",
    "LocalTransferStore",
    "PgTransferStore",
    "LocalSearch",
    "ProjectSearch",
}
STORE_PACKAGES = (
    "session.local",
    "session.pg",
    "session.search",
    "session.timeline",
    "session.store.choose",  # the choice of store
)


def names_in(path: Path) -> set[str]:
    """Return every name and attribute a module's code mentions (its strings aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name.rpartition(".")[2])
    return found


def test_no_concrete_store_class_is_named_outside_its_store() -> None:
    """Search, indexing after a turn, fork and the resume offer go through the interface."""
    outside = {
        name: sorted(names_in(path) & CONCRETE_STORES)
        for name, path in modules().items()
        if not name.startswith(STORE_PACKAGES)
    }
    assert {name: found for name, found in outside.items() if found} == {}
    chosen = names_in(modules()["session.store.choose"])
    assert {"SessionManager", "PgSessionStore"} <= chosen  # the check sees the names


def third_party_imports(name: str) -> set[str]:
    """Return the top-level names a module of ours imports when it runs."""
    tree = ast.parse(modules()[name].read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name.partition(".")[0] for alias in node.names}
        elif not node.level and node.module:
            out.add(node.module.partition(".")[0])
    return out


def test_session_needs_no_pydantic_ai_to_import() -> None:
    for name in modules():
        if name.startswith("session"):
            tree = ast.parse(modules()[name].read_text(encoding="utf-8"))
            top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
            names = {
                (n.module or "") if isinstance(n, ast.ImportFrom) else n.names[0].name for n in top
            }
            assert not [n for n in names if n.startswith("pydantic_ai")], name


@pytest.mark.parametrize("name", sorted(modules()))
def test_modules_stay_small(name: str) -> None:
    lines = modules()[name].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{name} has {lines} lines: split it by concern"


def listed_packages() -> dict[str, tuple[set[str], set[str]]]:
    """Return each package whose docstring lists its modules: (those listed, those it has)."""
    found = {}
    for name, path in modules().items():
        if path.name != "__init__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if not any(line.startswith("- `") for line in doc.splitlines()):
            continue
        listed = set(re.findall(r"`([a-z_]+)(?:\.py)?`", doc))  # each named once at least
        if listed:
            found[name] = (listed, {p.stem for p in path.parent.glob("*.py")} - {"__init__"})
    return found


def test_a_package_that_lists_its_modules_lists_them_all() -> None:
    """A newcomer reads a package's docstring to find a module: none may be missing."""
    packages = listed_packages()
    assert {"session.local", "session.pg", "session.store"} <= set(packages)
    missing = {name: sorted(has - listed) for name, (listed, has) in packages.items()}
    assert {name: gone for name, gone in missing.items() if gone} == {}
