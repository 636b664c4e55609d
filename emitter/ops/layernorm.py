"""LayerNormalization over the last axis in integer arithmetic (mcu_layernorm_s8), the float island
(mcu_layernorm_f32_s8, emitter/ops/float_island.py) where the integer kernel's ranges do not hold.

    # LayerNormalization(DQ(x)) -> Q, last axis, row <= 8192, gamma/s_out < 2^38, |beta/s_out| < 2^15
    #                                           -> mcu_layernorm_s8 (no float at run time)
    # otherwise                                 -> mcu_layernorm_f32_s8 (float island)

Exact statistics in integers (the mean and the variance of each row, times n and n^2), 1/sqrt by an
integer square root and one 64-bit division per row, the normalized value in Q24; gamma_i / s_out
as a per-element multiplier and shift, beta_i / s_out in Q16, one rounding at the end. Its error
against the real-number formula is below 10^-4 quanta, so it stays within 1 quantum of
onnxruntime's float32 LayerNormalization (measured: 0 or 1, tests/test_op_cases.py).
"""
from __future__ import annotations

import math

import numpy as np

from emitter.calls import Prepared, TensorArg
from emitter.errors import NodeUnsupported, QuantError
from emitter.ir import Graph, Layout, Node
from emitter.kernels.mcu_layernorm_s8 import MAX_ROW, Y_BITS, LayerNormParams, mcu_layernorm_s8
from emitter.ops.base import LayoutPlan, LowerCtx, QNode, per_tensor
from emitter.ops.float_island import real
from emitter.quant import round_half_away

ONNX_OPS = ("LayerNormalization",)
IR_OPS = ("layernorm",)
LIMIT = 1 << 62


def _epsilon_term(e: float) -> tuple[int, int]:
    """e >= 0 as mantissa << shift, mantissa < 2^31 (shift <= 30, else QuantError)."""
    if e < (1 << 31) - 0.5:
        return round_half_away(e), 0
    shift = math.frexp(e)[1] - 31
    m = round_half_away(e / 2.0 ** shift)
    if m >= 1 << 31:
        m, shift = m // 2, shift + 1
    if shift > 30:
        raise QuantError(f"epsilon term {e:g} too large for the integer layer norm")
    return m, shift


def _gamma(g: float) -> tuple[int, int]:
    """g = multiplier * 2^(shift - 31): frexp, round half away, the 2^31 fix-up; |g| < 2^-24 -> 0."""
    if g == 0.0 or not math.isfinite(g):
        if not math.isfinite(g):
            raise QuantError(f"gamma / output scale {g!r} is not finite")
        return 0, 0
    mant, shift = math.frexp(g)
    m = round_half_away(mant * (1 << 31))
    if abs(m) == 1 << 31:
        m, shift = m // 2, shift + 1
    if shift < -23:
        return 0, 0
    if shift > 38:
        raise QuantError(f"gamma / output scale {g:g} is too large for the integer layer norm")
    return m, shift


def layernorm_params(rows: int, row_size: int, s_in: float, epsilon: float, gamma: np.ndarray,
                     beta: np.ndarray | None, s_out: float, zp_out: int, act_min: int,
                     act_max: int) -> LayerNormParams:
    """The integer kernel's constants from float32 scales, epsilon, gamma and beta (ONNX Scale/B as
    onnxruntime dequantizes them). QuantError where a range does not hold (the float island then)."""
    n = row_size
    if not 1 <= n <= MAX_ROW:
        raise QuantError(f"a row of {n} elements: the integer layer norm takes 1 to {MAX_ROW}")
    si, so, eps = (float(np.float32(v)) for v in (s_in, s_out, epsilon))
    if not (si > 0 and so > 0 and math.isfinite(si) and math.isfinite(so)) or not eps >= 0:
        raise QuantError(f"LayerNormalization scales {s_in!r} -> {s_out!r}, epsilon {epsilon!r}")
    e_real = n * n * eps / (si * si)  # n^2 * epsilon in input quanta^2
    vmax = n * n << 14
    for f in range(60, -1, -2):
        if vmax << f >= LIMIT:
            continue
        try:
            m, sh = _epsilon_term(e_real * 2.0 ** f)
        except QuantError:
            continue
        if (vmax << f) + (m << sh) < LIMIT:
            break
    else:
        raise QuantError(f"epsilon {eps:g} over input scale {si:g} is too large for the integer layer norm")
    g32 = np.asarray(gamma, dtype=np.float32).reshape(n).astype(np.float64)
    mult_shift = [_gamma(float(v) / so) for v in g32]
    bias = None
    if beta is not None:
        b = [round_half_away(float(v) / so * (1 << Y_BITS))
             for v in np.asarray(beta, dtype=np.float32).reshape(n).astype(np.float64)]
        if any(abs(v) >= 1 << 31 for v in b):
            raise QuantError("beta / output scale beyond 2^15 quanta")
        bias = np.array(b, dtype=np.int32)
    return LayerNormParams(rows=rows, row_size=n, var_shift=f, eps_mantissa=m, eps_shift=sh,
                           output_zero_point=zp_out, act_min=act_min, act_max=act_max,
                           multiplier=np.array([v[0] for v in mult_shift], dtype=np.int32),
                           shift=np.array([v[1] for v in mult_shift], dtype=np.int32), bias=bias)


def lower(ctx: LowerCtx, q: QNode) -> None:
    x = q.inputs[0]
    if x.name is None or x.quant is None:
        raise NodeUnsupported("input must be an int8 activation")
    if len(q.onnx.output) > 1 and any(q.onnx.output[1:]):
        raise NodeUnsupported("the Mean/InvStdDev outputs of LayerNormalization are not supported")
    unknown = set(q.attrs) - {"axis", "epsilon", "stash_type"}
    if unknown:
        raise NodeUnsupported(f"unknown attributes {sorted(unknown)}")
    rank = len(x.shape)
    axis = int(q.attrs.get("axis", -1))
    if axis % rank != rank - 1 or int(q.attrs.get("stash_type", 1)) != 1:
        raise NodeUnsupported(f"LayerNormalization over axis {axis}: only the last axis is supported")
    n = x.shape[-1]
    gamma = np.broadcast_to(real(q.inputs[1], "Scale").ravel(), (n,)).astype(np.float32)
    beta = None
    if len(q.inputs) > 2 and q.inputs[2].shape:
        beta = np.broadcast_to(real(q.inputs[2], "B").ravel(), (n,)).astype(np.float32)
    epsilon = float(q.attrs.get("epsilon", 1e-5))
    attrs = {"epsilon": epsilon, "gamma": gamma, "beta": beta, "act_min": q.act_min, "act_max": q.act_max}
    op = "layernorm"
    try:
        layernorm_params(1, n, x.quant.s, epsilon, gamma, beta, q.out_quant.s,
                         q.out_quant.zp, q.act_min, q.act_max)
    except QuantError:
        op = "layernorm_f32"  # the float island (emitter/ops/float_island.py)
    ctx.emit(q, op, [x.name], q.output, attrs)


def layout(node: Node, g: Graph) -> LayoutPlan:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    return LayoutPlan((Layout.identity(x.shape),), Layout.identity(y.shape))


def prepare(node: Node, g: Graph, isa: str = "any") -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    qx, qy = per_tensor(x, "input", node), per_tensor(y, "output", node)
    n = x.shape[-1]
    p = layernorm_params(x.size // n, n, qx.s, node.attrs["epsilon"], node.attrs["gamma"],
                         node.attrs["beta"], qy.s, qy.zp, node.attrs["act_min"], node.attrs["act_max"])

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_layernorm_s8(p, env[x.name].reshape(-1, n)).ravel()

    return Prepared("mcu_layernorm_s8", p, {"input": TensorArg(x.name), "output": TensorArg(y.name)},
                    golden, summary="integer layer normalization")
