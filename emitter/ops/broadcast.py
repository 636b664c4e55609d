"""Shared by the binary element-wise ops (Add, Mul): NumPy broadcasting mapped onto the kernels'
(inner, period) operand indexing, in the output's physical layout."""
from __future__ import annotations

import numpy as np

from emitter.calls import ConstArg, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Layout, Node, Tensor
from emitter.kernels.common import Bcast
from emitter.layout import index_map
from emitter.ops.base import LayoutPlan, LowerCtx, QNode


def lower_binary(ctx: LowerCtx, q: QNode, ir_op: str, extra: dict | None = None) -> None:
    if q.attrs:
        raise NodeUnsupported(f"unknown attributes {sorted(q.attrs)}")
    names = []
    for k, qi in enumerate(q.inputs[:2]):
        if qi.quant is None:
            raise NodeUnsupported(f"input {k} is not quantized")
        names.append(ctx.act_input(qi, q, f"operand{k}"))
    shapes = [ctx.tensors[n].shape for n in names]
    try:
        together = np.broadcast_shapes(*shapes)
    except ValueError:  # com.microsoft QLinearAdd/QLinearMul: no ONNX shape inference checked them
        raise NodeUnsupported(f"operand shapes {shapes} do not broadcast together") from None
    if together != tuple(q.out_shape):
        raise NodeUnsupported(f"operand shapes {shapes} do not broadcast to {q.out_shape}")
    ctx.emit(q, ir_op, names, q.output, {"act_min": q.act_min, "act_max": q.act_max, **(extra or {})})


def layout(node: Node, g: Graph) -> LayoutPlan:
    out_shape = g.t(node.outputs[0]).shape
    full = [g.t(n) for n in node.inputs if not g.t(n).is_const and g.t(n).shape == out_shape]
    out_layout = full[0].layout if full and full[0].layout is not None else Layout.identity(out_shape)
    reqs = tuple(out_layout if not g.t(n).is_const and g.t(n).shape == out_shape else None
                 for n in node.inputs)
    return LayoutPlan(reqs, out_layout)


def operand(t: Tensor, out: Tensor, node: Node, k: int) -> tuple[Bcast, TensorArg | ConstArg, np.ndarray | None]:
    """How operand t is read for each physical output element: its Bcast, C argument, and, for a
    constant, the data reordered to the kernel's reading order."""
    assert out.layout is not None
    n = out.size
    if t.shape == out.shape and not t.is_const:
        return Bcast(1, n), TensorArg(t.name), None
    rank = len(out.shape)
    bshape = (1,) * (rank - len(t.shape)) + tuple(t.shape)
    coords = np.unravel_index(index_map(out.layout), out.shape)
    f = np.ravel_multi_index([c if bshape[d] != 1 else np.zeros_like(c) for d, c in enumerate(coords)],
                             bshape)  # operand logical index read at each physical output position
    changes = np.flatnonzero(f != f[0])
    inner = int(changes[0]) if changes.size else n
    starts = f[::inner]
    repeat = np.flatnonzero(starts == starts[0])
    period = int(repeat[1]) if repeat.size > 1 else starts.size
    order = starts[:period]
    if not np.array_equal(f, order[(np.arange(n) // inner) % period]):
        raise NodeUnsupported(f"node '{node.name}': broadcasting {t.shape} to {out.shape} in this "
                              "layout is not a scalar/per-channel pattern the kernel supports")
    if t.is_const:
        assert t.data is not None
        return Bcast(inner, period), ConstArg(f"operand{k}", t.data.ravel()[order].astype(np.int8)), \
            t.data.ravel()[order].astype(np.int8)
    assert t.layout is not None
    if not np.array_equal(order, index_map(t.layout)[:period]) or period != t.size:
        raise NodeUnsupported(f"node '{node.name}': activation operand {t.shape} is not stored in "
                              "the order the broadcast reads it")
    return Bcast(inner, period), TensorArg(t.name), None
