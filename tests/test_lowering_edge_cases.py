"""Wild-model gaps of issue #13 left by its first pass: a QOperator Flatten after
QLinearGlobalAveragePool deep behind com.microsoft ops (its shape from the IR), the summary line for
folded weight zero points, a scalar zero point with per-axis scales (the spec's broadcast only),
a 3-D constant MatMul weight in QDQ form, and a com.microsoft-only model's refusal naming no "opset 0".
Each built case: host C == golden bit for bit, golden within one quantum of onnxruntime."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from emitter.cli import main
from emitter.compiler import compile_model, golden_run
from emitter.errors import McugenError
from emitter.verify.run import diff_stats, load_inputs, ort_run
from tests.harness.bundles import build_library, emit, run_c
from tests.models.ops import quantize
from tests.models.wild import model, qlinear_matmul_u8_weights_255, qlinear_pool, scalars, vi
from tests.test_robustness import expect_error


def exact(path, tmp_path, name: str) -> None:
    c = compile_model(path, name=name)
    samples = load_inputs(c, None, 3, seed=1)
    gold = [golden_run(c, s) for s in samples]
    lib = build_library([emit(c, tmp_path / name)], tmp_path / f"lib{name}.so")
    for s, g in zip(samples, gold, strict=True):
        for h, want in zip(run_c(lib, c, s), g, strict=True):
            np.testing.assert_array_equal(h, want, err_msg="host C differs from the golden model")
    d, n, mx = diff_stats(gold, ort_run(c, path, samples))
    assert mx <= 1, f"golden vs onnxruntime: {d}/{n} elements differ, max {mx} quanta"


def residual_net(blocks: int) -> onnx.ModelProto:
    """Conv, then `blocks` residual Conv + Add, GlobalAveragePool, Flatten, Gemm (float)."""
    rng = np.random.default_rng(3)
    c = 4
    inits = [NH.from_array((rng.standard_normal((c, 3, 3, 3)) * 0.3).astype(np.float32), "w0")]
    nodes = [H.make_node("Conv", ["x", "w0"], ["a0"], pads=[1, 1, 1, 1], name="conv0")]
    prev = "a0"
    for k in range(1, blocks + 1):
        inits.append(NH.from_array((rng.standard_normal((c, c, 1, 1)) * 0.4).astype(np.float32), f"w{k}"))
        nodes += [H.make_node("Conv", [prev, f"w{k}"], [f"c{k}"], name=f"conv{k}"),
                  H.make_node("Add", [prev, f"c{k}"], [f"a{k}"], name=f"add{k}")]
        prev = f"a{k}"
    inits += [NH.from_array((rng.standard_normal((5, c)) * 0.5).astype(np.float32), "wf"),
              NH.from_array((rng.standard_normal(5) * 0.1).astype(np.float32), "bf")]
    nodes += [H.make_node("GlobalAveragePool", [prev], ["gap"], name="gap"),
              H.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
              H.make_node("Gemm", ["flat", "wf", "bf"], ["y"], transB=1, name="fc")]
    g = H.make_graph(nodes, "res", [vi("x", TP.FLOAT, [1, 3, 6, 6])], [vi("y", TP.FLOAT, [1, 5])], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_qoperator_flatten_after_qlinear_gap_takes_its_shape_from_the_ir(tmp_path):
    """Twelve com.microsoft QLinearAdds in a row outlast shape completion's rounds: the Flatten
    after QLinearGlobalAveragePool used to have no shape ("unknown after shape inference")."""
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.uniform(-1, 1, (1, 3, 6, 6)).astype(np.float32)} for _ in range(8)]
    path = quantize(residual_net(12), feeds, fmt="qop", out_path=tmp_path / "res_qop.onnx",
                    op_types=["Conv", "Add", "GlobalAveragePool", "Flatten", "Gemm"])
    m = onnx.load(path)
    ops = [n.op_type for n in m.graph.node]
    assert "QLinearGlobalAveragePool" in ops and "Flatten" in ops and ops.count("QLinearAdd") == 12
    del m.graph.value_info[:]  # as models from the wild come: no shapes beyond the graph's I/O
    onnx.save(m, path)
    exact(path, tmp_path, "resqop")


def test_summary_names_folded_weight_zero_points(tmp_path, capsys):
    path = tmp_path / "u8w.onnx"
    onnx.save(qlinear_matmul_u8_weights_255(), path)
    assert main([str(path), "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("weights:"))
    assert "asymmetric" in line and "qmm" in line and "CMSIS-NN has no such kernel" in line, line
    plain = tmp_path / "plain.onnx"
    onnx.save(model([H.make_node("QLinearMatMul", ["a", "a_s", "a_z", "w", "w_s", "w_z", "y_s", "y_z"], ["y"])],
                    [vi("a", TP.INT8, [2, 4])], [vi("y", TP.INT8, [2, 3])],
                    scalars(a_s=0.02, a_z=np.array(1, np.int8), w_s=0.01, w_z=np.array(0, np.int8), y_s=0.1,
                            y_z=np.array(0, np.int8)) + [NH.from_array(np.ones((4, 3), np.int8), "w")]), plain)
    assert main([str(plain), "-o", str(tmp_path / "out2")]) == 0
    assert "weights:" not in capsys.readouterr().out


def per_axis_model(op: str, zp_shape: tuple[int, ...]) -> onnx.ModelProto:
    """Per-output-channel weight scales with a zero point of `zp_shape`: DQ(w) -> Conv in QDQ form,
    or a QLinearConv."""
    rng = np.random.default_rng(5)
    w = rng.integers(-100, 101, (4, 3, 3, 3)).astype(np.int8)
    zp = np.zeros(zp_shape, np.int8)
    base = scalars(x_s=0.02, x_z=np.array(-5, np.int8), y_s=0.05, y_z=np.array(3, np.int8)) + [
        NH.from_array(w, "w"), NH.from_array(np.array([0.01, 0.02, 0.015, 0.03], np.float32), "w_s"),
        NH.from_array(zp, "w_z")]
    if op == "QLinearConv":
        nodes = [H.make_node("QLinearConv", ["x", "x_s", "x_z", "w", "w_s", "w_z", "y_s", "y_z"], ["y"],
                             pads=[1, 1, 1, 1], name="qconv")]
        return model(nodes, [vi("x", TP.INT8, [1, 3, 5, 5])], [vi("y", TP.INT8, [1, 4, 5, 5])], base)
    nodes = [H.make_node("DequantizeLinear", ["x", "x_s", "x_z"], ["xf"], name="dq_x"),
             H.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["wf"], axis=0, name="dq_w"),
             H.make_node("Conv", ["xf", "wf"], ["yf"], pads=[1, 1, 1, 1], name="conv"),
             H.make_node("QuantizeLinear", ["yf", "y_s", "y_z"], ["y"], name="q_y")]
    return model(nodes, [vi("x", TP.INT8, [1, 3, 5, 5])], [vi("y", TP.INT8, [1, 4, 5, 5])], base)


def test_scalar_zero_point_broadcasts_where_the_spec_allows_it(tmp_path):
    """QLinearConv: "w_zero_point ... could be a scalar or a 1-D tensor" independently of w_scale."""
    path = tmp_path / "qconv_scalar_zp.onnx"
    onnx.save(per_axis_model("QLinearConv", ()), path)
    exact(path, tmp_path, "qconvzp")


@pytest.mark.parametrize("zp_shape", [(), (1,)])
def test_scalar_zero_point_with_per_axis_scales_is_refused_by_name(zp_shape, tmp_path, capsys):
    """DequantizeLinear: x_zero_point must have x_scale's shape (onnxruntime fails on it too)."""
    expect_error(per_axis_model("DequantizeLinear", zp_shape), tmp_path, capsys, McugenError,
                 "zero point 'w_z'", "scale 'w_s' has shape [4]", "DequantizeLinear needs its zero point in the "
                 "scale's shape")


def matmul_3d(tmp_path, per_channel: bool):
    """QDQ MatMul of x [2, 3, 8] by a constant [2, 8, 5] weight, quantized by onnxruntime."""
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((2, 8, 5)) * 0.3).astype(np.float32)
    g = H.make_graph([H.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm3d",
                     [vi("x", TP.FLOAT, [2, 3, 8])], [vi("y", TP.FLOAT, [2, 3, 5])], [NH.from_array(w, "w")])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    feeds = [{"x": rng.uniform(-1, 1, (2, 3, 8)).astype(np.float32)} for _ in range(8)]
    path = quantize(m, feeds, per_channel=per_channel, out_path=tmp_path / f"mm3d_{per_channel}.onnx")
    assert any(len(i.dims) == 3 for i in onnx.load(path).graph.initializer)
    return path


def test_3d_constant_matmul_weight(tmp_path):
    """Per tensor: one fc per batch, exact."""
    exact(matmul_3d(tmp_path, False), tmp_path, "mm3d")


def test_3d_constant_matmul_weight_per_axis_k_is_refused_by_name(tmp_path, capsys):
    """onnxruntime's per_channel=True quantizes a [B, K, N] MatMul weight along K (axis 1)."""
    path = matmul_3d(tmp_path / "m", True)
    expect_error(path, tmp_path / "m", capsys, McugenError, "quantized per axis 1 (K",
                 "per_channel=False")


def test_com_microsoft_only_model_is_not_reported_as_opset_0(tmp_path, capsys):
    err = expect_error(qlinear_pool(1), tmp_path, capsys, McugenError, "channels_last=1",
                       "(QLinearAveragePool, opset 1)")
    assert "opset 0" not in err, err


def test_untyped_value_info_is_dropped_with_a_warning(tmp_path, capsys):
    """A value_info entry without a type fails onnx.checker but says nothing (issue 26 item 3d):
    compile_model drops it with a McugenWarning; the CLI prints it as one `mcugen: warning:` line
    and writes the bundle."""
    from emitter.errors import McugenWarning
    from tests.models.wild import untyped_value_info

    path = tmp_path / "untyped.onnx"
    onnx.save(untyped_value_info(), path)
    with pytest.warns(McugenWarning, match=r"2 value_info entries without a type \('g', 'xf'\) dropped"):
        compile_model(path, name="untyped")
    assert main([str(path), "-o", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert err.count("mcugen: warning: 2 value_info entries without a type") == 1, err
    assert (tmp_path / "out" / "model.c").exists() or any((tmp_path / "out").iterdir())


def test_uint16_io_is_int16_at_the_c_api(tmp_path):
    """uint16 graph input/output with zero point 32768 (issue 26 item 3c): int16 tensors with zero
    point 0 in the IR; the header says the caller passes value - 32768; --inputs takes the uint16
    data; host C == golden == onnxruntime (converted at the edge) on values across the range."""
    from emitter.verify.run import load_inputs, signed_output
    from tests.models.wild import uint16_direct

    path = tmp_path / "u16.onnx"
    onnx.save(uint16_direct(), path)
    c = compile_model(path, name="u16")
    for name in c.graph.inputs + c.graph.outputs:
        t = c.graph.t(name)
        assert t.dtype == "int16" and t.quant is not None and t.quant.zp == 0, (name, t)
    out = emit(c, tmp_path / "b")
    header = " ".join(ln.strip().lstrip("*").strip() for ln in next(out.glob("u16.h")).read_text().splitlines())
    assert header.count("uint16 in ONNX (zero point 32768), here int16 with zero point 0") == 2, header
    raw = np.array([[0, 1, 32767, 32768, 32769, 40000, 65534, 65535]], np.uint16)
    np.savez(tmp_path / "in.npz", x=raw[None])
    samples = load_inputs(c, tmp_path / "in.npz", 1)
    np.testing.assert_array_equal(samples[0][0], (raw.astype(np.int32) - 32768).astype(np.int16))
    lib = build_library([out], tmp_path / "libu16.so")
    gold = golden_run(c, samples[0])
    np.testing.assert_array_equal(run_c(lib, c, samples[0])[0], gold[0])
    import onnxruntime as ort

    want = ort.InferenceSession(str(path)).run(None, {"x": raw})[0]
    assert want.dtype == np.uint16
    assert np.abs(signed_output(want).astype(np.int32) - gold[0].astype(np.int32)).max() <= 1
    assert ort_run(c, path, samples)[0][0].dtype == np.int16
