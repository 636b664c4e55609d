"""The smallest model onnxruntime's optimized graph gets wrong on x86-64 without AVX-512 VNNI.

    python tests/ort_u8s8_repro.py [OUT.onnx]       # writes the model (default: a temporary file), runs it

One QDQ Conv, 1x1 kernel, two input channels, everything int8 per the ONNX spec and TFLite's:

    x (float [1,2,1,1]) -> QuantizeLinear(scale 1, zp 0) -> DequantizeLinear
    w = [127, 127] (int8, scale 1) -> DequantizeLinear
    Conv -> QuantizeLinear(scale 256, zp 0) -> DequantizeLinear -> y

For x = [127, 127] the QDQ reference is y_q = round(127 * 127 * 2 / 256) = 126 (y = 126 * 256). A default session (graph
optimizations on) runs QDQS8ToU8Transformer (int8 activations -> uint8, zero point + 128) and
QDQSelectorActionTransformer (the QDQ group -> QLinearConv); on a CPU without VNNI, MLAS' u8s8
kernel adds each pair of uint8 x int8 products in a saturating 16-bit lane (VPMADDUBSW):
255 * 127 + 255 * 127 = 64770 -> 32767, minus the zero-point term 128 * 254 -> 255, so y_q = 1.
With VNNI (VPDPBUSD, 32-bit sums) or session.x64quantprecision=1 (u8u8) it is 126. The second
input, x = [-100, -100] (uint8 28), stays clear of saturation: y_q = -99 in every session.
docs/onnxruntime_optimized_graph.md tells the whole story.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

# the inputs, and what the QDQ reference gives for them: the second pair stays far from saturation
INPUTS = np.array([[127.0, 127.0], [-100.0, -100.0]], np.float32).reshape(2, 1, 2, 1, 1)
REFERENCE = np.array([126, -99], np.float32) * 256  # round(127*127*2/256), round(-100*127*2/256)
SATURATED = np.array([1, -99], np.float32) * 256    # (32767 - 128*254) / 256 = 0.996 -> 1
X64_PRECISION = {"session.x64quantprecision": "1"}


def build(path: Path) -> Path:
    """Write the reproducer model to `path` (opset 13, QDQ format as `quantize_static` writes it)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def const(name: str, value: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(value, name)

    inits = [const("x_scale", np.array(1.0, np.float32)), const("x_zp", np.array(0, np.int8)),
             const("w_q", np.full((1, 2, 1, 1), 127, np.int8)),
             const("w_scale", np.array([1.0], np.float32)), const("w_zp", np.array([0], np.int8)),
             const("y_scale", np.array(256.0, np.float32)), const("y_zp", np.array(0, np.int8))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["x_q"], name="x_Q"),
             helper.make_node("DequantizeLinear", ["x_q", "x_scale", "x_zp"], ["x_dq"], name="x_DQ"),
             helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w_dq"], name="w_DQ", axis=0),
             helper.make_node("Conv", ["x_dq", "w_dq"], ["conv"], name="conv"),
             helper.make_node("QuantizeLinear", ["conv", "y_scale", "y_zp"], ["y_q"], name="y_Q"),
             helper.make_node("DequantizeLinear", ["y_q", "y_scale", "y_zp"], ["y"], name="y_DQ")]
    graph = helper.make_graph(nodes, "ort_u8s8_repro",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 1, 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mcugen-tests")
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def run(path: Path, optimize: bool, config: dict[str, str] | None = None) -> np.ndarray:
    """y for each of INPUTS: graph optimizations all on (a default session) or all off."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    for key, value in (config or {}).items():
        so.add_session_config_entry(key, value)
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return np.array([float(sess.run(None, {"x": x})[0].ravel()[0]) for x in INPUTS], np.float32)


def main(argv: list[str]) -> int:
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        path = build(Path(argv[0]) if argv else Path(tmp) / "ort_u8s8_repro.onnx")
        ref, opt = run(path, optimize=False), run(path, optimize=True)
        fixed = run(path, optimize=True, config=X64_PRECISION)
        print(f"onnxruntime {ort.__version__}; inputs {INPUTS.reshape(2, 2).tolist()}")
        print(f"  QDQ reference (ORT_DISABLE_ALL)            {ref.tolist()}")
        print(f"  default session (ORT_ENABLE_ALL)           {opt.tolist()}")
        print(f"  ORT_ENABLE_ALL + session.x64quantprecision {fixed.tolist()}")
        same = np.array_equal(opt, ref)
        print("the optimized graph agrees with the reference (this CPU's integer kernels do not saturate)"
              if same else "the optimized graph DIFFERS from the reference: u8s8 16-bit saturation")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
