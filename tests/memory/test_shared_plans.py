"""The smallest memory plan of every shared model (../shared/models), bit-exact with TFLM's
reference outputs on the host and in QEMU (cortex-m4, cortex-m55; VWW also cortex-m7), with the
portable kernels and, when CMSIS_NN_PATH is set, the cmsis-nn backend; and the acceptance
figures of the memory issue, as activation RAM (arena + the caller's input/output buffers)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.errors import BudgetError
from emitter.plan.search import activation_ram
from emitter.target.toolchain import missing_tools
from emitter.verify.run import run_host
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS, emit, shared_model
from tests.harness.cmsis import CMSIS_NN
from tests.memory.qemu import qemu_outputs

MISSING = missing_tools()
needs_models = pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")
needs_qemu = pytest.mark.skipif(bool(MISSING), reason="needs missing tools: " + "; ".join(MISSING))
CMSIS = CMSIS_NN

# activation RAM the smallest plan must reach (the memory issue's table; TFLM's arena is larger)
REQUIRED = {"mlperf_vww_mobilenetv1": 36_000, "mlperf_kws_dscnn": 9_000, "mlperf_ic_resnet8": 32_000,
            "tflm_micro_speech": 2_600, "mlperf_ad_fc_autoencoder": 1_536, "tflm_hello_world": 34}
CASES = [(n, "cortex-m4") for n in MODEL_NAMES] + [(n, "cortex-m55") for n in MODEL_NAMES] + [
    ("mlperf_vww_mobilenetv1", "cortex-m7")]


def reference(name: str) -> tuple[list[list[np.ndarray]], np.ndarray]:
    ref = np.load(SHARED_MODELS / name / f"{name}_ref.npz")
    c = compile_model(shared_model(name), name="net")
    return [[x.astype(np.int8).reshape(c.input_shapes[0])] for x in ref["inputs"]], ref["tflm_outputs"]


@needs_models
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_smallest_plan_meets_its_figure(name: str) -> None:
    c = compile_model(shared_model(name), name="net", board=load_board("cortex-m4"), memory="stream")
    assert activation_ram(c.graph, c.plan) <= REQUIRED[name], (name, activation_ram(c.graph, c.plan))


@needs_models
@needs_qemu
@pytest.mark.parametrize(("name", "core"), CASES)
def test_smallest_plan_bit_exact_with_tflm(name: str, core: str, tmp_path: Path) -> None:
    board = load_board(core)
    samples, tflm = reference(name)
    c = compile_model(shared_model(name), name="net", board=board, memory="stream")
    host_c = compile_model(shared_model(name), name="net", memory="stream", isa="c")
    host = run_host(host_c, emit(host_c, tmp_path / "host_bundle"), samples, tmp_path / "host")
    got = qemu_outputs(c, board, samples, tmp_path / "host" / "glue", tmp_path)
    for k, want in enumerate(tflm):
        assert np.array_equal(np.asarray(host[k][0]).ravel(), want.ravel().astype(np.int8)), (name, "host", k)
        assert np.array_equal(np.asarray(got[k][0]).ravel(), want.ravel().astype(np.int8)), (name, core, k)


@needs_models
@needs_qemu
@pytest.mark.skipif(not CMSIS, reason="CMSIS_NN_PATH is not set (the cmsis-nn backend needs the user's CMSIS-NN)")
@pytest.mark.parametrize(("name", "core", "budget"), [("mlperf_vww_mobilenetv1", "cortex-m4", 48 * 1024),
                                                     ("mlperf_ic_resnet8", "cortex-m55", 30_000),
                                                     ("mlperf_kws_dscnn", "cortex-m7", 8_500),
                                                     ("tflm_micro_speech", "cortex-m55", 2_600)])
def test_budget_plan_with_cmsis_nn(name: str, core: str, budget: int, tmp_path: Path) -> None:
    """The cmsis-nn backend under a budget its whole-tensor calls miss: the layers that run by rows
    stay portable (and say why), the others call CMSIS-NN; bit-exact with TFLM in QEMU."""
    from emitter.backends.cmsis_nn import KEPT

    board = load_board(core)
    samples, tflm = reference(name)
    c = compile_model(shared_model(name), name="net", board=board, backend="cmsis-nn",
                      cmsis_path=Path(str(CMSIS)), memory="auto", ram_budget=budget)
    assert activation_ram(c.graph, c.plan) <= budget
    kept = {k for k, _, why in c.portable_layers if why == KEPT}
    by_rows = {st.step for s in c.plan.schedule.segments if c.plan.modes.get(s.first) != "whole" for st in s.stages}
    assert kept <= by_rows and len(c.portable_layers) < sum(1 for p in c.prepared if p.kernel), c.portable_layers
    host_c = compile_model(shared_model(name), name="net", memory="layer", isa="c")
    run_host(host_c, emit(host_c, tmp_path / "host_bundle"), samples, tmp_path / "host")
    got = qemu_outputs(c, board, samples, tmp_path / "host" / "glue", tmp_path, cmsis_nn=Path(str(CMSIS)))
    for k, want in enumerate(tflm):
        assert np.array_equal(np.asarray(got[k][0]).ravel(), want.ravel().astype(np.int8)), k
    assert any(m != "whole" for m in c.plan.modes.values())  # the portable layers run by rows


@needs_models
def test_budgets_choose_and_refuse() -> None:
    """A 64 KB part and a 40K budget get a plan that fits; a budget below the smallest plan fails
    naming the smallest figure and the layer that sets it."""
    path = shared_model("mlperf_vww_mobilenetv1")
    small = compile_model(path, board=load_board("nrf52832-dk"), memory="auto", ram_budget=64 * 1024)
    assert activation_ram(small.graph, small.plan) <= 64 * 1024 and small.plan.schedule.kind != "layer"
    forty = compile_model(path, board=load_board("cortex-m4"), memory="auto", ram_budget=40 * 1024)
    assert activation_ram(forty.graph, forty.plan) <= 40 * 1024
    roomy = compile_model(path, board=load_board("cortex-m7"), memory="auto", ram_budget=512 * 1024)
    assert roomy.plan.schedule.kind in ("layer", "inplace")  # the fastest plan when it fits
    with pytest.raises(BudgetError, match=r"smallest plan \(stream\) needs [\d,]+ bytes.*Peak at layer \d+"):
        compile_model(path, board=load_board("cortex-m4"), memory="auto", ram_budget=20 * 1024)


@needs_models
@needs_qemu
def test_vww_on_a_64k_part_emits_verifies_and_reports(tmp_path: Path) -> None:
    """The CLI on a 64 KB-RAM board with 24K kept for the firmware: the fastest plan that fits 40K
    is chosen, verified in QEMU (bit-exact) and profiled (a streamed segment is one row of the
    profile), and report.json states it per layer. (Without the reserve the free in-place plan,
    55,362 B, fits and wins.)"""
    import json

    from emitter.cli import main

    out = tmp_path / "vww"
    model = shared_model("mlperf_vww_mobilenetv1")
    assert main([str(model), "--board", "nrf52832-dk", "--ram-reserve", "24K", "-o", str(out), "--verify",
                 "--profile", "--samples", "1", "--quiet"]) == 0
    data = json.loads((out / "report.json").read_text())
    plan = data["memory_plan"]
    assert plan["kind"] in ("overlap", "stream") and plan["activation_ram_bytes"] <= 40 * 1024
    assert {row["mode"] for row in plan["layers"]} & {"rows", "down", "up"}
    assert all(b["offset"] + b["bytes"] <= data["memory"]["arena_bytes"] for b in data["memory"]["buffers"])
    measured = data["measured"]["nrf52832-dk"]
    assert any("streamed" in lay["kernel"] for lay in measured["layers"]) or "rows" not in {
        row["mode"] for row in plan["layers"]}
    html = (out / "report.html").read_text()
    assert html.count('data-kind="ring"') == sum(1 for b in data["memory"]["buffers"] if b["kind"] == "ring")
