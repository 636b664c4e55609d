"""ConvTranspose (issue #13, item 5): onnxruntime quantize_static QDQ models (strides 1/2/3, pads,
output_padding, output_shape/auto_pad, dilation, odd sizes, kernels 2..4, 1-D) run exactly in QEMU
(cortex-m4, cortex-m55: C == golden bit for bit; the golden is within one quantum of onnxruntime in
tests/test_op_cases.py); asymmetric uint8 weights fold exactly; the cmsis-nn backend keeps the layer
portable and says why; the QOperator form (ConvTranspose left float) and group != 1 are refused by name."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from emitter.boards import load_board
from emitter.compiler import compile_model, golden_run
from emitter.errors import McugenError
from emitter.target.toolchain import missing_tools
from emitter.verify.run import diff_stats, ort_run
from tests.harness.bundles import build_library, emit, int8_inputs, run_c
from tests.harness.cmsis import CMSIS_NN
from tests.harness.qemu import MergedCase, run_merged
from tests.models.ops import CASES, case_model, quantize
from tests.test_robustness import expect_error

CMSIS = CMSIS_NN
CONVT = CASES["ConvTranspose"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("convt")
    return {case.id: case_model(case, "qdq", tmp) for case in CONVT}


@pytest.mark.qemu
@pytest.mark.skipif(bool(missing_tools()), reason="the QEMU tier needs missing tools")
@pytest.mark.parametrize("core,backend", [("cortex-m4", "portable"), ("cortex-m55", "portable")] + [
    pytest.param(core, "cmsis-nn", marks=pytest.mark.skipif(CMSIS is None, reason="CMSIS_NN_PATH is not set"))
    for core in ("cortex-m4", "cortex-m55")])
def test_convtranspose_in_qemu(core, backend, models, tmp_path):
    """cmsis-nn: TFLite numerics (CMSIS-NN's rounding), so that the transpose conv layers it computes
    bit-exactly (cmsis_problem) call arm_transpose_conv_wrapper_s8: its direct path (C_in <= 16) and,
    on the DSP core, its reverse-conv path (C_in > 16)."""
    board = load_board(core)
    extra = {"backend": backend, "cmsis_path": CMSIS, "numerics": "tflite"} if backend == "cmsis-nn" else {}
    cases = []
    for k, (name, (path, xs)) in enumerate(models.items()):
        c = compile_model(path, name=f"ct{k}", board=board, **extra)
        cases.append(MergedCase(name, c, int8_inputs(c, xs)))
    if backend == "cmsis-nn":
        called = {case.label for case in cases
                  if "arm_transpose_conv_wrapper_s8" in [p.kernel for p in case.compiled.prepared]}
        assert {"convt_k2_s2", "convt_k3_s1_nobias"} <= called, called
        assert ("convt_wide_channels" in called) == (core == "cortex-m4"), called
        assert "convt_k3_s2_p1_op1" not in called and "convt_k3x2_s3x1_asym_pads" not in called, called
    result = run_merged(cases, board, tmp_path, cmsis_nn=CMSIS if backend == "cmsis-nn" else None)
    assert result.run.exit_code == 0, (result.crashed_in, result.failures)
    for k, case in enumerate(cases):
        for got, want in zip(result.outputs[k], golden_run(case.compiled, case.inputs), strict=True):
            np.testing.assert_array_equal(got, want, err_msg=f"{case.label} on {core}/{backend}")


@pytest.mark.skipif(CMSIS is None, reason="CMSIS_NN_PATH is not set")
def test_cmsis_backend_keeps_it_portable_where_not_exact_and_says_why(models):
    for case, core, words in (("convt_k3_s2_p1_op1", "cortex-m4", "pad_top a multiple of the stride"),
                              ("convt_k3x2_s3x1_asym_pads", "cortex-m4", "no dilation"),
                              ("convt_wide_channels", "cortex-m55", "no MVE scratch size")):
        c = compile_model(models[case][0], backend="cmsis-nn", cmsis_path=CMSIS, board=load_board(core),
                          numerics="tflite")
        why = [w for _, kernel, w in c.portable_layers if kernel == "mcu_transpose_conv_s8"]
        assert why and "arm_transpose_conv_wrapper_s8 would not be bit-exact here" in why[0] and words in why[0], why


def test_asymmetric_uint8_weights_fold_exactly(tmp_path):
    """weight_type=QUInt8 (u8u8): the weight zero point folds into stacked input channels."""
    case = next(c for c in CONVT if c.id == "convt_k3_s2_p1_op1")
    feeds = case.calib_feeds()
    path = quantize(case.float_model(), feeds, activation_type="uint8", weight_type="uint8", per_channel=False,
                    out_path=tmp_path / "convt_u8u8.onnx")
    xs = [feeds[0]["x0"]]
    zps = [NH.to_array(i) for i in onnx.load(path).graph.initializer if i.name.endswith("W_zero_point")]
    assert zps and np.any(zps[0] != 128), "the case must have asymmetric weights"
    c = compile_model(path, name="ctu8")
    assert any(n.name.endswith("_weight_zero_point") for n in c.graph.nodes), "no zero point folded"
    samples = int8_inputs(c, xs)
    gold = golden_run(c, samples)
    lib = build_library([emit(c, tmp_path / "b")], tmp_path / "libctu8.so")
    for h, g in zip(run_c(lib, c, samples), gold, strict=True):
        np.testing.assert_array_equal(h, g)
    d, n, mx = diff_stats([gold], ort_run(c, path, [samples]))
    assert mx <= 1, f"golden vs onnxruntime: {d}/{n} differ, max {mx}"


def _conv_then_convt(tmp_path, fmt: str, group: int = 1):
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((4, 6 // group, 2, 2)) * 0.3).astype(np.float32)
    nodes = [H.make_node("Conv", ["x", "W1"], ["c"], pads=[1, 1, 1, 1]),
             H.make_node("ConvTranspose", ["c", "W2"], ["y"], strides=[2, 2], group=group)]
    g = H.make_graph(nodes, "g", [H.make_tensor_value_info("x", TP.FLOAT, [1, 3, 6, 6])],
                     [H.make_tensor_value_info("y", TP.FLOAT, [1, 6, 12, 12])],
                     [NH.from_array(w1, "W1"), NH.from_array(w2, "W2")])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    feeds = [{"x": rng.uniform(-1, 1, (1, 3, 6, 6)).astype(np.float32)} for _ in range(4)]
    return quantize(m, feeds, fmt=fmt, out_path=tmp_path / "q" / f"convt_{fmt}_{group}.onnx")


def test_qoperator_form_is_refused_naming_qdq(tmp_path, capsys):
    path = _conv_then_convt(tmp_path, "qop")
    assert "ConvTranspose" in [n.op_type for n in onnx.load(path).graph.node]  # left in float
    expect_error(path, tmp_path, capsys, McugenError, "QOperator format has no quantized ConvTranspose",
                 "QuantFormat.QDQ")


def test_grouped_convtranspose_is_refused_by_name(tmp_path, capsys):
    path = _conv_then_convt(tmp_path, "qdq", group=2)
    expect_error(path, tmp_path, capsys, McugenError, "group=2", "ConvTranspose")
