"""emitter/lower/graph_io.py: which IR tensor stands for each graph input/output, and its Boundary."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper as H

from emitter.errors import QuantError, UnsupportedError
from emitter.lower import lower
from tests.passes.graphs import dq, init, load, model, q, scale_zp


def int8_relu_model(dtype: str, zp: int) -> object:
    """int8/uint8 x -> DQ -> Relu -> Q -> int8/uint8 y (no float at the boundary)."""
    np_t = np.int8 if dtype == "int8" else np.uint8
    nodes = [dq("x", "s", "z", "xf"), H.make_node("Relu", ["xf"], ["r"], name="relu"), q("r", "s", "z", "y")]
    return model(nodes, [init("s", 0.1), init("z", zp, np_t)], [("x", dtype, [1, 4])], [("y", dtype, [1, 4])])


def test_int8_graph_io(tmp_path: Path) -> None:
    g = lower(load(int8_relu_model("int8", -5), tmp_path))  # type: ignore[arg-type]
    assert g.inputs == ("x",) and g.outputs == ("y",)
    bx, by = g.boundaries["x"], g.boundaries["y"]
    assert (bx.float_io, bx.from_uint8, bx.onnx_name) == (False, False, "x")
    assert (by.float_io, by.from_uint8, by.onnx_name) == (False, False, "y")
    assert g.t("x").quant.zp == -5


def test_uint8_graph_io_is_int8_with_zero_point_minus_128(tmp_path: Path) -> None:
    g = lower(load(int8_relu_model("uint8", 130), tmp_path))  # type: ignore[arg-type]
    assert g.t("x").dtype == "int8" and g.t("x").quant.zp == 2 and g.t("y").quant.zp == 2
    assert g.boundaries["x"].from_uint8 and g.boundaries["y"].from_uint8


def test_float_graph_io_through_q_and_dq(tmp_path: Path) -> None:
    nodes = [q("x", "x_s", "x_z", "xq"), dq("xq", "x_s", "x_z", "xf"),
             H.make_node("Relu", ["xf"], ["r"], name="relu"), q("r", "x_s", "x_z", "rq"), dq("rq", "x_s", "x_z", "y")]
    g = lower(load(model(nodes, scale_zp("x", 0.1, -128), [("x", "float", [1, 4])], [("y", "float", [1, 4])]),
                   tmp_path))
    assert g.inputs == ("xq",) and g.outputs == ("rq",)  # the int8 tensors the Q/DQ at the edge name
    assert g.boundaries["xq"].float_io and g.boundaries["xq"].onnx_name == "x"
    assert g.boundaries["rq"].float_io and g.boundaries["rq"].onnx_name == "y"


def test_float_input_not_read_by_one_q_is_reported(tmp_path: Path) -> None:
    nodes = [H.make_node("Relu", ["x"], ["r"], name="relu"), q("r", "x_s", "x_z", "y")]
    m = model(nodes, scale_zp("x", 0.1, 0), [("x", "float", [1, 4])], [("y", "int8", [1, 4])])
    with pytest.raises(UnsupportedError) as e:
        lower(load(m, tmp_path))
    assert e.value.problems[0] == ("x", "graph input", 13, "float input read by ['Relu'], not by one "
                                   "QuantizeLinear; mcugen needs a fully quantized model (onnxruntime "
                                   "quantize_static)")


def test_int8_input_without_scale_is_a_quant_error(tmp_path: Path) -> None:
    m = model([H.make_node("Identity", ["x"], ["y"], name="id")], [], [("x", "int8", [1, 4])],
              [("y", "int8", [1, 4])])
    with pytest.raises(QuantError, match="graph input 'x' is int8 but no node gives its scale/zero point"):
        lower(load(m, tmp_path))


def test_float_graph_output_not_from_dq_is_reported(tmp_path: Path) -> None:
    nodes = [q("x", "x_s", "x_z", "xq"), dq("xq", "x_s", "x_z", "xf"), H.make_node("Relu", ["xf"], ["y"], name="relu")]
    m = model(nodes, scale_zp("x", 0.1, 0), [("x", "float", [1, 4])], [("y", "float", [1, 4])])
    with pytest.raises(UnsupportedError) as e:
        lower(load(m, tmp_path))
    assert ("relu", "Relu", 13, "output 'y' is not quantized (no QuantizeLinear after it); float islands "
            "are not supported yet") in e.value.problems
