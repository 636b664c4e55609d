"""Sigmoid and Tanh as 256-entry int8 lookup tables built at compile time.

table[i] = clamp(round_half_away(f(s_in * (i - 128 - zp_in)) / s_out) + zp_out): the method of
TFLite's int8 LUT kernels (float evaluation per input code, here in double precision). Any unary
function of one int8 input is one table.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from emitter.golden.lut import mcu_lut_s8
from emitter.ir import Graph, Node
from emitter.ops.base import ConstArg, IntArg, LayoutPlan, Prepared, TensorArg, same_layout_plan
from emitter.passes.lower import LowerCtx, NodeUnsupported, QNode
from emitter.quant import round_half_away

ONNX_OPS = ("Sigmoid", "Tanh")
IR_OPS = ("lut",)
FUNCTIONS: dict[str, Callable[[float], float]] = {
    "Sigmoid": lambda v: 1.0 / (1.0 + math.exp(-v)) if v >= 0 else math.exp(v) / (1.0 + math.exp(v)),
    "Tanh": math.tanh,
}


def table(fn: Callable[[float], float], s_in: float, zp_in: int, s_out: float, zp_out: int,
          act_min: int = -128, act_max: int = 127) -> np.ndarray:
    codes = range(-128, 128)
    vals = [round_half_away(fn(s_in * (c - zp_in)) / s_out) + zp_out for c in codes]
    return np.clip(np.array(vals, dtype=np.int64), act_min, act_max).astype(np.int8)


def lower(ctx: LowerCtx, q: QNode) -> None:
    x = q.inputs[0]
    if x.name is None or x.quant is None:
        raise NodeUnsupported("input must be an int8 activation")
    if q.attrs:
        raise NodeUnsupported(f"unknown attributes {sorted(q.attrs)}")
    t = table(FUNCTIONS[q.op_type], x.quant.s, x.quant.zp, q.out_quant.s, q.out_quant.zp,
              q.act_min, q.act_max)
    ctx.emit(q, "lut", [x.name], q.output, {"table": t, "function": q.op_type})


def layout(node: Node, g: Graph) -> LayoutPlan:
    return same_layout_plan(node, g)


def prepare(node: Node, g: Graph) -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    tab = node.attrs["table"]

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_lut_s8(tab, env[x.name])

    return Prepared("mcu_lut_s8", None, (IntArg(y.size), ConstArg("table", tab), TensorArg(x.name),
                                         TensorArg(y.name)), golden, summary=node.attrs["function"])
