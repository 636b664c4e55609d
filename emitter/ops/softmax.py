"""Softmax over the last axis with TFLite's int8 kernel (gemmlowp fixed-point exp).

Output scale 1/256 with zero point -128 is TFLite's own (bit-exact with TFLM/CMSIS-NN); any other
output quantization (onnxruntime gives 1/255) requantizes the same fixed-point probability.
"""
from __future__ import annotations

import numpy as np

from emitter.errors import NodeUnsupported
from emitter.golden.softmax import mcu_softmax_s8, softmax_params
from emitter.ir import Graph, Layout, Node
from emitter.ops.base import LayoutPlan, LowerCtx, Prepared, QNode, TensorArg, per_tensor

ONNX_OPS = ("Softmax",)
IR_OPS = ("softmax",)


def lower(ctx: LowerCtx, q: QNode) -> None:
    x = q.inputs[0]
    if x.name is None:
        raise NodeUnsupported("input must be an int8 activation")
    rank = len(x.shape)
    opset = int(q.attrs.get("opset", ctx.m.opset))  # QLinearSoftmax names the Softmax version
    axis = int(q.attrs.get("axis", -1 if opset >= 13 else 1))
    axis = axis + rank if axis < 0 else axis
    if set(q.attrs) - {"axis", "opset"}:
        raise NodeUnsupported(f"unknown attributes {sorted(set(q.attrs) - {'axis', 'opset'})}")
    if opset >= 13 and axis != rank - 1:
        raise NodeUnsupported(f"softmax over axis {axis} of a rank-{rank} tensor: only the last "
                              "axis is supported")
    row_size = int(np.prod(x.shape[axis:]))
    ctx.emit(q, "softmax", [x.name], q.output, {"row_size": row_size})


def layout(node: Node, g: Graph) -> LayoutPlan:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    return LayoutPlan((Layout.identity(x.shape),), Layout.identity(y.shape))


def prepare(node: Node, g: Graph) -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    xq, yq = per_tensor(x, "input", node), per_tensor(y, "output", node)
    row_size = node.attrs["row_size"]
    rows = x.size // row_size
    p = softmax_params(xq.s, rows, row_size, yq.s, yq.zp)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_softmax_s8(p, env[x.name].reshape(rows, row_size)).ravel()

    return Prepared("mcu_softmax_s8", p, (TensorArg(x.name), TensorArg(y.name)), golden,
                    summary=f"{rows} rows of {row_size}, output mode {p.output_mode}")
