"""Float islands: ops onnxruntime leaves in float between DequantizeLinear and QuantizeLinear.

They run as int8-in / float32-compute / int8-out kernels (IEEE-exact operations only, so the
golden stays bit-exact): on boards with an FPU in hardware, elsewhere in soft-float (the CLI warns).
Unary float functions (Exp, Erf, Gelu, ...) never come here: they are int8 lookup tables (lut.py).

    # DQ(a) / DQ(b) -> Q          -> mcu_eltwise_f32_s8 (Div)
    # LayerNormalization(DQ(x))   -> mcu_layernorm_f32_s8 (last axis), where the integer kernel's
    #                                ranges do not hold (emitter/ops/layernorm.py lowers it)
"""
from __future__ import annotations

import math

import numpy as np

from emitter.calls import Prepared, TensorArg
from emitter.errors import NodeUnsupported, QuantError
from emitter.ir import Graph, Layout, Node
from emitter.kernels.common import Bcast
from emitter.kernels.mcu_eltwise_f32_s8 import (
    F32,
    F32_ADD,
    F32_DIV,
    F32_MAX,
    F32_MIN,
    F32_MUL,
    F32_SUB,
    EltwiseF32Params,
    mcu_eltwise_f32_s8,
)
from emitter.kernels.mcu_layernorm_f32_s8 import LayerNormF32Params, mcu_layernorm_f32_s8
from emitter.ops import broadcast
from emitter.ops.base import LayoutPlan, LowerCtx, QIn, QNode, per_tensor

ONNX_OPS = ("Div",)
IR_OPS = ("eltwise_f32", "layernorm_f32")
OPS = {"Add": F32_ADD, "Sub": F32_SUB, "Mul": F32_MUL, "Div": F32_DIV, "Min": F32_MIN,
       "Max": F32_MAX}


def real(qi: QIn, what: str) -> np.ndarray:
    """A constant's real values (dequantized if quantized)."""
    if qi.data is None:
        raise NodeUnsupported(f"{what} must be a constant")
    if qi.quant is None:
        return qi.data.astype(np.float64)
    axis = qi.quant.axis
    scale = qi.quant.scale if axis is None else qi.quant.scale.reshape(
        [-1 if d == axis else 1 for d in range(qi.data.ndim)])
    zp = qi.quant.zero_point if axis is None else qi.quant.zero_point.reshape(scale.shape)
    return (qi.data.astype(np.float64) - zp) * scale


def lower(ctx: LowerCtx, q: QNode) -> None:
    broadcast.lower_binary(ctx, q, "eltwise_f32", {"op": "Div"})


def layout(node: Node, g: Graph) -> LayoutPlan:
    if node.op == "eltwise_f32":
        return broadcast.layout(node, g)
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    return LayoutPlan((Layout.identity(x.shape),), Layout.identity(y.shape))


def inv_scale(scale: float) -> np.float32:
    """output_inv_scale: 1 / scale as one float32 division of the float32 scale."""
    return F32(1.0) / F32(scale)


def eltwise_f32_params(size: int, in1: Bcast, in2: Bcast, op: str, s1: float, zp1: int,
                       s2: float, zp2: int, s_out: float, zp_out: int, act_min: int,
                       act_max: int) -> EltwiseF32Params:
    """Params for ONNX `op` (Add, Sub, Mul, Div, Min, Max) between DQ and Q: the float32 scales
    as they are, the output scale as its float32 reciprocal."""
    if op not in OPS:
        raise ValueError(f"float eltwise op {op!r} is not one of {sorted(OPS)}")
    scales = [float(np.float32(s)) for s in (s1, s2, s_out)]
    if not all(s > 0.0 and math.isfinite(s) for s in scales):
        raise QuantError(f"{op} scales must be finite and > 0, found {s1!r}, {s2!r} -> {s_out!r}")
    inv = inv_scale(s_out)
    if not math.isfinite(float(inv)):
        raise QuantError(f"{op} output scale {s_out!r} is too small: 1/scale overflows float32")
    return EltwiseF32Params(size=size, in1=in1, in2=in2, op=OPS[op],
                            input1_scale=scales[0], input1_zero_point=zp1,
                            input2_scale=scales[1], input2_zero_point=zp2,
                            output_inv_scale=float(inv), output_zero_point=zp_out,
                            act_min=act_min, act_max=act_max)


def layernorm_f32_params(rows: int, row_size: int, s_in: float, zp_in: int, epsilon: float,
                         gamma: np.ndarray, beta: np.ndarray | None, s_out: float, zp_out: int,
                         act_min: int, act_max: int) -> LayerNormF32Params:
    """Params for ONNX LayerNormalization (axis -1, stash_type 1) between DQ and Q; gamma/beta
    (ONNX Scale/B, float initializers) rounded to float32, the output scale as its float32
    reciprocal."""
    scales = [float(np.float32(s)) for s in (s_in, s_out)]
    if not all(s > 0.0 and math.isfinite(s) for s in scales):
        raise QuantError(f"LayerNormalization scales must be finite and > 0, found {s_in!r} -> "
                         f"{s_out!r}")
    eps = float(np.float32(epsilon))
    if not (eps >= 0.0 and math.isfinite(eps)):
        raise QuantError(f"LayerNormalization epsilon {epsilon!r} must be finite and >= 0")
    inv = inv_scale(s_out)
    if not math.isfinite(float(inv)):
        raise QuantError(f"LayerNormalization output scale {s_out!r} is too small: 1/scale "
                         "overflows float32")
    g = np.ascontiguousarray(np.asarray(gamma, dtype=np.float32).reshape(row_size))
    b = None if beta is None else np.ascontiguousarray(
        np.asarray(beta, dtype=np.float32).reshape(row_size))
    return LayerNormF32Params(rows=rows, row_size=row_size, input_scale=scales[0],
                              input_zero_point=zp_in, epsilon=eps, output_inv_scale=float(inv),
                              output_zero_point=zp_out, act_min=act_min, act_max=act_max,
                              gamma=g, beta=b)


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    y = g.t(node.outputs[0])
    qy = per_tensor(y, "output", node)
    if node.op == "eltwise_f32":
        a, b = g.t(node.inputs[0]), g.t(node.inputs[1])
        qa, qb = per_tensor(a, "input", node), per_tensor(b, "input", node)
        ba, arg_a, ca = broadcast.operand(a, y, node, 0)
        bb, arg_b, cb = broadcast.operand(b, y, node, 1)
        p = eltwise_f32_params(y.size, ba, bb, node.attrs["op"], qa.s, qa.zp, qb.s, qb.zp, qy.s, qy.zp,
                               node.attrs["act_min"], node.attrs["act_max"])

        def golden(env: dict[str, np.ndarray]) -> np.ndarray:
            return mcu_eltwise_f32_s8(p, env[a.name] if ca is None else ca, env[b.name] if cb is None else cb)

        return Prepared("mcu_eltwise_f32_s8", p,
                        {"input1": arg_a, "input2": arg_b, "output": TensorArg(y.name)}, golden,
                        summary=f"float32 {node.attrs['op']}")
    x = g.t(node.inputs[0])
    qx = per_tensor(x, "input", node)
    n = x.shape[-1]
    lp = layernorm_f32_params(x.size // n, n, qx.s, qx.zp, node.attrs["epsilon"], node.attrs["gamma"],
                              node.attrs["beta"], qy.s, qy.zp, node.attrs["act_min"], node.attrs["act_max"])

    def golden_ln(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_layernorm_f32_s8(lp, env[x.name].reshape(-1, n)).ravel()

    return Prepared("mcu_layernorm_f32_s8", lp, {"input": TensorArg(x.name), "output": TensorArg(y.name)},
                    golden_ln,
                    summary="float32 layer normalization")


FLOAT_KERNELS = ("mcu_eltwise_f32_s8", "mcu_layernorm_f32_s8")
