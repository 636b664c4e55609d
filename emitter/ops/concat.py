"""Concat: inputs share the output's quantization (others are requantized first) and its byte
order; the kernel copies each input's contiguous chunk per outer row."""
from __future__ import annotations

import numpy as np

from emitter.calls import ConstArg, IntArg, Prepared, TensorArg, TensorListArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Layout, Node, Tensor
from emitter.kernels.mcu_concat_s8 import mcu_concat_s8
from emitter.layout import is_identity, is_simple, physical_shape
from emitter.ops.base import LayoutPlan, LowerCtx, QIn, QNode

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
            names.append(_const_in_out_quant(ctx, q, k, qi))
            continue
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


def _const_in_out_quant(ctx: LowerCtx, q: QNode, k: int, qi: QIn) -> str:
    """A constant input (a transformer's class token before its tokens): its float values
    (DequantizeLinear, float32 as onnxruntime computes it) quantized into the output's scale and
    zero point at compile time, an int8 tensor the kernel copies like any other input."""
    assert qi.data is not None
    if qi.quant is None:
        raise NodeUnsupported(f"input {k} is a float constant; only a quantized (DequantizeLinear) "
                              "constant can be concatenated")
    if all(i.is_const for i in q.inputs):
        raise NodeUnsupported("every input is a constant; Concat of constants is not supported")
    out = q.out_quant
    if out.axis is not None and out.scale.size > 1:
        raise NodeUnsupported("the output is quantized per axis")
    data = qi.data.astype(np.int32)
    scale, zp = qi.quant.scale.astype(np.float32), qi.quant.zero_point.astype(np.int32)
    if qi.quant.axis is not None and scale.size > 1:
        bshape = [1] * data.ndim
        bshape[qi.quant.axis] = scale.size
        scale, zp = scale.reshape(bshape), zp.reshape(bshape)
    real = (data - zp).astype(np.float32) * scale
    qv = np.rint(real / np.float32(out.s)) + out.zp
    values = np.clip(qv, -128, 127).astype(np.int8)
    return ctx.const(f"{q.name}_const{k}", values, out)


def layout(node: Node, g: Graph) -> LayoutPlan:
    first = next(g.t(n) for n in node.inputs if not g.t(n).is_const)
    assert first.layout is not None
    perm = first.layout.perm if is_simple(first.layout, first.shape) else tuple(range(len(first.shape)))
    if any(g.t(n).is_const for n in node.inputs):  # a constant's bytes are in logical order
        perm = tuple(range(len(first.shape)))
    reqs = tuple(Layout(g.t(n).shape, perm) for n in node.inputs)
    return LayoutPlan(reqs, Layout(g.t(node.outputs[0]).shape, perm))


def _stored_shape(t: Tensor) -> tuple[int, ...]:
    """The shape the bytes are stored in: logical for a constant or an identity layout (whose view
    may have another rank, e.g. a MatMul's [T, D] for [1, T, D]), else the physical one."""
    if t.is_const or t.layout is None or is_identity(t.layout):
        return tuple(t.shape)
    return physical_shape(t.layout)


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    y = g.t(node.outputs[0])
    assert y.layout is not None
    pos = y.layout.perm.index(node.attrs["axis"])
    outer = int(np.prod(_stored_shape(y)[:pos]))
    chunks = [int(np.prod(_stored_shape(g.t(n))[pos:])) for n in node.inputs]
    names = node.inputs
    consts = {n: np.asarray(g.t(n).data).ravel() for n in names if g.t(n).is_const}

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_concat_s8([consts[n] if n in consts else env[n] for n in names], chunks, outer)

    return Prepared("mcu_concat_s8", None,
                    {"num_inputs": IntArg(len(names)), "inputs": TensorListArg(tuple(names)),
                     "chunk": ConstArg("chunk", np.array(chunks, np.int32)), "outer": IntArg(outer),
                     "output": TensorArg(y.name)},
                    golden, summary=f"{len(names)} inputs, outer {outer}, chunks {chunks}")
