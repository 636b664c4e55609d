"""`mcugen quantize` (emitter/commands/quantize.py, options in emitter/cli.py): float model + calibration .npz -> the
QDQ int8 model mcugen runs best, compile check, and the top-1 accuracy table."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from emitter.cli import main
from emitter.compiler import compile_model
from emitter.target import missing_tools
from tests.models.zoo.catalog import CATALOG

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FP32 = EXAMPLES / "digits_cnn_fp32.onnx"
HELDOUT = EXAMPLES / "digits_heldout.npz"


@pytest.fixture(scope="module")
def calib(tmp_path_factory) -> Path:
    """The first 64 held-out digits as calibration data (key `images`)."""
    path = tmp_path_factory.mktemp("calib") / "calib.npz"
    np.savez(path, images=np.load(HELDOUT)["images"][:64])
    return path


def accuracies(text: str) -> dict[str, float]:
    return {m.group(1).strip(): float(m.group(2))
            for m in re.finditer(r"^  (\S.*?)\s+(\d+\.\d+)%$", text, re.MULTILINE)}


def check_int8_model(path: Path) -> None:
    """QDQ, symmetric per-channel int8 conv weights, int8 activations."""
    m = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    dq_weights = [n for n in m.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in inits
                  and inits[n.input[0]].dtype == np.int8]
    assert dq_weights, "no int8 weights"
    assert all(not inits[n.input[2]].any() for n in dq_weights), "weights not symmetric"
    assert any(inits[n.input[1]].size > 1 for n in dq_weights), "weights not per-channel"
    q_acts = [n for n in m.graph.node if n.op_type == "QuantizeLinear"]
    assert q_acts and all(inits[n.input[2]].dtype == np.int8 for n in q_acts)
    assert not any(n.domain == "com.microsoft" for n in m.graph.node), "not QDQ form"


def test_quantize_digits_host(tmp_path, calib, capsys):
    out = tmp_path / "digits_int8.onnx"
    status = main(["quantize", str(FP32), "--calibration", str(calib), "-o", str(out),
                            "--labels", str(HELDOUT), "--no-qemu"])
    text = capsys.readouterr().out
    assert status == 0, text
    check_int8_model(out)
    compile_model(out, name="digits")
    assert "mcugen compiles it for cortex-m7" in text
    assert "host gcc vs golden                 bit-exact" in text
    acc = accuracies(text)
    assert set(acc) == {"float model (onnxruntime)", "int8 model (onnxruntime)",
                        "int8 mcugen golden model", "int8 generated C, host gcc"}, text
    assert acc["float model (onnxruntime)"] > 95.0
    assert acc["int8 generated C, host gcc"] == acc["int8 mcugen golden model"]
    assert acc["int8 generated C, host gcc"] > 95.0
    assert "top-1 accuracy on 359 labelled samples (digits_heldout.npz)" in text


@pytest.mark.qemu
def test_quantize_digits_qemu(tmp_path, calib, capsys):
    missing = missing_tools()
    if missing:
        pytest.skip("missing tools: " + "; ".join(missing))
    out = tmp_path / "digits_int8.onnx"
    status = main(["quantize", str(FP32), "--calibration", str(calib), "-o", str(out),
                            "--labels", str(HELDOUT), "--board", "cortex-m7"])
    text = capsys.readouterr().out
    assert status == 0, text
    assert "QEMU cortex-m7 vs golden           bit-exact" in text
    acc = accuracies(text)
    assert acc["int8 generated C, QEMU cortex-m7"] == acc["int8 generated C, host gcc"]
    assert acc["int8 generated C, QEMU cortex-m7"] > 95.0


@pytest.mark.parametrize("spec", CATALOG, ids=lambda m: m.name)
def test_quantize_zoo_model(spec, tmp_path, capsys):
    """Every float model of the zoo, as torch exported it (Constant nodes, shape subgraphs),
    quantizes into a QDQ model mcugen compiles; calibration keyed by the input name; without
    --labels no accuracy table."""
    data = tmp_path / "calib.npz"
    np.savez(data, **{spec.input_name: np.stack([f[spec.input_name] for f in spec.calib_feeds()])})
    out = tmp_path / f"{spec.name}_int8.onnx"
    status = main(["quantize", str(spec.path), "--calibration", str(data), "-o", str(out)])
    text = capsys.readouterr().out
    assert status == 0, text
    assert "mcugen compiles it" in text and "top-1 accuracy" not in text
    m = onnx.load(out)
    assert not any(n.op_type == "Constant" for n in m.graph.node)
    assert not any(n.domain == "com.microsoft" for n in m.graph.node)
    compile_model(out, name="z")


@pytest.mark.parametrize("case", ["no_model", "no_calib", "bad_key", "bad_shape", "quantized",
                                  "no_labels_key"])
def test_quantize_usage_errors(case, tmp_path, calib, capsys):
    out = tmp_path / "out.onnx"
    model, data, extra = str(FP32), str(calib), []
    if case == "no_model":
        model = str(tmp_path / "missing.onnx")
    elif case == "no_calib":
        data = str(tmp_path / "missing.npz")
    elif case == "bad_key":
        np.savez(tmp_path / "d.npz", pictures=np.zeros((4, 1, 8, 8), np.float32))
        data = str(tmp_path / "d.npz")
    elif case == "bad_shape":
        np.savez(tmp_path / "d.npz", images=np.zeros((4, 7), np.float32))
        data = str(tmp_path / "d.npz")
    elif case == "quantized":
        model = str(EXAMPLES / "digits_cnn_int8.onnx")
    elif case == "no_labels_key":
        extra = ["--labels", str(calib)]
    status = main(["quantize", model, "--calibration", data, "-o", str(out), *extra])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("mcugen: error: ") and "Traceback" not in err
    expect = {"no_model": "does not exist", "no_calib": "does not exist",
              "bad_key": "no array for input 'input'", "bad_shape": "whole samples",
              "quantized": "already quantized", "no_labels_key": "no array 'labels'"}[case]
    assert expect in err, err
    assert not out.exists(), "nothing is written on a usage error"
