"""Slice and Split: strided copies in the input's own byte order (axes follow the layout).

Split becomes one slice per output. A QDQ model that quantizes an output differently from the
input gets a requantize after that slice.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from emitter.calls import Prepared, TensorArg
from emitter.errors import NodeUnsupported, ShapeError
from emitter.ir import Graph, Layout, Node, QuantParams
from emitter.kernels.common import pad_rank
from emitter.kernels.mcu_slice_s8 import SliceParams, mcu_slice_s8
from emitter.layout import is_identity, is_simple, physical_shape
from emitter.ops.base import LayoutPlan, LowerCtx, QNode

ONNX_OPS = ("Slice", "Split", "Gather")
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
    if q.op_type == "Gather":
        lower_gather(ctx, q)
        return
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


def lower_gather(ctx: LowerCtx, q: QNode) -> None:
    """Gather of constant indices that step evenly (a transformer's class token: x[:, 0], a
    scalar index that drops the axis) is a slice; a scalar index then a reshape (a view)."""
    x = q.inputs[0]
    assert x.name is not None
    rank = len(x.shape)
    if len(q.inputs) != 2 or q.inputs[1].data is None:
        raise NodeUnsupported("Gather needs constant indices")
    axis = int(q.attrs.get("axis", 0))
    if set(q.attrs) - {"axis"} or not -rank <= axis < rank:
        raise NodeUnsupported(f"Gather attributes {dict(q.attrs)} on a rank-{rank} input")
    axis = axis + rank if axis < 0 else axis
    data = np.asarray(q.inputs[1].data)
    dim = x.shape[axis]
    idx = [int(v) + dim if int(v) < 0 else int(v) for v in data.ravel()]
    if data.ndim > 1 or not idx or not all(0 <= i < dim for i in idx):
        raise NodeUnsupported(f"Gather indices {data.tolist()} are not a scalar or 1-D list within {dim}")
    step = idx[1] - idx[0] if len(idx) > 1 else 1
    if step == 0 or any(b - a != step for a, b in zip(idx, idx[1:], strict=False)):
        raise NodeUnsupported(f"Gather indices {idx} do not step evenly (only a slice is supported)")
    end = idx[-1] + (1 if step > 0 else -1)
    spec = {"starts": (idx[0],), "ends": (end if end >= 0 else -dim - 1,), "axes": (axis,), "steps": (step,)}
    if data.ndim == 1:
        emit_slice(ctx, q, q.output, q.out_shape, q.out_quant, spec, 0)
        return
    kept = tuple(1 if k == axis else d for k, d in enumerate(x.shape))
    mid = ctx.act(f"{q.output}_gathered", kept, q.out_quant)
    emit_slice(ctx, q, mid, kept, q.out_quant, spec, 0)
    ctx.emit(q, "reshape", [mid], q.output, {}, name=f"{q.name}_squeeze")


def layout(node: Node, g: Graph) -> LayoutPlan:
    x = g.t(node.inputs[0])
    assert x.layout is not None
    perm = x.layout.perm if is_simple(x.layout, x.shape) else tuple(range(len(x.shape)))
    return LayoutPlan((Layout(x.shape, perm),), Layout(g.t(node.outputs[0]).shape, perm))


def slice_params(in_shape: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                 axes: Sequence[int] | None = None,
                 steps: Sequence[int] | None = None) -> SliceParams:
    """ONNX Slice (opset 13) on a physical shape: negative starts/ends count from the end, then
    start is clamped to [0, dim] ([0, dim - 1] for a negative step) and end to [0, dim]
    ([-1, dim - 1]); out = ceil((end - start) / step). Raises ShapeError for an empty result."""
    shape = tuple(int(v) for v in in_shape)
    rank = len(shape)
    axes = list(range(len(starts))) if axes is None else [int(a) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError("slice: starts, ends, axes and steps must have the same length")
    begin, step, out = [0] * rank, [1] * rank, list(shape)
    seen = set()
    for start, end, axis, st in zip(starts, ends, axes, steps, strict=False):
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank or axis in seen:
            raise ValueError(f"slice: axis {axis} repeated or outside a rank-{rank} tensor")
        seen.add(axis)
        if st == 0:
            raise ValueError("slice: step 0")
        dim = shape[axis]
        start, end = int(start), int(end)
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if st > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        count = max(0, -(-(end - start) // st))  # ceil division
        if count == 0:
            raise ShapeError(f"slice of {shape} is empty along axis {axis}")
        begin[axis], step[axis], out[axis] = start, (st if count > 1 else 1), count
    return SliceParams(rank=rank, in_shape=pad_rank(shape), begin=pad_rank(begin),
                       step=pad_rank(step), out_shape=pad_rank(out))


def split_params(in_shape: Sequence[int], axis: int, sizes: Sequence[int]) -> list[SliceParams]:
    """ONNX Split on a physical shape: output k takes sizes[k] consecutive indices of `axis`."""
    shape = tuple(int(v) for v in in_shape)
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis < len(shape):
        raise ValueError(f"split: axis {axis} outside a rank-{len(shape)} tensor")
    if sum(sizes) != shape[axis] or min(sizes) < 1:
        raise ShapeError(f"split sizes {list(sizes)} must be >= 1 and sum to {shape[axis]}")
    out, offset = [], 0
    for size in sizes:
        begin = [0] * len(shape)
        begin[axis] = offset
        out_shape = list(shape)
        out_shape[axis] = int(size)
        out.append(SliceParams(rank=len(shape), in_shape=pad_rank(shape), begin=pad_rank(begin),
                               step=pad_rank([1] * len(shape)), out_shape=pad_rank(out_shape)))
        offset += int(size)
    return out


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    assert x.layout is not None
    perm = x.layout.perm
    shape = physical_shape(x.layout)
    if not is_simple(x.layout, x.shape) and is_identity(x.layout):  # bytes in logical order, another
        perm, shape = tuple(range(len(x.shape))), tuple(x.shape)   # view (a MatMul's [T, 3D] of [1, T, 3D])
    axes = [perm.index(a) for a in node.attrs["axes"]]
    if len(shape) > 6:
        raise NodeUnsupported(f"slice of rank {len(shape)} exceeds the kernel's 6")
    p = slice_params(shape, node.attrs["starts"], node.attrs["ends"], axes, node.attrs["steps"])
    if tuple(p.out_shape[:p.rank]) != physical_shape(y.layout):  # type: ignore[arg-type]
        raise NodeUnsupported(f"slice output {p.out_shape[:p.rank]} does not match {y.shape}")

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_slice_s8(p, env[x.name].reshape(shape)).ravel()

    return Prepared("mcu_slice_s8", p, {"input": TensorArg(x.name), "output": TensorArg(y.name)}, golden)
