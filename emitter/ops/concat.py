"""Concat: inputs share the output's quantization (others are requantized first) and its byte
order; the kernel copies each input's contiguous chunk per outer row."""
from __future__ import annotations

import numpy as np

from emitter.calls import ConstArg, IntArg, Prepared, TensorArg, TensorListArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Layout, Node
from emitter.kernels.mcu_concat_s8 import mcu_concat_s8
from emitter.layout import is_simple, physical_shape
from emitter.ops.base import LayoutPlan, LowerCtx, QNode

ONNX_OPS = ("Concat",)
IR_OPS = ("concat",)


def lower(ctx: LowerCtx, q: QNode) -> None:
    rank = len(q.out_shape)
    if "axis" not in q.attrs or set(q.attrs) - {"axis"}:
        raise NodeUnsupported(f"Concat needs exactly the axis attribute, got {sorted(q.attrs)}")
    axis = int(q.attrs["axis"])
    if not -rank <= axis < rank:
        raise NodeUnsupported(f"axis {axis} is outside a rank-{rank} tensor")
    axis = axis + rank if axis < 0 else axis
    names = []
    for k, qi in enumerate(q.inputs):
        if qi.name is None:
            raise NodeUnsupported(f"input {k} is a constant; Concat of constants is not supported")
        name = qi.name
        if not ctx.tensors[name].quant.same_as(q.out_quant):  # type: ignore[union-attr]
            mid = ctx.act(f"{q.output}_in{k}", ctx.tensors[name].shape, q.out_quant)
            ctx.emit(q, "requantize", [name], mid, {"act_min": -128, "act_max": 127},
                     name=f"{q.name}_requantize{k}")
            name = mid
        names.append(name)
    for n in names:
        shape = ctx.tensors[n].shape
        if len(shape) != rank or any(d != o for k, (d, o) in enumerate(zip(shape, q.out_shape, strict=False))
                                     if k != axis):
            raise NodeUnsupported(f"input '{n}' {list(shape)} does not concatenate into {list(q.out_shape)} "
                                  f"along axis {axis}")
    if sum(ctx.tensors[n].shape[axis] for n in names) != q.out_shape[axis]:
        raise NodeUnsupported(f"inputs do not add up to {q.out_shape[axis]} along axis {axis}")
    if q.act_min != -128 or q.act_max != 127:
        raise NodeUnsupported("a Relu/Clip fused after Concat is not supported")
    ctx.emit(q, "concat", names, q.output, {"axis": axis})


def layout(node: Node, g: Graph) -> LayoutPlan:
    first = g.t(node.inputs[0])
    assert first.layout is not None
    perm = first.layout.perm if is_simple(first.layout, first.shape) else tuple(range(len(first.shape)))
    reqs = tuple(Layout(g.t(n).shape, perm) for n in node.inputs)
    return LayoutPlan(reqs, Layout(g.t(node.outputs[0]).shape, perm))


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    y = g.t(node.outputs[0])
    assert y.layout is not None
    pos = y.layout.perm.index(node.attrs["axis"])
    outer = int(np.prod(physical_shape(y.layout)[:pos]))
    chunks = [int(np.prod(physical_shape(g.t(n).layout)[pos:])) for n in node.inputs]  # type: ignore[arg-type]
    names = node.inputs

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_concat_s8([env[n] for n in names], chunks, outer)

    return Prepared("mcu_concat_s8", None,
                    {"num_inputs": IntArg(len(names)), "inputs": TensorListArg(tuple(names)),
                     "chunk": ConstArg("chunk", np.array(chunks, np.int32)), "outer": IntArg(outer),
                     "output": TensorArg(y.name)},
                    golden, summary=f"{len(names)} inputs, outer {outer}, chunks {chunks}")
