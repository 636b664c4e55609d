"""Add and Sub: TFLite int8 ADD (left_shift 20, per-input multipliers), scalar/per-channel
broadcast. Sub is the same kernel with the second input's multiplier negated."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from emitter.calls import Prepared, TensorArg
from emitter.errors import QuantError
from emitter.ir import Graph, Node
from emitter.kernels.common import Bcast
from emitter.kernels.mcu_add_s8 import AddParams, mcu_add_s8
from emitter.kernels.mcu_add_s16 import LEFT_SHIFT, mcu_add_s16
from emitter.ops import a16, broadcast
from emitter.ops.base import LayoutPlan, LowerCtx, QNode, per_tensor
from emitter.quant import quantize_multiplier

ONNX_OPS = ("Add", "Sub")
IR_OPS = ("add",)
LEFT_SHIFT_INT8 = 20


def lower(ctx: LowerCtx, q: QNode) -> None:
    broadcast.lower_binary(ctx, q, "add", {"subtract": q.op_type == "Sub"})


def layout(node: Node, g: Graph) -> LayoutPlan:
    return broadcast.layout(node, g)


def _smaller_than_one(real: float, what: str) -> tuple[int, int]:
    """TFLite QuantizeMultiplierSmallerThanOneExp: 0 < real < 1, shift <= 0."""
    if not 0.0 < real < 1.0:
        raise QuantError(f"ADD {what} multiplier {real!r} must lie in (0, 1); "
                         "check the input and output scales")
    mult, shift = quantize_multiplier(real)
    if shift > 0:
        raise QuantError(f"ADD {what} multiplier {real!r} rounds up to 1.0")
    return mult, shift


def add_params(size: int, in1: Bcast, in2: Bcast, s1: float, zp1: int, s2: float, zp2: int,
               s_out: float, zp_out: int, act_min: int, act_max: int,
               left_shift: int = LEFT_SHIFT_INT8) -> AddParams:
    """TFLite Micro's int8 ADD Prepare: left_shift 20 (15 for int16, emitter/ops/a16.py), twice
    the larger input scale as the common scale, every multiplier from the float32 scales in
    double precision."""
    scale1, scale2, scale_out = (float(np.float32(s)) for s in (s1, s2, s_out))
    if min(scale1, scale2, scale_out) <= 0.0:
        raise QuantError(f"ADD scales must be > 0, found {s1!r}, {s2!r} -> {s_out!r}")
    twice_max_input_scale = 2.0 * max(scale1, scale2)
    m1, sh1 = _smaller_than_one(scale1 / twice_max_input_scale, "input1")
    m2, sh2 = _smaller_than_one(scale2 / twice_max_input_scale, "input2")
    mo, sho = _smaller_than_one(
        twice_max_input_scale / ((1 << left_shift) * scale_out), "output")
    return AddParams(size=size, in1=in1, in2=in2, input1_offset=-zp1, input2_offset=-zp2,
                     output_offset=zp_out, left_shift=left_shift,
                     input1_multiplier=m1, input1_shift=sh1,
                     input2_multiplier=m2, input2_shift=sh2,
                     output_multiplier=mo, output_shift=sho, act_min=act_min, act_max=act_max)


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    a, b, y = g.t(node.inputs[0]), g.t(node.inputs[1]), g.t(node.outputs[0])
    qa, qb, qy = per_tensor(a, "input", node), per_tensor(b, "input", node), per_tensor(y, "output", node)
    ba, arg_a, ca = broadcast.operand(a, y, node, 0)
    bb, arg_b, cb = broadcast.operand(b, y, node, 1)
    p = add_params(y.size, ba, bb, qa.s, qa.zp, qb.s, qb.zp, qy.s, qy.zp,
                   node.attrs["act_min"], node.attrs["act_max"])
    if node.attrs.get("subtract"):
        p = replace(p, input2_multiplier=-p.input2_multiplier)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_add_s8(p, env[a.name] if ca is None else ca, env[b.name] if cb is None else cb)

    return Prepared("mcu_add_s8", p, {"input1": arg_a, "input2": arg_b, "output": TensorArg(y.name)},
                    golden, macs=y.size,
                    summary="subtract" if node.attrs.get("subtract") else "")


def prepare_a16(node: Node, g: Graph) -> Prepared:
    base = prepare(node, a16.tflite(g), "c")  # its int8 Prepare with TFLite's multipliers
    p: Any = base.params
    if p.in1 != Bcast(1, p.size) or p.in2 != Bcast(1, p.size):
        raise a16.refuse(node, g, "broadcasting")
    a, b, y = (g.t(n) for n in (*node.inputs[:2], node.outputs[0]))
    assert a.quant is not None and b.quant is not None and y.quant is not None
    p16 = add_params(p.size, p.in1, p.in2, a.quant.s, 0, b.quant.s, 0, y.quant.s, 0, p.act_min, p.act_max,
                     left_shift=LEFT_SHIFT)
    if node.attrs.get("subtract"):
        p16 = replace(p16, input2_multiplier=-p16.input2_multiplier)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_add_s16(p16, env[a.name], env[b.name])

    return Prepared("mcu_add_s16", p16, dict(base.operands), golden, macs=base.macs, summary=base.summary)


A16 = a16.Int16(prepare_a16)  # mcu_add_s16 (left_shift 15)
