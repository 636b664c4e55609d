"""Mul: TFLite int8 MUL, with scalar/per-channel broadcast."""
from __future__ import annotations

from typing import Any

import numpy as np

from emitter.calls import Prepared, TensorArg
from emitter.errors import QuantError
from emitter.ir import Graph, Node
from emitter.kernels.common import Bcast
from emitter.kernels.mcu_mul_s8 import MulParams, mcu_mul_s8
from emitter.kernels.mcu_mul_s16 import mcu_mul_s16
from emitter.ops import a16, broadcast
from emitter.ops.base import LayoutPlan, LowerCtx, QNode, per_tensor
from emitter.quant import ROUND_TFLITE, layer_multipliers, quantize_multiplier

ONNX_OPS = ("Mul",)
IR_OPS = ("mul",)


def lower(ctx: LowerCtx, q: QNode) -> None:
    broadcast.lower_binary(ctx, q, "mul")


def layout(node: Node, g: Graph) -> LayoutPlan:
    return broadcast.layout(node, g)


def mul_params(size: int, in1: Bcast, in2: Bcast, s1: float, zp1: int, s2: float, zp2: int,
               s_out: float, zp_out: int, act_min: int, act_max: int, numerics: str = "tflite") -> MulParams:
    """TFLite Micro's int8 MUL Prepare from float32 scales (multiplier computed in double), or with
    onnxruntime's numerics (its QDQ Mul is float32 between DequantizeLinear and QuantizeLinear) the
    float32 scale s1 * s2 / s_out held exactly and one rounding half to even: TFLite's double
    rounding leaves only the multiplier's shift (often 7 bits) below the first rounding, so it
    misses onnxruntime by a quantum near every tie, and a LayerNorm's gamma Mul feeds that into
    the whole block."""
    scale1, scale2, scale_out = (float(np.float32(s)) for s in (s1, s2, s_out))
    if min(scale1, scale2, scale_out) <= 0.0:
        raise QuantError(f"MUL scales must be > 0, found {s1!r}, {s2!r} -> {s_out!r}")
    rounding = ROUND_TFLITE
    if numerics == "onnxruntime":
        m, s, rounding = layer_multipliers(numerics, scale1, np.array([scale2]), scale_out)
        mult, shift = int(m[0]), int(s[0])
    else:
        mult, shift = quantize_multiplier(scale1 * scale2 / scale_out)
    return MulParams(size=size, in1=in1, in2=in2, input1_offset=-zp1, input2_offset=-zp2,
                     output_offset=zp_out, output_multiplier=mult, output_shift=shift,
                     act_min=act_min, act_max=act_max, rounding=rounding)


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    a, b, y = g.t(node.inputs[0]), g.t(node.inputs[1]), g.t(node.outputs[0])
    qa, qb, qy = per_tensor(a, "input", node), per_tensor(b, "input", node), per_tensor(y, "output", node)
    ba, arg_a, ca = broadcast.operand(a, y, node, 0)
    bb, arg_b, cb = broadcast.operand(b, y, node, 1)
    p = mul_params(y.size, ba, bb, qa.s, qa.zp, qb.s, qb.zp, qy.s, qy.zp,
                   node.attrs["act_min"], node.attrs["act_max"], g.numerics)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_mul_s8(p, env[a.name] if ca is None else ca, env[b.name] if cb is None else cb)

    return Prepared("mcu_mul_s8", p, {"input1": arg_a, "input2": arg_b, "output": TensorArg(y.name)},
                    golden, macs=y.size)


def prepare_a16(node: Node, g: Graph) -> Prepared:
    base = prepare(node, a16.tflite(g), "c")  # its int8 Prepare with TFLite's multipliers
    p: Any = base.params  # the int8 Prepare's multiplier is TFLite's s_a * s_b / s_out already
    if p.in1 != Bcast(1, p.size) or p.in2 != Bcast(1, p.size):
        raise a16.refuse(node, g, "broadcasting")
    a, b = node.inputs[:2]

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_mul_s16(p, env[a], env[b])

    return Prepared("mcu_mul_s16", p, dict(base.operands), golden, macs=base.macs, summary=base.summary)


A16 = a16.Int16(prepare_a16)  # mcu_mul_s16
