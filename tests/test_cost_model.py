"""The plan search's cost model (emitter/plan/propose.py): the whole-layer base and the row and lean
calls from each core's cost table, and the estimate of a whole plan against QEMU's count
(benchmarks/memory.py measures every shared model; docs/memory.md's `estimate error` column)."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.plan.propose import base_estimate, cost_rows, layer_costs
from emitter.plan.search import INSTRUCTIONS_PER_MAC
from tests.harness.bundles import SHARED_MODELS

REPO = Path(__file__).resolve().parents[1]
DIGITS = REPO / "examples" / "digits_cnn_int8.onnx"
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None,
                                reason="needs qemu-system-arm and arm-none-eabi-gcc")


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m7", "cortex-m55"])
def test_every_arm_core_has_table_costs(core: str) -> None:
    c = compile_model(DIGITS, board=load_board(core), memory="layer")
    isa = c.plan_isa
    assert cost_rows(core, isa)
    base = base_estimate(c.prepared, core, isa, INSTRUCTIONS_PER_MAC[isa], 200)
    assert base is not None and base > 0
    costs = layer_costs(c.prepared, core, isa)
    assert costs, "digits' convolutions are in the table"
    for lc in costs.values():
        # every figure is predicted (propose.overhead clamps a row plan predicted below whole layers at 0)
        assert min(lc.whole, lc.rows, lc.whole_lean, lc.rows_lean) > 0


def test_a_core_without_a_table_borrows_its_isa_or_has_none() -> None:
    assert cost_rows("cortex-m33", "dsp") == cost_rows("cortex-m4", "dsp")
    assert cost_rows("no-such-core", "c") == ()


def _measure() -> object:
    spec = importlib.util.spec_from_file_location("memory_bench", REPO / "benchmarks" / "memory.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.measure


# Plans whose estimate is within 5 % of QEMU's count (docs/memory.md), and two that are not yet
# (micro_speech's first convolution by rows, fed, over-estimated from the cost table's bands of one
# input channel; IC's 3x3 layers on the DSP path, whose windows fill fewer than 4 positions a pass,
# under-estimated): strict xfails, so they are seen when the gaps close.
@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize(("name", "core", "kind"), [
    ("tflm_micro_speech", "cortex-m4", "inplace"),
    ("mlperf_ad_fc_autoencoder", "cortex-m55", "inplace"),
    ("mlperf_kws_dscnn", "cortex-m4", "inplace"),  # lean calls over their inputs
    ("mlperf_kws_dscnn", "cortex-m55", "overlap"),
    ("mlperf_kws_dscnn", "cortex-m55", "stream"),  # every layer by rows through its lean call
    pytest.param("tflm_micro_speech", "cortex-m4", "stream",
                 marks=pytest.mark.xfail(strict=True, reason="micro_speech by rows: +9 % (docs/memory.md)")),
    pytest.param("mlperf_ic_resnet8", "cortex-m4", "inplace",
                 marks=pytest.mark.xfail(strict=True, reason="IC in place on cortex-m4: -7 % (docs/memory.md)")),
])
def test_plan_estimate_within_5_percent_of_qemu(name: str, core: str, kind: str, tmp_path: Path) -> None:
    if not (SHARED_MODELS / name).is_dir():
        pytest.skip("shared models not available")
    row = _measure()(name, core, kind, tmp_path)  # type: ignore[operator]
    assert row["bit_exact_vs_tflm"]
    est = row["estimated_instructions"]
    assert est is not None
    assert abs(est / row["instructions"] - 1) <= 0.05, (est, row["instructions"])
