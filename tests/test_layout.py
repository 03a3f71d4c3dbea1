"""The tree stays small and obvious: no module over 500 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 500


def test_no_module_is_over_500_lines():
    files = [*ROOT.glob("specrun/**/*.py"), *ROOT.glob("plugins/**/*.py")]
    sizes = {f.relative_to(ROOT).as_posix(): len(f.read_text(encoding="utf-8").splitlines()) for f in files}
    too_long = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not too_long, f"split these by responsibility (at most {MAX_LINES} lines): {too_long}"


def _imports(path: Path, package: list[str], modules: set[str]) -> set[str]:
    """The specrun modules a module imports at module level (``TYPE_CHECKING`` blocks included)."""
    found: set[str] = set()
    body = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while body:
        node = body.pop()
        if isinstance(node, ast.If | ast.Try):
            body.extend([*node.body, *getattr(node, "orelse", [])])
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])]) if node.level else node.module or ""
            found.update(m for m in [module, *(f"{module}.{a.name}" for a in node.names)] if m in modules)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
    return found


def test_no_import_circle_has_more_than_three_modules():
    import networkx  # here, not at collection (half a second): only this test needs it

    files = {}
    for f in ROOT.glob("specrun/**/*.py"):
        parts = list(f.relative_to(ROOT).with_suffix("").parts)
        package = parts[:-1]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = (f, package)
    graph = {name: _imports(f, package, set(files)) - {name} for name, (f, package) in files.items()}
    circles = [sorted(c) for c in networkx.strongly_connected_components(networkx.DiGraph(graph))]
    big = [c for c in circles if len(c) > 3]
    assert not big, f"import circles of more than 3 modules (module level, TYPE_CHECKING included): {big}"
    assert ["specrun._core.kinds"] in circles  # the kinds import no room that imports them
