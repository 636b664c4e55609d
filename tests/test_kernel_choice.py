"""Kernel choice by measurement (emitter/backends/kernel_choice.py, cost_measure.py, cost_cases.py).

- the interpolation rule on synthetic tables, and the committed tables' format;
- the --tune cache key;
- the cases as ONNX: each lowers to the one layer of its shape;
- `mcugen --tune` end to end on a small model (needs CMSIS_NN_PATH);
- acceptance (slow): every conv/depthwise/FC layer of the shared models, the zoo and a held-back
  style 1-D depthwise-separable audio model, measured in QEMU (both candidates, one firmware per
  core and candidate): the default choice costs at most 3 % more than the better candidate.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import onnx
import pytest

from emitter.backends import kernel_choice as kc
from emitter.backends.cost_cases import Shape, case_of, onnx_of, random_case, shape_of
from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.verify.tuning import cache_key
from tests.harness.cmsis import CMSIS_NN

needs_cmsis = pytest.mark.skipif(CMSIS_NN is None, reason="CMSIS_NN_PATH is not set: point it at a CMSIS-NN "
                                 "v7.0.0 checkout to measure CMSIS-NN's kernels")
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None,
                                reason="needs qemu-system-arm and arm-none-eabi-gcc")
CORES = ("cortex-m4", "cortex-m7", "cortex-m55")


def row(s: Shape, ours: int, cmsis: int, path: str = "dsp") -> kc.Row:
    return kc.Row(s, path, ours, cmsis)


def dw(t: int, c: int, k: int) -> Shape:
    return Shape("dw", t, 1, c, c, k, 1, pt=k // 2, pb=k // 2)


def test_rule_exact_hit_and_nearest_neighbours():
    rows = (row(dw(49, 64, 3), 900, 1000), row(dw(49, 64, 15), 1300, 1000), row(dw(49, 128, 15), 1400, 1000))
    assert kc.predict(rows, dw(49, 64, 3), "dsp", "dsp") == (900, 1000, True)
    ours, cmsis, exact = kc.predict(rows, dw(49, 64, 13), "dsp", "dsp")  # type: ignore[misc]
    assert not exact and ours > cmsis  # nearest: the K = 15 cases, where CMSIS-NN wins
    ours, cmsis, _ = kc.predict(rows, dw(49, 64, 4), "dsp", "dsp")  # type: ignore[misc]
    assert ours < cmsis


def test_rule_scales_with_macs_and_keeps_groups_apart():
    """Counts scale with the layer's MACs; a case of another kernel, path or CMSIS-NN function
    never counts; no case of the group: no prediction (CMSIS-NN)."""
    small = Shape("fc", c_in=64, c_out=10, per_channel=0)
    rows = (row(small, 500, 1000, "mve"), row(Shape("fc", c_in=64, c_out=10, per_channel=1), 5000, 1000, "mve"),
            row(dw(49, 64, 3), 1, 1000, "mve"))
    ours, cmsis, _ = kc.predict(rows, Shape("fc", c_in=128, c_out=10, per_channel=0), "mve", "mve")  # type: ignore[misc]
    assert cmsis == pytest.approx(2000, rel=0.01) and ours == pytest.approx(1000, rel=0.01)
    assert kc.predict(rows, small, "generic", "mve") is None
    assert kc.predict(rows, Shape("conv", 8, 8, 8, 8, 1, 1), "mve", "mve") is None


def test_cmsis_fn_follows_the_v7_wrappers():
    assert kc.cmsis_fn(Shape("conv", 8, 8, 16, 8, 1, 1), "dsp") == "1x1_fast"
    assert kc.cmsis_fn(Shape("conv", 8, 8, 16, 8, 1, 1, 2, 2), "dsp") == "1x1"
    assert kc.cmsis_fn(Shape("conv", 1, 20, 16, 8, 1, 3, pl=1, pr=1), "dsp") == "1xn"
    assert kc.cmsis_fn(Shape("conv", 8, 8, 16, 8, 3, 3, pt=1, pb=1, pl=1, pr=1), "dsp") == "conv"
    three = Shape("dw", 8, 8, 16, 16, 3, 3, pt=1, pb=1, pl=1, pr=1)
    assert kc.cmsis_fn(three, "dsp") == "dw_3x3" and kc.cmsis_fn(three, "mve") == "dw_opt"
    assert kc.cmsis_fn(Shape("dw", 8, 8, 4, 8, 3, 3), "dsp") == "dw"
    assert kc.cmsis_fn(Shape("dw", 8, 8, 1, 96, 3, 3), "mve") == "dw_to_conv"


@pytest.mark.parametrize("core", CORES)
def test_committed_tables(core):
    """Each core's table: written by the sweep, with both counts for most cases, every kind."""
    data = json.loads((kc.TABLES / f"{core}.json").read_text())
    assert data["core"] == core and data["command"].startswith("python scripts/cost_tables.py")
    rows = kc.load_table(core)
    assert len(rows) >= 300 and {r.shape.kind for r in rows} == {"conv", "dw", "fc", "bmm"}
    assert all(r.ours > 0 and r.cmsis > 0 for r in rows)


def test_cache_key_names_every_part():
    s = dw(49, 64, 9)
    base = cache_key(s, "mve", "cortex-m55", "v7.0.0", "12.2.1")
    assert base == cache_key(s, "mve", "cortex-m55", "v7.0.0", "12.2.1")
    others = [cache_key(dw(49, 64, 11), "mve", "cortex-m55", "v7.0.0", "12.2.1"),
              cache_key(s, "generic", "cortex-m55", "v7.0.0", "12.2.1"),
              cache_key(s, "mve", "cortex-m4", "v7.0.0", "12.2.1"),
              cache_key(s, "mve", "cortex-m55", "v7.1.0", "12.2.1"),
              cache_key(s, "mve", "cortex-m55", "v7.0.0", "13.2.1")]
    assert base not in others and len(set(others)) == len(others)


def test_cases_lower_to_their_own_layer(tmp_path):
    """Every case of a multi-branch model is one layer of exactly its shape, and a model's layer
    copied as a case (its own weights and requantization) takes the same kernel path."""
    shapes = [dw(49, 64, 9), Shape("conv", 1, 25, 16, 8, 1, 3, 1, 2, pl=1, pr=1),
              Shape("dw", 12, 12, 4, 8, 3, 3, 2, 2, 1, 1, 1, 0, 1, 0), Shape("fc", c_in=100, c_out=7, per_channel=0),
              Shape("conv", 16, 16, 8, 16, 3, 3, dh=2, dw=2, pt=2, pb=2, pl=2, pr=2)]
    cases = [random_case(f"x{i}", s, i) for i, s in enumerate(shapes)]
    onnx.save(onnx_of(cases), str(tmp_path / "m.onnx"))
    c = compile_model(tmp_path / "m.onnx", name="m", io_nhwc=True, board=load_board("cortex-m55"))
    assert [shape_of(p) for p in c.prepared] == shapes
    copies = [case_of(p, f"y{k}") for k, p in enumerate(c.prepared)]
    onnx.save(onnx_of([x for x in copies if x is not None]), str(tmp_path / "copy.onnx"))
    again = compile_model(tmp_path / "copy.onnx", name="m", io_nhwc=True, board=load_board("cortex-m55"))
    assert [shape_of(p) for p in again.prepared] == shapes
    assert [kc.path_of(p, "mve") for p in again.prepared] == [kc.path_of(p, "mve") for p in c.prepared]


def test_tune_needs_cmsis_nn(monkeypatch, capsys, tmp_path):
    from emitter.cli import main
    from tests.models.tiny import HELLO

    monkeypatch.delenv("CMSIS_NN_PATH", raising=False)
    assert main([str(HELLO), "--board=cortex-m4", "--tune", "-o", str(tmp_path / "b")]) == 2
    assert "--tune" in capsys.readouterr().err


@needs_cmsis
@needs_qemu
@pytest.mark.qemu
def test_tune_end_to_end(tmp_path, monkeypatch, capsys, cmsis_env):
    """--tune measures the model's layers on the board's core, caches them, and the summary and
    report.json show both candidates' counts per layer, marked measured."""
    from emitter.cli import main
    from tests.models.tiny import HELLO

    monkeypatch.setenv("MCUGEN_CACHE_DIR", str(tmp_path / "cache"))
    argv = [str(HELLO), "--board=cortex-m55", "--backend=cmsis-nn", "--tune", "-o", str(tmp_path / "b")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "kernel choice: 3 conv/depthwise/FC layers, 3 measured in QEMU (--tune)" in out
    lines = [ln for ln in out.splitlines() if "mcu_fully_connected_s8" in ln and "measured ->" in ln]
    assert len(lines) == 3
    cached = list((tmp_path / "cache" / "tune").glob("*.json"))
    assert len(cached) == 3
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    choices = report["kernel_choices"]
    assert [x["source"] for x in choices] == ["measured"] * 3
    assert all(x["chosen"] == ("mcugen" if x["mcugen"] < x["cmsis_nn"] else "cmsis-nn") for x in choices)
    for f in cached:  # a second run reads the cache: changed counts show up in the choice
        d = json.loads(f.read_text())
        f.write_text(json.dumps({**d, "ours": 1, "cmsis": 2}))
    assert main(argv + ["--force"]) == 0
    again = json.loads((tmp_path / "b" / "report.json").read_text())["kernel_choices"]
    assert all(x["mcugen"] == 1 and x["chosen"] == "mcugen" for x in again)


# -- acceptance -------------------------------------------------------------------------------------

def model_cases(core: str) -> list[tuple[str, object]]:
    """(label, case) of every conv/depthwise/FC layer of the shared and zoo models and of a
    held-back-style 1-D depthwise-separable audio model (M55 only), deduplicated by shape and path."""
    from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS, shared_model

    board = load_board(core)
    models: list[tuple[str, Path, str | None]] = []
    if SHARED_MODELS.is_dir():
        models += [(n, shared_model(n), None) for n in MODEL_NAMES]
    from tests.models.zoo.catalog import CATALOG
    from tests.models.zoo.variants import DEFAULT, Variant

    zoo = Path(tempfile.gettempdir()) / "mcugen-zoo-choice"
    models += [("zoo:" + zm.name, Variant(zm, DEFAULT).build(zoo), "tflite") for zm in CATALOG]
    out, seen = [], set()
    for label, path, numerics in models:
        c = compile_model(path, name="m", board=board, numerics=numerics)
        for k, p in enumerate(c.prepared):
            case = case_of(p, f"{label}:{k}")
            if case is None:
                continue
            key = (case.shape, kc.path_of(p, board.isa))
            if key not in seen:
                seen.add(key)
                out.append((f"{label} layer {k} {case.shape.label()}", case))
    if core == "cortex-m55":  # depthwise Kx1, K 3..15, 40..128 channels, then 1x1 convs
        for i, (k, ch, t) in enumerate([(3, 40, 99), (5, 56, 61), (7, 72, 99), (9, 88, 61), (11, 104, 49),
                                        (13, 120, 49), (15, 128, 37), (9, 40, 99), (15, 64, 61)]):
            for s in (Shape("dw", t, 1, ch, ch, k, 1, pt=k // 2, pb=k // 2), Shape("conv", t, 1, ch, ch, 1, 1)):
                case = random_case(f"audio1d:{i}", s, 1000 + i)
                out.append((f"audio1d {s.label()}", case))
    return out


def prepared_of(cases: list, board) -> list:
    """The portable layer each case compiles to on `board` (for its code path)."""
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save(onnx_of(cases), str(Path(tmp) / "m.onnx"))
        return list(compile_model(Path(tmp) / "m.onnx", name="m", io_nhwc=True, board=board).prepared)


@needs_cmsis
@needs_qemu
@pytest.mark.qemu
@pytest.mark.slow
@pytest.mark.parametrize("core", CORES)
def test_default_choice_within_3_percent_of_the_better_measured(core):
    from emitter.backends.cmsis_nn import check_version
    from emitter.backends.cost_cases import Case
    from emitter.verify.tuning import tuned_counts

    board = load_board(core)
    items = model_cases(core)
    cases: list[Case] = [c for _, c in items]  # type: ignore[misc]
    paths = [kc.path_of(p, board.isa) for p in prepared_of(cases, board)]
    # measured in QEMU, one firmware per core and candidate (the --tune cache keeps them)
    version = str(check_version(CMSIS_NN))  # type: ignore[arg-type]
    counts = tuned_counts(cases, paths, board, CMSIS_NN, version)  # type: ignore[arg-type]
    misses = []
    rows = kc.table_for(core, board.isa)
    for (label, case), n in zip(items, counts, strict=True):
        if n.cmsis is None:  # CMSIS-NN does not take this layer: no choice to make
            continue
        got = kc.predict(rows, case.shape, n.path, board.isa)  # type: ignore[attr-defined]
        chosen = n.ours if got is not None and got[0] < got[1] else n.cmsis
        best = min(n.ours, n.cmsis)
        if chosen > 1.03 * best:
            misses.append(f"{label}: chose {chosen:,}, better {best:,} (mcugen {n.ours:,}, CMSIS-NN {n.cmsis:,}, "
                          f"{n.path} path)")
    assert not misses, f"{len(misses)} of {len(items)} layers on {core}:\n" + "\n".join(misses)
