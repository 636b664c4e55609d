"""The plan search's cost model (emitter/plan/propose.py): the whole-layer base and the row and lean
calls from each core's cost table, and the estimate of a whole plan against QEMU's count
(benchmarks/memory.py measures every shared model; docs/memory.md's `estimate error` column)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from emitter.backends import kernel_choice as kc
from emitter.backends.cost_cases import shape_of
from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.plan.propose import base_estimate, cost_rows, layer_costs
from emitter.plan.search import INSTRUCTIONS_PER_MAC
from tests.harness.bundles import SHARED_MODELS, memory_measure
from tests.harness.cmsis import CMSIS_NN, needs_cmsis

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


@needs_cmsis
def test_a_cmsis_nn_call_is_priced_from_the_tables_cmsis_column() -> None:
    """The base of a cmsis-nn bundle counts CMSIS-NN's calls at their conversion's price (the table's
    CMSIS-NN column fitted at the layer's shape), not mcugen's kernel or MACs times a rate: on
    cortex-m55 VWW's whole-layer base was +66 % against QEMU with the kernel's rate per MAC."""
    board = load_board("cortex-m55")
    c = compile_model(DIGITS, board=board, memory="layer", backend="cmsis-nn", cmsis_path=CMSIS_NN,
                      cmsis_choice="cmsis", numerics="tflite")  # (CMSIS-NN rounds as TFLite)
    native = compile_model(DIGITS, board=board, memory="layer", numerics="tflite")
    theirs = [(k, p) for k, p in enumerate(c.prepared) if not p.is_portable and shape_of(native.prepared[k])]
    assert theirs, "digits' convolutions run CMSIS-NN's calls"
    for k, p in theirs:
        s, path = shape_of(native.prepared[k]), kc.path_of(native.prepared[k], board.isa)
        assert s is not None
        assert p.instructions == kc.predict_cmsis(s, path, board.name, board.isa) > 0
        alone = base_estimate((p,), board.name, board.isa, INSTRUCTIONS_PER_MAC[board.isa], 200)
        assert alone == p.instructions
    assert all(p.instructions == 0 for p in native.prepared)  # mcugen's calls: the planner prices them


def test_a_core_without_a_table_borrows_its_isa_or_has_none() -> None:
    assert cost_rows("cortex-m33", "dsp") == cost_rows("cortex-m4", "dsp")
    assert cost_rows("no-such-core", "c") == ()


# Plans whose estimate is within 5 % of QEMU's count (docs/memory.md).
@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize(("name", "core", "kind", "backend"), [
    ("tflm_micro_speech", "cortex-m4", "inplace", "portable"),
    ("mlperf_ad_fc_autoencoder", "cortex-m55", "inplace", "portable"),
    ("mlperf_kws_dscnn", "cortex-m4", "inplace", "portable"),  # lean calls over their inputs
    ("mlperf_kws_dscnn", "cortex-m4", "stream", "portable"),  # every layer by rows through its lean call
    ("mlperf_kws_dscnn", "cortex-m55", "overlap", "portable"),
    ("mlperf_kws_dscnn", "cortex-m55", "stream", "portable"),
    ("tflm_micro_speech", "cortex-m4", "stream", "portable"),  # one input channel by rows, fed
    ("mlperf_ic_resnet8", "cortex-m4", "inplace", "portable"),  # 3x3 layers of 2 and 1 DSP positions a pass
    ("mlperf_vww_mobilenetv1", "cortex-m55", "inplace", "cmsis-nn"),  # CMSIS-NN's calls at their price
])
def test_plan_estimate_within_5_percent_of_qemu(name: str, core: str, kind: str, backend: str,
                                                tmp_path: Path) -> None:
    if not (SHARED_MODELS / name).is_dir():
        pytest.skip("shared models not available")
    if backend == "cmsis-nn" and CMSIS_NN is None:
        pytest.skip("no CMSIS-NN")
    row = memory_measure()(name, core, kind, tmp_path, backend=backend)
    assert row["bit_exact_vs_tflm"]
    est = row["estimated_instructions"]
    assert est is not None
    assert abs(est / row["instructions"] - 1) <= 0.05, (est, row["instructions"])
