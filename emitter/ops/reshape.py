"""Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: views that share their input's bytes.

The output keeps the input's Layout (emitter/layout.py), so no data moves; a consumer that needs
another order gets one relayout. If a QDQ model quantizes the output differently, a requantize
node follows.
"""
from __future__ import annotations

import numpy as np

from emitter.calls import ConstArg, IntArg, Prepared, TensorArg, TensorListArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Node
from emitter.kernels.mcu_concat_s8 import mcu_concat_s8
from emitter.ops import a16
from emitter.ops.base import LayoutPlan, LowerCtx, QNode

ONNX_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout")
IR_OPS = ("reshape", "copy")


def lower_view(ctx: LowerCtx, q: QNode, op: str, attrs: dict) -> None:
    """Emit a view op, then a requantize if the output's quant differs from the input's."""
    x = q.inputs[0]
    if x.name is None or x.quant is None:
        raise NodeUnsupported("input must be an int8 activation")
    if x.quant.same_as(q.out_quant):
        ctx.emit(q, op, [x.name], q.output, attrs)
        return
    mid = ctx.act(f"{q.output}_{op}", q.out_shape, x.quant)
    ctx.emit(q, op, [x.name], mid, attrs)
    ctx.emit(q, "requantize", [mid], q.output, {"act_min": q.act_min, "act_max": q.act_max},
             name=f"{q.name}_requantize")


def lower(ctx: LowerCtx, q: QNode) -> None:
    if q.op_type == "Dropout" and len(q.onnx.output) > 1 and q.onnx.output[1]:
        raise NodeUnsupported("the mask output of Dropout is not supported")
    lower_view(ctx, q, "reshape", {})


def layout(node: Node, g: Graph) -> LayoutPlan:
    x = g.t(node.inputs[0])
    assert x.layout is not None
    return LayoutPlan((None,), x.layout)


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x = node.inputs[0]
    if node.op == "copy":  # a graph output that would otherwise share another I/O buffer
        size = g.t(x).size
        return Prepared("mcu_concat_s8", None,
                        {"num_inputs": IntArg(1), "inputs": TensorListArg((x,)),
                         "chunk": ConstArg("chunk", np.array([size], np.int32)), "outer": IntArg(1),
                         "output": TensorArg(node.outputs[0])},
                        lambda env: mcu_concat_s8([env[x]], [size], 1), summary="copy")

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return env[x]

    return Prepared("", None, {}, golden, summary="view (no data moves)")


def prepare_a16(node: Node, g: Graph) -> Prepared:
    """A reshape over int16 is the same free view; a copy (mcu_concat_s8's) has no int16 kernel."""
    if node.op != "reshape":
        raise a16.refuse(node, g)
    base = prepare(node, a16.tflite(g), "c")
    if base.kernel:
        raise a16.refuse(node, g)
    return base


A16 = a16.Int16(prepare_a16)  # a view: free
