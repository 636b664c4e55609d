"""`mcugen quantize --weights int8|int4|auto` (emitter/commands/quantize.py): int4 per-channel weights
through onnxruntime on an opset-21 model, the per-layer top-1 search of `auto`, and its errors."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from emitter.cli import main

FEATURES, CLASSES = 16, 4


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def conv_model(path: Path) -> Path:
    """Conv 3x3 -> Relu -> depthwise 3x3 -> Relu -> Flatten -> Gemm: every weight kind."""
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
        ("w1", rng.normal(0, 0.5, (4, 1, 3, 3))), ("b1", rng.normal(0, 0.1, 4)),
        ("w2", rng.normal(0, 0.5, (4, 1, 3, 3))), ("b2", rng.normal(0, 0.1, 4)),
        ("w3", rng.normal(0, 0.3, (CLASSES, 4 * 6 * 6))), ("b3", np.zeros(CLASSES))]]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="dwconv", group=4,
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Flatten", ["r2"], ["f"]),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc", transB=1)]
    g = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, CLASSES])], inits)
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def sensitive_model(path: Path) -> Path:
    """Gemm `robust` (the identity: int4 holds it exactly) -> Gemm `sensitive`, whose rows are one
    large weight on an input that is always 0 plus small weights that decide the class: int4's
    step (max/7) rounds the small ones to 0, int8's (max/127) keeps them."""
    rng = np.random.default_rng(2)
    small = rng.choice([-0.05, 0.05], (CLASSES, FEATURES))
    small[:, -1] = 1.0  # the large weight, on input FEATURES-1 (always 0)
    inits = [numpy_helper.from_array(np.eye(FEATURES, dtype=np.float32), "w_robust"),
             numpy_helper.from_array(np.zeros(FEATURES, np.float32), "b_robust"),
             numpy_helper.from_array(small.astype(np.float32), "w_sensitive"),
             numpy_helper.from_array(np.zeros(CLASSES, np.float32), "b_sensitive")]
    nodes = [helper.make_node("Gemm", ["x", "w_robust", "b_robust"], ["h"], name="robust"),
             helper.make_node("Gemm", ["h", "w_sensitive", "b_sensitive"], ["y"], name="sensitive",
                              transB=1)]
    g = helper.make_graph(nodes, "sens", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, FEATURES])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, CLASSES])], inits)
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def sensitive_data(tmp: Path, model: Path) -> tuple[Path, Path]:
    """40 inputs (last feature 0) as calibration, and the same labelled by the float model."""
    import onnxruntime as ort

    x = np.random.default_rng(3).normal(0, 1, (40, 1, FEATURES)).astype(np.float32)
    x[..., -1] = 0.0
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    labels = np.array([int(np.argmax(sess.run(None, {"x": s})[0])) for s in x], np.int64)
    np.savez(tmp / "calib.npz", x=x)
    np.savez(tmp / "labelled.npz", x=x, labels=labels)
    return tmp / "calib.npz", tmp / "labelled.npz"


def weight_dq(path: Path) -> dict[str, int]:
    """Weight initializer feeding a DequantizeLinear -> its ONNX element type."""
    m = onnx.load(str(path))
    inits = {i.name: i for i in m.graph.initializer}
    return {n.input[0].removesuffix("_quantized"): inits[n.input[0]].data_type for n in m.graph.node
            if n.op_type == "DequantizeLinear" and n.input[0] in inits and inits[n.input[0]].dims
            and len(inits[n.input[0]].dims) >= 2}


def test_int4_every_weight(tmp_path, capsys):
    model = conv_model(tmp_path / "conv.onnx")
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(4).normal(0, 1, (8, 1, 6, 6)).astype(np.float32))
    out = tmp_path / "int4.onnx"
    status = main(["quantize", str(model), "--calibration", str(tmp_path / "calib.npz"), "-o", str(out),
                   "--weights", "int4"])
    text = capsys.readouterr().out
    assert status == 0, text
    m = onnx.load(str(out))
    assert max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) == 21
    assert weight_dq(out) == {"w1": TensorProto.INT4, "w2": TensorProto.INT4, "w3": TensorProto.INT4}
    inits = {i.name: i for i in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in ("w1_quantized", "w2_quantized", "w3_quantized"):
            assert inits[n.input[1]].dims[0] > 1, "per-channel scales"
            assert not numpy_helper.to_array(inits[n.input[2]]).any(), "symmetric"
        if n.op_type == "DequantizeLinear" and n.input[0] in ("b1_quantized", "b2_quantized", "b3_quantized"):
            assert inits[n.input[0]].data_type == TensorProto.INT32
        if n.op_type == "QuantizeLinear":
            assert inits[n.input[2]].data_type == TensorProto.INT8, "activations stay int8"
    assert "per-channel weights int4 in 3 of 3 layers (conv, dwconv, fc)" in text
    assert "mcugen compiles it for cortex-m7" in text


def test_int8_unchanged(tmp_path, capsys):
    model = conv_model(tmp_path / "conv.onnx")
    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(4).normal(0, 1, (8, 1, 6, 6)).astype(np.float32))
    base = ["quantize", str(model), "--calibration", str(tmp_path / "calib.npz"), "-o"]
    assert main([*base, str(tmp_path / "a.onnx")]) == 0
    assert main([*base, str(tmp_path / "b.onnx"), "--weights", "int8"]) == 0
    capsys.readouterr()
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    assert set(weight_dq(tmp_path / "a.onnx").values()) == {TensorProto.INT8}


def auto_rows(text: str) -> dict[str, tuple[int, int, int]]:
    """layer -> (int8 bytes, int4 bytes, chosen bits) from the per-layer table."""
    return {m.group(1): (int(m.group(2).replace(",", "")), int(m.group(3).replace(",", "")), int(m.group(4)))
            for m in re.finditer(r"^  (\w+)\s+Gemm\s+([\d,]+) -> +([\d,]+) .* (4|8)$", text, re.MULTILINE)}


def totals(text: str) -> dict[str, float]:
    m = re.search(r"top-1 int8 ([\d.]+)% / int4 ([\d.]+)% / auto ([\d.]+)%", text)
    assert m, text
    return {"int8": float(m.group(1)), "int4": float(m.group(2)), "auto": float(m.group(3))}


def test_auto_keeps_the_sensitive_layer_int8(tmp_path, capsys):
    model = sensitive_model(tmp_path / "sens.onnx")
    calib, labelled = sensitive_data(tmp_path, model)
    out = tmp_path / "auto.onnx"
    status = main(["quantize", str(model), "--calibration", str(calib), "-o", str(out), "--weights", "auto",
                   "--labels", str(labelled), "--no-qemu"])
    text = capsys.readouterr().out
    assert status == 0, text
    rows = auto_rows(text)
    assert rows == {"robust": (256, 128, 4), "sensitive": (64, 32, 8)}, text
    top = totals(text)
    assert top["int8"] >= 95.0 and top["int4"] < top["int8"] - 20.0, text  # the layer is clearly sensitive
    assert top["auto"] >= top["int8"] - 1.0
    assert "auto saves 128 B, 1 of 2 layers int4" in text
    assert weight_dq(out) == {"w_robust": TensorProto.INT4, "w_sensitive": TensorProto.INT8}


def test_auto_budget_and_float_agreement(tmp_path, capsys):
    """A budget of 100 points takes every layer int4; without --labels top-1 is agreement with the
    float model on the calibration data; the same run twice writes the same bytes."""
    model = sensitive_model(tmp_path / "sens.onnx")
    calib, _ = sensitive_data(tmp_path, model)
    outs = [tmp_path / "a.onnx", tmp_path / "b.onnx"]
    for out in outs:
        status = main(["quantize", str(model), "--calibration", str(calib), "-o", str(out), "--weights", "auto",
                       "--accuracy-budget", "100"])
        text = capsys.readouterr().out
        assert status == 0, text
    assert "agreement with the float model on 40 calibration samples" in text
    assert {k: v[2] for k, v in auto_rows(text).items()} == {"robust": 4, "sensitive": 4}
    assert outs[0].read_bytes() == outs[1].read_bytes()
    assert set(weight_dq(outs[0]).values()) == {TensorProto.INT4}


@pytest.mark.parametrize("case", ["bad_weights", "budget_without_auto", "negative_budget", "no_weights"])
def test_weights_errors(case, tmp_path, capsys):
    out = tmp_path / "out.onnx"
    model = sensitive_model(tmp_path / "sens.onnx")
    np.savez(tmp_path / "calib.npz", x=np.zeros((2, 1, FEATURES), np.float32))
    extra = {"bad_weights": ["--weights", "int2"],
             "budget_without_auto": ["--weights", "int4", "--accuracy-budget", "2"],
             "negative_budget": ["--weights", "auto", "--accuracy-budget", "-1"],
             "no_weights": ["--weights", "int4"]}[case]
    if case == "no_weights":
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, FEATURES])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, FEATURES])])
        model = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "relu.onnx")
    status = main(["quantize", str(model), "--calibration", str(tmp_path / "calib.npz"), "-o", str(out), *extra])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("mcugen: error: ") and "Traceback" not in err
    expect = {"bad_weights": "--weights 'int2' is not one of int8, int4, auto",
              "budget_without_auto": "--accuracy-budget applies to --weights auto only",
              "negative_budget": "must be a number of top-1 points >= 0",
              "no_weights": "no Conv, ConvTranspose, Gemm or MatMul weight"}[case]
    assert expect in err, err
    assert not out.exists()
