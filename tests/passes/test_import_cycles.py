"""No import cycles in emitter/: every `import` of an emitter module, at module level or inside a
function (a late import would only hide a cycle), is an edge of one graph, and that graph has no
cycle. Op modules see lowering only through ops/base.py and errors.py. Every module imports in a
fresh interpreter."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def modules() -> dict[str, Path]:
    out = {}
    for p in sorted((REPO / "emitter").rglob("*.py")):
        parts = list(p.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The emitter modules importing `path` runs: each named module and its parent packages."""
    names = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            names.update(f"{n.module}.{a.name}" if f"{n.module}.{a.name}" in known else n.module for a in n.names)
        elif isinstance(n, ast.Import):
            names.update(a.name for a in n.names)
    out = set()
    for name in names:
        parts = name.split(".")
        out.update(".".join(parts[:k]) for k in range(1, len(parts) + 1) if ".".join(parts[:k]) in known)
    return out


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph = {}
    for name, path in known.items():
        # a submodule's own parent packages are already being imported when it runs: not an edge
        graph[name] = {m for m in imports(path, known) if m != name and not name.startswith(m + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found, state, stack = [], {}, []

    def visit(u: str) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                found.append(stack[stack.index(v):] + [v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(graph):
        if u not in state:
            visit(u)
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert "emitter.lower.qdq" in graph and "emitter.ops.base" in graph["emitter.ops.conv"]
    assert cycles(graph) == []


def test_op_modules_do_not_import_lowering() -> None:
    graph = import_graph()
    for name, deps in graph.items():
        if name.startswith("emitter.ops"):
            assert not {d for d in deps if d.startswith(("emitter.lower", "emitter.passes"))}, name


def test_every_module_imports_in_a_fresh_interpreter() -> None:
    names = sorted(modules())
    code = f"import importlib\nfor n in {names!r}:\n    importlib.import_module(n)\n"
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
