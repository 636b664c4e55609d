"""The layer rule of emitter/ (docs/architecture.md): every module belongs to one layer, and an
import may only run to the same layer or one below it -- never up. Every import counts, at module
level or inside a function (a late import only hides the dependency), read with ast."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Bottom first. A module is in the layer of its longest listed prefix.
LAYERS: list[tuple[str, ...]] = [
    # the vocabulary every stage shares: IR, call records, errors, fixed-point math, boards, options
    ("emitter", "emitter.errors", "emitter.resources", "emitter.quant", "emitter.ir", "emitter.layout",
     "emitter.calls", "emitter.boards", "emitter.optimize"),
    ("emitter.onnx",),      # ONNX file -> OnnxModel (load, opsets, folding, float check)
    ("emitter.features",),  # the feature front end's spec and reference (audio DSP)
    ("emitter.kernels",),   # Python twins of the C kernels, their CMSIS-NN mapping vocabulary
    ("emitter.ops",),       # one module per op: lowering rule, layout, prepare
    ("emitter.lower",),     # OnnxModel -> IR Graph of quantized ops
    ("emitter.passes",),    # Graph -> Graph: fusions, layouts
    ("emitter.backends",),  # portable vs CMSIS-NN: kernel choice, call conversion
    ("emitter.plan",),      # order, views, streaming, arena offsets, plan search
    ("emitter.compiler",),  # the driver: ONNX file -> Compiled
    ("emitter.report",),    # figures of a Compiled: report.json data, summary, budgets
    ("emitter.render",),    # Compiled -> the bundle's files (C from templates/)
    ("emitter.target",),    # toolchains and QEMU
    ("emitter.verify",),    # build, run, compare, profile, debug, tune
    ("emitter.commands",),  # larger subcommands: quantize, the front end's options
    ("emitter.cli",),       # the `mcugen` command
]


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, rank = len(name), i
    return rank


def modules() -> dict[str, Path]:
    out = {}
    for p in sorted((REPO / "emitter").rglob("*.py")):
        parts = list(p.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def imported(path: Path, module: str, known: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, emitter module) for every import in `path`, `from a import b` naming a.b if b is a module."""
    is_pkg = path.name == "__init__.py"
    out = []
    for n in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                parts = module.split(".")[: len(module.split(".")) - n.level + (1 if is_pkg else 0)]
                base = ".".join(parts + ([n.module] if n.module else []))
            for a in n.names:
                full = f"{base}.{a.name}"
                out.append((n.lineno, full if full in known else base))
        elif isinstance(n, ast.Import):
            out += [(n.lineno, a.name) for a in n.names]
    return [(line, m) for line, m in out if m == "emitter" or m.startswith("emitter.")]


def upward_imports() -> list[str]:
    known = modules()
    bad = []
    for module, path in known.items():
        here = layer_of(module)
        for line, target in imported(path, module, known):
            if layer_of(target) > here:
                src = path.read_text().splitlines()[line - 1].strip()
                bad.append(f"{path.relative_to(REPO)}:{line}: {module} (layer {here}) imports {target} "
                           f"(layer {layer_of(target)}): {src}")
    return bad


def test_every_module_has_a_layer() -> None:
    assert [m for m in modules() if layer_of(m) < 0] == []


def test_no_import_runs_up_a_layer() -> None:
    bad = upward_imports()
    assert not bad, "imports from a lower layer to a higher one:\n" + "\n".join(bad)


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    p = tmp_path / "x.py"
    p.write_text("def f():\n    from emitter.render.bundle import render_bundle\n")
    known = modules()
    assert imported(p, "emitter.kernels.x", known) == [(2, "emitter.render.bundle")]
    assert layer_of("emitter.render.bundle") > layer_of("emitter.kernels.x")
    assert layer_of("emitter.calls") == 0 and layer_of("emitter.cli") == len(LAYERS) - 1


def test_at_most_twelve_modules_at_the_top_each_package_says_what_it_does() -> None:
    top = sorted(p.name for p in (REPO / "emitter").glob("*.py"))
    assert len(top) <= 12, top
    for init in sorted((REPO / "emitter").rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc, f"{init.relative_to(REPO)} opens without a docstring"
