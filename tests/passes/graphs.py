"""Small hand-built graphs for the lowering and pass tests: ONNX models made with onnx.helper (QDQ
and QOperator), loaded through the frontend, and IR Graphs built directly."""
from __future__ import annotations

from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from emitter.ir import Graph, Node, QuantParams, Tensor
from emitter.onnx import load as frontend

ONNX_TYPES = {"float": TP.FLOAT, "int8": TP.INT8, "uint8": TP.UINT8, "int32": TP.INT32}


def init(name: str, value: Any, dtype: Any = np.float32) -> onnx.TensorProto:
    return NH.from_array(np.asarray(value, dtype=dtype), name)


def model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto],
          inputs: list[tuple[str, str, list[int]]], outputs: list[tuple[str, str, list[int] | None]],
          ms_domain: bool = False) -> onnx.ModelProto:
    """A model from nodes, initializers and (name, "float"|"int8"|"uint8", shape) inputs/outputs."""
    graph = H.make_graph(nodes, "g", [H.make_tensor_value_info(n, ONNX_TYPES[t], s) for n, t, s in inputs],
                         [H.make_tensor_value_info(n, ONNX_TYPES[t], s) for n, t, s in outputs], inits)
    opsets = [H.make_opsetid("", 13)] + ([H.make_opsetid("com.microsoft", 1)] if ms_domain else [])
    m = H.make_model(graph, opset_imports=opsets, producer_name="mcugen-tests")
    m.ir_version = 8
    return m


def load(m: onnx.ModelProto, tmp_path: Path, name: str = "m") -> frontend.OnnxModel:
    path = tmp_path / f"{name}.onnx"
    onnx.save(m, path)
    return frontend.load(path)


def q(x: str, s: str, z: str, y: str) -> onnx.NodeProto:
    return H.make_node("QuantizeLinear", [x, s, z], [y], name=f"q_{y}")


def dq(x: str, s: str, z: str, y: str, **attrs: Any) -> onnx.NodeProto:
    return H.make_node("DequantizeLinear", [x, s, z], [y], name=f"dq_{y}", **attrs)


def scale_zp(prefix: str, scale: float, zp: int, dtype: Any = np.int8) -> list[onnx.TensorProto]:
    return [init(f"{prefix}_s", scale), init(f"{prefix}_z", zp, dtype)]


def qdq_op(op: onnx.NodeProto, shape: list[int], out_shape: list[int], x_q: tuple[float, int] = (0.05, 0),
           y_q: tuple[float, int] = (0.05, 0), after: list[onnx.NodeProto] | None = None,
           extra_inits: list[onnx.TensorProto] | None = None) -> onnx.ModelProto:
    """float x -> Q -> DQ -> `op` (reads "xf", writes "o") -> `after` (reads "o", writes "a") ->
    Q(y_q) -> DQ -> float y. With no `after`, Q reads "o"."""
    after = after or []
    last = "a" if after else "o"
    nodes = [q("x", "x_s", "x_z", "xq"), dq("xq", "x_s", "x_z", "xf"), op, *after,
             q(last, "y_s", "y_z", "yq"), dq("yq", "y_s", "y_z", "y")]
    inits = scale_zp("x", *x_q) + scale_zp("y", *y_q) + (extra_inits or [])
    return model(nodes, inits, [("x", "float", shape)], [("y", "float", out_shape)])


# -- IR graphs built directly ------------------------------------------------------------------

def qp(scale: float = 0.1, zp: int = 0) -> QuantParams:
    return QuantParams.per_tensor(scale, zp)


def act(name: str, shape: tuple[int, ...] = (1, 8), quant: QuantParams | None = None) -> Tensor:
    return Tensor(name, shape, "int8", quant or qp())


def node(name: str, op: str, inputs: list[str], output: str, **attrs: Any) -> Node:
    return Node(name, op, tuple(inputs), (output,), MappingProxyType(attrs), name, 13)


def graph(tensors: list[Tensor], nodes: list[Node], inputs: list[str], outputs: list[str]) -> Graph:
    return Graph(MappingProxyType({t.name: t for t in tensors}), tuple(nodes), tuple(inputs), tuple(outputs))


def clamp(name: str, x: str, y: str, lo: int, hi: int) -> Node:
    return node(name, "requantize", [x], y, act_min=lo, act_max=hi)
