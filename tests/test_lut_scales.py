"""Extreme quantization scales on every 256-entry table op (issue 30): exit 0 or 2, never a traceback.

One QDQ graph per (op, where, scale): x -> Q -> DQ -> op -> Q -> DQ -> y, the extreme scale on the
op's input or output Q/DQ pair, the other at 1/32. `mcugen` runs in process on each (emit into a
temporary folder). A scale that is not a normal positive float32 (zero, subnormal, inf, NaN) is
refused by name (exit 2, the message naming the tensor and node); any other scale compiles: a
table entry beyond the int8 range saturates. A case that used to crash (found by tests/test_fuzz.py):
Sigmoid with an output scale of 1e-30, an OverflowError in emitter/ops/lut.py table().
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from emitter.cli import main
from emitter.ops.lut import FUNCTIONS, table

SUBNORMAL = float(np.finfo(np.float32).smallest_subnormal) * 1000  # 1.4e-42
SCALES = {"1e-30": 1e-30, "1e30": 1e30, "subnormal": SUBNORMAL, "zero": 0.0, "inf": float("inf"),
          "nan": float("nan"), "min-normal": float(np.finfo(np.float32).tiny),
          "max": float(np.finfo(np.float32).max)}
REFUSED = {"subnormal", "zero", "inf", "nan"}


def lut_model(op: str, s_in: float, s_out: float) -> onnx.ModelProto:
    def q(name: str, s: float) -> list[onnx.TensorProto]:
        return [numpy_helper.from_array(np.array(s, np.float32), f"{name}_s"),
                numpy_helper.from_array(np.array(3, np.int8), f"{name}_zp")]

    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_zp"], ["xq"], name="x_Q"),
             helper.make_node("DequantizeLinear", ["xq", "x_s", "x_zp"], ["xd"], name="x_DQ"),
             helper.make_node(op, ["xd", "e"] if op == "Pow" else ["xd"], ["f"], name=f"the_{op}"),
             helper.make_node("QuantizeLinear", ["f", "y_s", "y_zp"], ["yq"], name="y_Q"),
             helper.make_node("DequantizeLinear", ["yq", "y_s", "y_zp"], ["y"], name="y_DQ")]
    g = helper.make_graph(nodes, "lut", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                          q("x", s_in) + q("y", s_out)
                          + ([numpy_helper.from_array(np.array(2.0, np.float32), "e")] if op == "Pow" else []))
    opset = {"HardSwish": 14, "Mish": 18, "Gelu": 20}.get(op, 13)  # where each entered the default domain
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


@pytest.mark.parametrize("where", ["input", "output"])
@pytest.mark.parametrize("scale", sorted(SCALES))
def test_extreme_scale_on_every_table_op(where: str, scale: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    s = SCALES[scale]
    for op in FUNCTIONS:
        path = tmp_path / f"{op}.onnx"
        onnx.save(lut_model(op, s if where == "input" else 1 / 32, s if where == "output" else 1 / 32), path)
        status = main([str(path), "--board=cortex-m4", "-o", str(tmp_path / op), "--quiet"])
        err = capsys.readouterr().err
        assert "Traceback" not in err, (op, err)
        if scale in REFUSED:
            named = "tensor 'xq' (node 'x_Q')" if where == "input" else "tensor 'yq' (node 'y_Q')"
            assert status == 2 and "normal float32" in err and named in err, (op, status, err)
        else:
            assert status == 0, (op, status, err)


def test_table_saturates_before_integer_conversion() -> None:
    """The fuzz-found case: a Sigmoid output scale of 1e-30 gives entries of ~1e30, saturated."""
    fn = FUNCTIONS["Sigmoid"][1]({})
    t = table(fn, 1 / 32, 0, 1e-30, 0)
    assert t.dtype == np.int8 and t.min() == 127 == t.max()
    t = table(FUNCTIONS["Neg"][1]({}), 1e30, 0, 1 / 32, -5)
    assert t[0] == 127 and t[128] == -5 and t[255] == -128  # codes -128, 0, 127
