"""`mcugen quantize --weights int8|int4|auto` (emitter/commands/quantize.py): int4 per-channel weights
through onnxruntime's TensorQuantOverrides, and the per-layer search of --weights auto."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from emitter.cli import main

N = 200  # samples of the tiny models' data


def weight_dtypes(path: Path) -> dict[str, int]:
    """Weight initializer -> ONNX element type, for every DequantizeLinear feeding a Conv/Gemm weight."""
    m = onnx.load(path)
    inits = {i.name: i for i in m.graph.initializer}
    producer = {o: n for n in m.graph.node for o in n.output}
    out = {}
    for n in m.graph.node:
        if n.op_type not in ("Conv", "Gemm", "MatMul", "ConvTranspose"):
            continue
        dq = producer.get(n.input[1])
        assert dq is not None and dq.op_type == "DequantizeLinear", f"{n.name}: weight not from a DQ"
        out[n.name] = inits[dq.input[0]].data_type
    return out


def opset(path: Path) -> int:
    return next(o.version for o in onnx.load(path).opset_import if o.domain in ("", "ai.onnx"))


@pytest.fixture(scope="module")
def conv_model(tmp_path_factory) -> tuple[Path, Path]:
    """Conv -> Relu -> depthwise Conv -> Relu -> Flatten -> Gemm (opset 13), and its data."""
    rng = np.random.default_rng(1)
    d = tmp_path_factory.mktemp("conv")
    x = H.make_tensor_value_info("x", TP.FLOAT, [1, 2, 6, 6])
    y = H.make_tensor_value_info("y", TP.FLOAT, [1, 5])
    inits = [NH.from_array(rng.normal(0, 0.5, (4, 2, 3, 3)).astype(np.float32), "w1"),
             NH.from_array(rng.normal(0, 0.1, 4).astype(np.float32), "b1"),
             NH.from_array(rng.normal(0, 0.5, (4, 1, 3, 3)).astype(np.float32), "w2"),
             NH.from_array(rng.normal(0, 0.5, (5, 64)).astype(np.float32), "w3"),
             NH.from_array(rng.normal(0, 0.1, 5).astype(np.float32), "b3")]
    nodes = [H.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
             H.make_node("Relu", ["c1"], ["r1"]),
             H.make_node("Conv", ["r1", "w2"], ["c2"], name="depthwise", group=4),
             H.make_node("Relu", ["c2"], ["r2"]),
             H.make_node("Flatten", ["r2"], ["f"]),
             H.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc", transB=1)]
    m = H.make_model(H.make_graph(nodes, "conv", [x], [y], inits),
                     opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, d / "conv.onnx")
    np.savez(d / "data.npz", x=rng.uniform(0, 1, (16, 1, 2, 6, 6)).astype(np.float32))
    return d / "conv.onnx", d / "data.npz"


@pytest.fixture(scope="module")
def sensitive_mlp(tmp_path_factory) -> tuple[Path, Path]:
    """x[16] -> Gemm 'sensitive' [16x16] -> Gemm 'robust' [16x4].

    'sensitive' has a weight of 20 in every output channel on input 0, which the data holds at 0:
    per-channel int4 (a step of 20 / 7.5) rounds most other weights (normal, sigma 1) to 0 and the
    prediction collapses; int8 (a step of 20 / 127.5) keeps them. 'robust' holds -1, 0 and 1 only,
    which every channel's scale represents alike, so int4 costs it (almost) nothing."""
    rng = np.random.default_rng(2)
    d = tmp_path_factory.mktemp("mlp")
    w1 = rng.normal(0, 1, (16, 16)).astype(np.float32)
    w1[0, :] = 20.0
    w2 = rng.integers(-1, 2, (16, 4)).astype(np.float32)
    w2[0, :] = 1.0  # every channel's absmax is 1
    x = H.make_tensor_value_info("x", TP.FLOAT, [1, 16])
    y = H.make_tensor_value_info("y", TP.FLOAT, [1, 4])
    nodes = [H.make_node("Gemm", ["x", "w1"], ["h"], name="sensitive"),
             H.make_node("Gemm", ["h", "w2"], ["y"], name="robust")]
    m = H.make_model(H.make_graph(nodes, "mlp", [x], [y],
                                  [NH.from_array(w1, "w1"), NH.from_array(w2, "w2")]),
                     opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, d / "mlp.onnx")
    data = rng.uniform(-1, 1, (N, 1, 16)).astype(np.float32)
    data[:, :, 0] = 0.0
    np.savez(d / "data.npz", x=data)
    return d / "mlp.onnx", d / "data.npz"


def quantize(model: Path, data: Path, out: Path, *extra: str) -> int:
    return main(["quantize", str(model), "--calibration", str(data), "-o", str(out), *extra])


def test_int4_every_weight(conv_model, tmp_path, capsys):
    model, data = conv_model
    out = tmp_path / "int4.onnx"
    assert quantize(model, data, out, "--weights", "int4") == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert weight_dtypes(out) == {"conv": TP.INT4, "depthwise": TP.INT4, "fc": TP.INT4}
    assert opset(out) == 21
    m = onnx.load(out)
    protos = {i.name: i for i in m.graph.initializer}
    int4 = [n for n in m.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in protos
            and protos[n.input[0]].data_type == TP.INT4]
    assert len(int4) == 3 and all(int(np.prod(protos[n.input[1]].dims)) > 1 for n in int4)  # per-channel
    assert all(protos[n.input[2]].data_type == TP.INT8  # int8 activations
               for n in m.graph.node if n.op_type == "QuantizeLinear")
    biases = [n.input[0] for n in m.graph.node if n.op_type == "DequantizeLinear"
              and n.input[0] in protos and protos[n.input[0]].data_type == TP.INT32]
    assert len(biases) == 2  # b1, b3 int32
    assert "int4 in 3 of 3 layers" in text
    assert "mcugen compiles it for cortex-m7" in text


def test_int8_default_unchanged(conv_model, tmp_path, capsys):
    model, data = conv_model
    assert quantize(model, data, tmp_path / "default.onnx") == 0
    assert quantize(model, data, tmp_path / "int8.onnx", "--weights", "int8") == 0
    capsys.readouterr()
    assert (tmp_path / "default.onnx").read_bytes() == (tmp_path / "int8.onnx").read_bytes()
    assert weight_dtypes(tmp_path / "int8.onnx") == {"conv": TP.INT8, "depthwise": TP.INT8, "fc": TP.INT8}
    assert opset(tmp_path / "int8.onnx") == 13


def table_rows(text: str) -> dict[str, tuple[int, int, int]]:
    """Layer -> (int8 bytes, int4 bytes, chosen bits) from the per-layer table."""
    return {m.group(1): (int(m.group(2).replace(",", "")), int(m.group(3).replace(",", "")),
                         int(m.group(4)))
            for m in re.finditer(r"^  (\S+)\s+\S+\s+([\d,]+) ->\s+([\d,]+)\s+\S+p\s+\S+%\s+(\d)$",
                                 text, re.MULTILINE)}


def totals(text: str) -> tuple[float, float, float]:
    m = re.search(r"top-1 int8 ([\d.]+)% / int4 ([\d.]+)% / auto ([\d.]+)%", text)
    assert m, text
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


def test_auto_keeps_the_sensitive_layer_int8(sensitive_mlp, tmp_path, capsys):
    model, data = sensitive_mlp
    out = tmp_path / "auto.onnx"
    assert quantize(model, data, out, "--weights", "auto") == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert table_rows(text) == {"sensitive": (256, 128, 8), "robust": (64, 32, 4)}, text
    int8, int4, auto = totals(text)
    assert int4 < int8 - 20, "the constructed layer is not sensitive"
    assert auto >= int8 - 1.0
    assert "auto saves 32 B" in text
    assert weight_dtypes(out) == {"sensitive": TP.INT8, "robust": TP.INT4}
    # deterministic: the same table and the same bytes again
    assert quantize(model, data, tmp_path / "again.onnx", "--weights", "auto") == 0
    again = capsys.readouterr().out
    assert again.split("wrote ")[0] == text.split("wrote ")[0]
    assert (tmp_path / "again.onnx").read_bytes() == out.read_bytes()
    # a budget wide enough for the collapse takes both
    assert quantize(model, data, tmp_path / "wide.onnx", "--weights", "auto",
                    "--accuracy-budget", "100") == 0
    text = capsys.readouterr().out
    assert table_rows(text) == {"sensitive": (256, 128, 4), "robust": (64, 32, 4)}, text
    assert weight_dtypes(tmp_path / "wide.onnx") == {"sensitive": TP.INT4, "robust": TP.INT4}


def test_auto_with_labels(sensitive_mlp, tmp_path, capsys):
    """With --labels, top-1 is against the labels (here: the float model's answer to half the data)."""
    import onnxruntime as ort

    model, data = sensitive_mlp
    x = np.load(data)["x"][: N // 2]
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    labels = np.array([int(np.argmax(sess.run(None, {"x": s})[0])) for s in x], np.int64)
    np.savez(tmp_path / "labelled.npz", x=x, labels=labels)
    assert quantize(model, data, tmp_path / "auto.onnx", "--weights", "auto",
                    "--labels", str(tmp_path / "labelled.npz"), "--no-qemu") == 0
    text = capsys.readouterr().out
    assert f"on {N // 2} labelled samples of labelled.npz" in text
    assert table_rows(text)["sensitive"][2] == 8
    assert "quantized model (onnxruntime)" in text


@pytest.mark.parametrize("case", ["bad_value", "budget_without_auto", "negative_budget", "no_weights",
                                  "opset"])
def test_weights_errors(case, conv_model, tmp_path, capsys, monkeypatch):
    model, data = conv_model
    args = {"bad_value": ["--weights", "int2"],
            "budget_without_auto": ["--weights", "int4", "--accuracy-budget", "2"],
            "negative_budget": ["--weights", "auto", "--accuracy-budget", "-1"],
            "no_weights": ["--weights", "int4"],
            "opset": ["--weights", "auto"]}[case]
    expect = {"bad_value": "--weights 'int2' is not one of int8, int4, auto",
              "budget_without_auto": "--accuracy-budget applies to --weights auto only",
              "negative_budget": "must be a number of top-1 points >= 0",
              "no_weights": "has no Conv, ConvTranspose, Gemm or MatMul weight",
              "opset": "onnx cannot raise this model from opset 13"}[case]
    if case == "no_weights":
        x = H.make_tensor_value_info("x", TP.FLOAT, [1, 4])
        y = H.make_tensor_value_info("y", TP.FLOAT, [1, 4])
        m = H.make_model(H.make_graph([H.make_node("Relu", ["x"], ["y"])], "relu", [x], [y]),
                         opset_imports=[H.make_opsetid("", 13)])
        m.ir_version = 8
        model = tmp_path / "relu.onnx"
        onnx.save(m, model)
        data = tmp_path / "relu.npz"
        np.savez(data, x=np.ones((2, 1, 4), np.float32))
    if case == "opset":
        from onnx import version_converter

        def refuse(model: onnx.ModelProto, version: int) -> onnx.ModelProto:
            raise RuntimeError("No Adapter For Scatter")

        monkeypatch.setattr(version_converter, "convert_version", refuse)
    out = tmp_path / "out.onnx"
    assert quantize(model, data, out, *args) == 2
    err = capsys.readouterr().err
    assert expect in err, err
    assert not out.exists()
