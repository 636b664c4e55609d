"""Standalone Relu / Clip and any change of scale or zero point: element-wise requantization.

out = clamp(requant(in - zp_in, s_in / s_out) + zp_out, act_min, act_max), TFLite's Requantize
and quantized Relu. The lowering pass also emits this op for a lone DequantizeLinear ->
QuantizeLinear pair and after pools whose output is quantized differently.
"""
from __future__ import annotations

import numpy as np

from emitter import quant
from emitter.calls import Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Node
from emitter.kernels.common import QuantIO
from emitter.kernels.mcu_requantize_s8 import RequantizeParams, mcu_requantize_s8
from emitter.kernels.mcu_requantize_s8_s16 import mcu_requantize_s8_s16
from emitter.kernels.mcu_requantize_s16 import mcu_requantize_s16
from emitter.kernels.mcu_requantize_s16_s8 import mcu_requantize_s16_s8
from emitter.ops import a16
from emitter.ops.base import LayoutPlan, LowerCtx, QNode, per_tensor, same_layout_plan
from emitter.quant import quantize_multiplier

ONNX_OPS = ("Relu", "Clip")
IR_OPS = ("requantize",)


def lower(ctx: LowerCtx, q: QNode) -> None:
    x = q.inputs[0]
    if x.name is None:
        raise NodeUnsupported("input must be an activation")
    ctx.emit(q, "requantize", [x.name], q.output, {"act_min": q.act_min, "act_max": q.act_max})


def layout(node: Node, g: Graph) -> LayoutPlan:
    return same_layout_plan(node, g)


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    xq, yq = per_tensor(x, "input", node), per_tensor(y, "output", node)
    if g.numerics == "onnxruntime":  # float32 s_in / s_out held exactly, one rounding half to even
        mult, shift = quant.exact_multiplier(float(quant.f32_scale(xq.s, yq.s)))
        rounding = quant.ROUND_NEAREST_EVEN
    else:
        mult, shift = quant.quantize_multiplier(xq.s / yq.s)
        rounding = quant.ROUND_TFLITE
    p = RequantizeParams(y.size, QuantIO(-xq.zp, yq.zp, node.attrs["act_min"], node.attrs["act_max"],
                                         rounding), mult, shift)

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_requantize_s8(p, env[x.name])

    return Prepared("mcu_requantize_s8", p, {"input": TensorArg(x.name), "output": TensorArg(y.name)}, golden)


REQUANTIZE = {("int16", "int16"): (mcu_requantize_s16, "mcu_requantize_s16"),
              ("int8", "int16"): (mcu_requantize_s8_s16, "mcu_requantize_s8_s16"),
              ("int16", "int8"): (mcu_requantize_s16_s8, "mcu_requantize_s16_s8")}


def prepare_a16(node: Node, g: Graph) -> Prepared:
    """TFLite's requantization (32-bit, double rounding) between any two of int8 and int16."""
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    assert x.quant is not None and y.quant is not None
    mult, shift = quantize_multiplier(x.quant.s / y.quant.s)
    if shift > 15:
        raise a16.refuse(node, g, f"a scale ratio {x.quant.s / y.quant.s:.4g} too large to requantize")
    p = RequantizeParams(y.size, QuantIO(-x.quant.zp, y.quant.zp, node.attrs["act_min"], node.attrs["act_max"]),
                         mult, shift)
    fn, kernel = REQUANTIZE[(x.dtype, y.dtype)]

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return fn(p, env[x.name])

    return Prepared(kernel, p, {"input": TensorArg(x.name), "output": TensorArg(y.name)}, golden,
                    summary=f"{x.dtype} -> {y.dtype}")


A16 = a16.Int16(prepare_a16, mixed=True)  # between int8 and int16: mcu_requantize_s8_s16 / _s16_s8 / _s16
