"""Slice and Split: strided copies in the input's own byte order (axes follow the layout).

Split becomes one slice per output. A QDQ model that quantizes an output differently from the
input gets a requantize after that slice.
"""
from __future__ import annotations

import numpy as np

from emitter.errors import NodeUnsupported
from emitter.golden.slice import mcu_slice_s8, slice_params
from emitter.ir import Graph, Layout, Node, QuantParams
from emitter.layout import is_simple, physical_shape
from emitter.ops.base import LayoutPlan, LowerCtx, Prepared, QNode, TensorArg

ONNX_OPS = ("Slice", "Split")
IR_OPS = ("slice",)


def const_ints(q: QNode, pos: int, what: str) -> list[int] | None:
    if len(q.inputs) <= pos or (q.inputs[pos].data is None and not q.inputs[pos].shape):
        return None
    data = q.inputs[pos].data
    if data is None:
        raise NodeUnsupported(f"{what} must be a constant")
    return [int(v) for v in np.asarray(data).ravel()]


def emit_slice(ctx: LowerCtx, q: QNode, out: str, shape: tuple[int, ...], quant: QuantParams,
               spec: dict, k: int) -> None:
    x = q.inputs[0]
    assert x.name is not None and x.quant is not None
    if x.quant.same_as(quant):
        ctx.emit(q, "slice", [x.name], out, spec, name=q.name if k == 0 else f"{q.name}_{k}")
        return
    mid = ctx.act(f"{out}_slice", shape, x.quant)
    ctx.emit(q, "slice", [x.name], mid, spec, name=f"{q.name}_{k}_slice")
    ctx.emit(q, "requantize", [mid], out, {"act_min": -128, "act_max": 127}, name=f"{q.name}_{k}_requantize")


def lower(ctx: LowerCtx, q: QNode) -> None:
    x = q.inputs[0]
    if x.name is None:
        raise NodeUnsupported("input must be an int8 activation")
    rank = len(x.shape)
    axes: list[int] | None
    steps: list[int] | None
    starts: list[int] | None
    ends: list[int] | None
    if q.op_type == "Slice":
        if "starts" in q.attrs:  # opset < 10
            starts, ends = list(q.attrs["starts"]), list(q.attrs["ends"])
            axes, steps = q.attrs.get("axes"), None
        else:
            starts, ends = const_ints(q, 1, "starts"), const_ints(q, 2, "ends")
            axes, steps = const_ints(q, 3, "axes"), const_ints(q, 4, "steps")
        if starts is None or ends is None:
            raise NodeUnsupported("Slice needs starts and ends")
        axes = list(range(len(starts))) if axes is None else [a + rank if a < 0 else a for a in axes]
        steps = [1] * len(starts) if steps is None else steps
        emit_slice(ctx, q, q.output, q.out_shape, q.out_quant,
                   {"starts": tuple(starts), "ends": tuple(ends), "axes": tuple(axes), "steps": tuple(steps)}, 0)
        return
    axis = int(q.attrs.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    outs = [(q.output, q.out_shape, q.out_quant)] + list(q.more_outputs)
    sizes = [s[axis] for _, s, _ in outs]
    begin = 0
    for k, (name, shape, quant) in enumerate(outs):
        spec = {"starts": (begin,), "ends": (begin + sizes[k],), "axes": (axis,), "steps": (1,)}
        emit_slice(ctx, q, name, tuple(shape), quant, spec, k)
        begin += sizes[k]
    if begin != x.shape[axis]:
        raise NodeUnsupported(f"split sizes {sizes} do not add up to {x.shape[axis]}")


def layout(node: Node, g: Graph) -> LayoutPlan:
    x = g.t(node.inputs[0])
    assert x.layout is not None
    perm = x.layout.perm if is_simple(x.layout, x.shape) else tuple(range(len(x.shape)))
    return LayoutPlan((Layout(x.shape, perm),), Layout(g.t(node.outputs[0]).shape, perm))


def prepare(node: Node, g: Graph) -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    assert x.layout is not None
    perm = x.layout.perm
    shape = physical_shape(x.layout)
    axes = [perm.index(a) for a in node.attrs["axes"]]
    if len(shape) > 6:
        raise NodeUnsupported(f"slice of rank {len(shape)} exceeds the kernel's 6")
    p = slice_params(shape, node.attrs["starts"], node.attrs["ends"], axes, node.attrs["steps"])
    if tuple(p.out_shape[:p.rank]) != physical_shape(y.layout):  # type: ignore[arg-type]
        raise NodeUnsupported(f"slice output {p.out_shape[:p.rank]} does not match {y.shape}")

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_slice_s8(p, env[x.name].reshape(shape)).ravel()

    return Prepared("mcu_slice_s8", p, (TensorArg(x.name), TensorArg(y.name)), golden)
