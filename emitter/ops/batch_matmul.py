"""MatMul of two activations (attention's Q x K^T and P x V): TFLite BATCH_MATMUL int8.

ONNX MatMul is shared with fully_connected.py, which keeps every MatMul whose right operand is a
constant (an FC layer); this module takes the rest:

    # MatMul(DQ(a), DQ(b)) -> Q, a and b activations        ->  batch_matmul(a, b)
    # QLinearMatMul(a, .., b, ..), b an activation           ->  batch_matmul(a, b)
    # MatMul(DQ(const), DQ(b)) -> Q (per-tensor int8 const)  ->  batch_matmul(const, b)
    # MatMul(a, DQ(const weights)) -> Q                      ->  fully_connected.lower (fc)

Operands of rank 2 to 4; the batch dims broadcast (numpy rules: each equal to the output's or 1).
A Transpose in front of an operand moves no data: the layout pass gives its output a permuted
layout, and the kernel reads the operand as stored wherever one of its last two axes is innermost:
K^T through the kernel's rhs_transposed flag, the heads of a multi-head split (Reshape [T, H, d],
Transpose -> [H, T, d], bytes still [T, H, d]) through its batch and row strides. An operand in any
other byte order gets one relayout (layout() below).
Per-tensor quantization of both operands and the output.
"""
from __future__ import annotations

import numpy as np

from emitter import quant
from emitter.calls import ConstArg, Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Layout, Node, Tensor
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_batch_matmul_s8 import (
    MAX_DEPTH,
    BatchMatMulParams,
    Strides,
    buffer_size,
    dense,
    is_dense,
    mcu_batch_matmul_s8,
)
from emitter.layout import equivalent, is_simple, physical_shape
from emitter.ops.base import LayoutPlan, LowerCtx, QNode, per_tensor
from emitter.ops.conv import scratch_ctx

ONNX_OPS = ("MatMul",)
IR_OPS = ("batch_matmul",)


def lower(ctx: LowerCtx, q: QNode) -> None:
    from emitter.ops import fully_connected

    a, b = q.inputs[0], q.inputs[1]
    if q.op_type != "MatMul" or b.name is None:  # Gemm, or a constant right operand: an FC layer
        fully_connected.lower(ctx, q)
        return
    if q.attrs:
        raise NodeUnsupported(f"unknown attributes {sorted(q.attrs)}")
    if q.bias is not None:
        raise NodeUnsupported("a MatMul of two activations followed by Add(bias) is not supported; "
                              "export the Add as a separate node")
    if not 2 <= len(a.shape) <= 4 or not 2 <= len(b.shape) <= 4:
        raise NodeUnsupported(f"MatMul of two activations needs operands of rank 2 to 4, got "
                              f"{list(a.shape)} x {list(b.shape)}")
    if a.shape[-1] != b.shape[-2]:
        raise NodeUnsupported(f"MatMul operands {list(a.shape)} x {list(b.shape)} disagree on K")
    batch_a, batch_b = (1,) * (4 - len(a.shape)) + a.shape[:-2], (1,) * (4 - len(b.shape)) + b.shape[:-2]
    if any(x != y and 1 not in (x, y) for x, y in zip(batch_a, batch_b, strict=True)):
        raise NodeUnsupported(f"MatMul operands {list(a.shape)} x {list(b.shape)}: batch dims do not broadcast")
    want = tuple(max(x, y) for x, y in zip(batch_a, batch_b, strict=True)) + (a.shape[-2], b.shape[-1])
    if (1,) * (4 - len(q.out_shape)) + tuple(q.out_shape) != want:
        raise NodeUnsupported(f"MatMul output shape {list(q.out_shape)} disagrees with its operands "
                              f"{list(a.shape)} x {list(b.shape)}")
    if a.shape[-1] > MAX_DEPTH:
        raise NodeUnsupported(f"K = {a.shape[-1]} multiply-accumulates per output could overflow the "
                              f"kernel's accumulator (at most {MAX_DEPTH})")
    lhs = ctx.act_input(a, q, "lhs")
    ctx.emit(q, "batch_matmul", [lhs, b.name], q.output, {"act_min": q.act_min, "act_max": q.act_max})


def dims(shape: tuple[int, ...]) -> Dims:
    """[.., R, C] of rank 2 to 4 as {n, h, w = R, c = C}, missing batch dims 1."""
    v = (1,) * (4 - len(shape)) + tuple(shape)
    return Dims(*v)


def swapped(shape: tuple[int, ...]) -> Layout:
    """The layout of an operand stored with its last two axes swapped."""
    perm = list(range(len(shape)))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return Layout(tuple(shape), tuple(perm))


def storage(t: Tensor) -> tuple[int, Strides] | None:
    """(transposed, strides) of an operand as its bytes are stored (the kernel's flag and strides),
    or None when neither of its last two axes is innermost."""
    d = dims(t.shape)
    if t.layout is None or t.is_const or equivalent(t.layout, Layout.identity(t.shape)):
        return 0, dense(d, 0)
    if equivalent(t.layout, swapped(t.shape)):
        return 1, dense(d, 1)
    if not is_simple(t.layout, t.shape):
        return None
    phys = physical_shape(t.layout)
    inner = [int(np.prod(phys[k + 1:], dtype=np.int64)) for k in range(len(phys))]
    stride = [0] * len(phys)
    for pos, axis in enumerate(t.layout.perm):
        stride[axis] = inner[pos] if t.shape[axis] > 1 else 0  # a unit axis: any stride
    s = [0] * (4 - len(stride)) + stride
    if d.c == 1 or s[3] == 1:  # rows of C contiguous
        return 0, Strides(s[0], s[1], s[2] if d.w > 1 else d.c)
    if d.w == 1 or s[2] == 1:  # rows of R contiguous: stored transposed
        return 1, Strides(s[0], s[1], s[3] if d.c > 1 else d.w)
    return None


def layout(node: Node, g: Graph) -> LayoutPlan:
    """Each operand as it is stored when that is ONNX order or its last two axes swapped; else one
    relayout: lhs to ONNX order, rhs to [.., N, K] (rows of K bytes: the kernel's fast paths need
    no copy, and CMSIS-NN's arm_batch_matmul_s8 takes it)."""
    a, b = g.t(node.inputs[0]), g.t(node.inputs[1])
    need_a = None if storage(a) is not None else Layout.identity(a.shape)
    need_b = None if storage(b) is not None else swapped(b.shape)
    return LayoutPlan((need_a, need_b), Layout.identity(g.t(node.outputs[0]).shape))


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    a, b, y = g.t(node.inputs[0]), g.t(node.inputs[1]), g.t(node.outputs[0])
    qa, qb, qy = per_tensor(a, "input A", node), per_tensor(b, "input B", node), per_tensor(y, "output", node)
    mult, shift, rounding = quant.layer_multipliers(g.numerics, qa.s, np.array([qb.s]), qy.s)
    la, lb = dims(a.shape), dims(b.shape)
    # |acc| <= K * max|a - zp_a| * max|b - zp_b|: no reachable tie -> the fast paths round as onnxruntime
    bound = la.c * max(128 + qa.zp, 127 - qa.zp) * max(128 + qb.zp, 127 - qb.zp)
    if rounding == quant.ROUND_NEAREST_EVEN and quant.fast_round_ok(mult, shift, np.array([bound])):
        rounding = quant.ROUND_NEAREST_NO_TIE
    sa, sb = storage(a), storage(b)
    assert sa is not None and sb is not None, "layout() brings each operand to a readable order"
    p = BatchMatMulParams(la, lb, dims(y.shape), sa[0], sb[0], -qb.zp,
                          QuantIO(-qa.zp, qy.zp, node.attrs["act_min"], node.attrs["act_max"], rounding),
                          int(mult[0]), int(shift[0]), sa[1], sb[1])
    const_a = a.data if a.is_const else None
    lhs = TensorArg(a.name) if const_a is None else ConstArg("lhs", const_a)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_batch_matmul_s8(p, env[a.name] if const_a is None else const_a, env[b.name]).ravel()

    ctx, scratch = scratch_ctx(buffer_size, p, None, isa)
    flags = "".join(f", {w} transposed" for w, t in (("A", p.lhs_transposed), ("B", p.rhs_transposed)) if t)
    flags += "" if is_dense(p) else ", strided view"
    m, k, n = la.w, la.c, lb.c
    return Prepared("mcu_batch_matmul_s8", p,
                    {"ctx": ctx, "lhs": lhs, "rhs": TensorArg(b.name), "output": TensorArg(y.name)},
                    golden, macs=y.size * k, scratch=scratch,
                    summary=f"[{m}x{k}] x [{k}x{n}], batches {y.size // (m * n)}{flags}")
