"""Transpose, and the relayout the layout pass inserts where a consumer needs another byte order.

A Transpose node never moves data: its output gets the layout that keeps the input's bytes (so
the real models' leading NHWC -> NCHW Transpose cancels against the NHWC conv kernels). Data
moves only in `relayout` nodes, one mcu_transpose_s8 call each, on squeezed physical shapes.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emitter.calls import Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Layout, Node
from emitter.kernels.common import pad_rank
from emitter.kernels.mcu_transpose_s8 import TransposeParams, mcu_transpose_s8
from emitter.kernels.mcu_transpose_s16 import mcu_transpose_s16
from emitter.layout import after_transpose
from emitter.ops import a16
from emitter.ops.base import LayoutPlan, LowerCtx, QNode
from emitter.ops.reshape import lower_view

ONNX_OPS = ("Transpose",)
IR_OPS = ("transpose", "relayout")


def lower(ctx: LowerCtx, q: QNode) -> None:
    rank = len(q.inputs[0].shape)
    perm = tuple(q.attrs.get("perm", tuple(reversed(range(rank)))))
    if sorted(perm) != list(range(rank)) or set(q.attrs) - {"perm"}:
        raise NodeUnsupported(f"perm {perm} is not a permutation of {rank} axes")
    lower_view(ctx, q, "transpose", {"perm": perm})


def layout(node: Node, g: Graph) -> LayoutPlan:
    x = g.t(node.inputs[0])
    assert x.layout is not None
    if node.op == "relayout":
        raise AssertionError("relayout nodes are created with their layouts")
    out = after_transpose(x.layout, x.shape, node.attrs["perm"])
    if out is None:  # input bytes are not a plain axis permutation: bring them to ONNX order first
        ident = Layout.identity(x.shape)
        return LayoutPlan((ident,), after_transpose(ident, x.shape, node.attrs["perm"]))  # type: ignore[arg-type]
    return LayoutPlan((None,), out)


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, y = node.inputs[0], node.outputs[0]
    if node.op == "transpose":
        return Prepared("", None, {}, lambda env: env[x], summary="view (layout change only)")
    shape, perm = node.attrs["in_shape"], node.attrs["perm"]
    if len(shape) > 6:
        raise NodeUnsupported(f"relayout of rank {len(shape)} exceeds the kernel's 6")
    p = TransposeParams(len(shape), pad_rank(shape), pad_rank(perm))

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_transpose_s8(p, env[x].reshape(shape)).ravel()

    return Prepared("mcu_transpose_s8", p, {"input": TensorArg(x), "output": TensorArg(y)}, golden,
                    summary=f"physical {tuple(shape)} perm {tuple(perm)}")


def prepare_a16(node: Node, g: Graph) -> Prepared:
    base = prepare(node, a16.tflite(g), "c")  # its int8 Prepare with TFLite's multipliers
    if not base.kernel:  # a free view
        return base
    if base.kernel != "mcu_transpose_s8":
        raise a16.refuse(node, g)
    p: Any = base.params
    x, shape = node.inputs[0], tuple(p.in_shape[:p.rank])

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_transpose_s16(p, env[x].reshape(shape)).ravel()

    return Prepared("mcu_transpose_s16", p, {"input": TensorArg(x), "output": TensorArg(node.outputs[0])},
                    golden, summary=base.summary)


A16 = a16.Int16(prepare_a16)  # mcu_transpose_s16
