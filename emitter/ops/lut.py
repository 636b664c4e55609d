"""Unary element-wise ops as 256-entry int8 lookup tables built at compile time.

table[i] = clamp(round_half_away(f(s_in * (i - 128 - zp_in)) / s_out) + zp_out): the method of
TFLite's int8 LUT kernels (float evaluation per input code, here in double precision). Any
function of one int8 input is exactly one table, so these ops need no float at run time:

    # Sigmoid, Tanh, HardSigmoid, HardSwish, LeakyRelu, Elu, Selu, Celu, Gelu, Erf, Exp, Softplus,
    # Softsign, Neg, Abs, Mish, ThresholdedRelu, Sqrt, Reciprocal, Pow (constant scalar exponent)
    #                                                                      -> mcu_lut_s8
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from emitter.calls import ConstArg, IntArg, Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Node
from emitter.kernels.mcu_lut_s8 import mcu_lut_s8
from emitter.ops import a16
from emitter.ops.a16_lut import LUT_FUNCTIONS, lut_rule
from emitter.ops.base import LayoutPlan, LowerCtx, QNode, same_layout_plan
from emitter.quant import round_half_away

Fn = Callable[[float], float]


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v)) if v >= 0 else math.exp(v) / (1.0 + math.exp(v))


def _softplus(v: float) -> float:
    return v + math.log1p(math.exp(-v)) if v > 0 else math.log1p(math.exp(v))


def _gelu(a: dict[str, Any]) -> Fn:
    approx = a.get("approximate", b"none")
    approx = approx.decode() if isinstance(approx, bytes) else approx
    if approx == "tanh":
        return lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    return lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2)))


def _exp(v: float) -> float:
    return math.exp(min(v, 700.0))


def _sqrt(v: float) -> float:
    return math.sqrt(v) if v >= 0 else 0.0  # NaN in float: the zero point, as the float islands give it


def _reciprocal(v: float) -> float:
    return 1.0 / v if v != 0 else math.inf  # IEEE 1 / +0: the entry saturates


def _pow(a: dict[str, Any]) -> Fn:
    e = a["exponent"]

    def f(v: float) -> float:
        if v == 0 and e < 0:
            return math.inf
        try:
            r = v ** e
        except OverflowError:
            return math.inf if v > 0 or float(e).is_integer() and int(e) % 2 == 0 else -math.inf
        return r if isinstance(r, float) else 0.0  # a negative base, fractional exponent: NaN -> zero point

    return f


# ONNX op -> (attribute defaults, builder of f from the attributes)
FUNCTIONS: dict[str, tuple[dict[str, Any], Callable[[dict[str, Any]], Fn]]] = {
    "Sigmoid": ({}, lambda a: _sigmoid),
    "Tanh": ({}, lambda a: math.tanh),
    "HardSigmoid": ({"alpha": 0.2, "beta": 0.5},
                    lambda a: lambda v: max(0.0, min(1.0, a["alpha"] * v + a["beta"]))),
    "HardSwish": ({}, lambda a: lambda v: v * max(0.0, min(1.0, v / 6.0 + 0.5))),
    "LeakyRelu": ({"alpha": 0.01}, lambda a: lambda v: v if v >= 0 else a["alpha"] * v),
    "Elu": ({"alpha": 1.0}, lambda a: lambda v: v if v >= 0 else a["alpha"] * math.expm1(v)),
    "Celu": ({"alpha": 1.0},  # exp's argument capped: beyond it min() picks 0 or the term saturates anyway
             lambda a: lambda v: max(0.0, v) + min(0.0, a["alpha"] * math.expm1(min(v / a["alpha"], 700.0)))),
    "Selu": ({"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875},
             lambda a: lambda v: a["gamma"] * (v if v > 0 else a["alpha"] * math.expm1(v))),
    "ThresholdedRelu": ({"alpha": 1.0}, lambda a: lambda v: v if v > a["alpha"] else 0.0),
    "Gelu": ({"approximate": b"none"}, _gelu),
    "Erf": ({}, lambda a: math.erf),
    "Exp": ({}, lambda a: _exp),
    "Softplus": ({}, lambda a: _softplus),
    "Softsign": ({}, lambda a: lambda v: v / (1.0 + abs(v))),
    "Mish": ({}, lambda a: lambda v: v * math.tanh(_softplus(v))),
    "Neg": ({}, lambda a: lambda v: -v),
    "Abs": ({}, lambda a: abs),
    "Sqrt": ({}, lambda a: _sqrt),
    "Reciprocal": ({}, lambda a: _reciprocal),
    "Pow": ({"exponent": None}, _pow),  # the exponent is the node's constant second input
}
ONNX_OPS = tuple(FUNCTIONS)
IR_OPS = ("lut",)


def table(fn: Fn, s_in: float, zp_in: int, s_out: float, zp_out: int,
          act_min: int = -128, act_max: int = 127) -> np.ndarray:
    """The 256 entries, in double precision and saturated to [act_min, act_max] before any integer
    conversion: a function value far beyond the output range (a tiny output scale, an infinite
    value) saturates. A value that is not a number is refused, naming the input code."""
    out = []
    for c in range(-128, 128):
        real = s_in * (c - zp_in)
        try:
            v = fn(real) / s_out
        except (OverflowError, ValueError, ZeroDivisionError) as exc:
            raise NodeUnsupported(f"f({real:g}) (input code {c}) cannot be evaluated ({exc}); "
                                  "check the input scale and the attributes") from None
        if math.isnan(v):
            raise NodeUnsupported(f"f({real:g}) (input code {c}) / output scale {s_out:g} is not a number; "
                                  "check the scales and the attributes")
        lo, hi = act_min - zp_out, act_max - zp_out  # beyond these the entry saturates anyway
        out.append(act_min if v <= lo else act_max if v >= hi else round_half_away(v) + zp_out)
    return np.clip(np.array(out, dtype=np.int64), act_min, act_max).astype(np.int8)


def exponent(q: QNode) -> float:
    """Pow's exponent: a constant scalar (dequantized where onnxruntime quantized it)."""
    e = q.inputs[1] if len(q.inputs) > 1 else None
    if e is None or e.data is None or e.data.size != 1:
        raise NodeUnsupported("Pow needs a constant scalar exponent")
    v = float(np.asarray(e.data, dtype=np.float64).ravel()[0])
    if e.quant is not None:
        v = (v - float(e.quant.zero_point.ravel()[0])) * float(e.quant.scale.ravel()[0])
    return float(np.float32(v))


def lower(ctx: LowerCtx, q: QNode) -> None:
    x = q.inputs[0]
    if x.name is None or x.quant is None:
        raise NodeUnsupported("input must be an int8 activation")
    defaults, build = FUNCTIONS[q.op_type]
    unknown = set(q.attrs) - set(defaults)
    if unknown:
        raise NodeUnsupported(f"unknown attributes {sorted(unknown)}")
    if ctx.tensors[x.name].dtype == "int16":  # TFLite's int16 kernels, no table here (emitter/ops/a16_lut.py)
        ctx.emit(q, "lut", [x.name], q.output, {"function": q.op_type, "act_min": q.act_min, "act_max": q.act_max})
        return
    attrs = {**defaults, **q.attrs}
    if q.op_type == "Pow":
        attrs["exponent"] = exponent(q)
    fn = build(attrs)
    t = table(fn, x.quant.s, x.quant.zp, q.out_quant.s, q.out_quant.zp, q.act_min, q.act_max)
    ctx.emit(q, "lut", [x.name], q.output, {"table": t, "function": q.op_type})


def layout(node: Node, g: Graph) -> LayoutPlan:
    return same_layout_plan(node, g)


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    tab = node.attrs["table"]

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_lut_s8(tab, env[x.name])

    return Prepared("mcu_lut_s8", None, {"size": IntArg(y.size), "table": ConstArg("table", tab),
                                         "input": TensorArg(x.name), "output": TensorArg(y.name)}, golden,
                    summary=node.attrs["function"])


def prepare_a16(node: Node, g: Graph) -> Prepared:
    """Sigmoid, Tanh over int16: TFLite's int16 table kernels, their own Prepare (emitter/ops/a16_lut.py)."""
    if node.attrs["function"] not in LUT_FUNCTIONS:
        raise a16.refuse(node, g)
    return lut_rule(node, g)


A16 = a16.Int16(prepare_a16)  # mcu_sigmoid_s16 / mcu_tanh_s16
