"""Golden of mcu_layernorm_f32_s8: int8 LayerNormalization over the last axis computed in float32
(a float island: ONNX LayerNormalization, stash_type 1, between DequantizeLinear and QuantizeLinear).

Per row of n elements, every step a single correctly rounded float32 operation in the C order
(sums left to right from 0.0f, which a Python loop over the columns reproduces; np.sum would sum
pairwise):
  x_i  = input_scale * float32(q_i - input_zero_point)
  mean = (sum_i x_i) / float32(n)
  var  = (sum_i (x_i - mean) * (x_i - mean)) / float32(n)
  inv  = 1 / sqrt(var + epsilon)
  y_i  = ((x_i - mean) * inv) * gamma_i + beta_i          (no addition when beta is None)
  out_i = quantize_f32(y_i)    (emitter/golden/eltwise_f32.py: NaN -> zero point, half away)
"""
from __future__ import annotations

import math

import numpy as np

from emitter.errors import QuantError
from emitter.golden.add import check_range
from emitter.golden.eltwise_f32 import F32, check_scale, inv_scale, quantize_f32
from emitter.kernel_params import LayerNormF32Params


def _check_vector(what: str, v: np.ndarray, n: int) -> None:
    if not isinstance(v, np.ndarray) or v.dtype != np.float32 or v.shape != (n,):
        found = f"{v.dtype} {v.shape}" if isinstance(v, np.ndarray) else type(v).__name__
        raise ValueError(f"{what}: expected a float32 array of shape ({n},), found {found}")


def mcu_layernorm_f32_s8(p: LayerNormF32Params, x: np.ndarray) -> np.ndarray:
    """int8 [rows, row_size] -> int8 [rows, row_size]."""
    check_range("rows", p.rows, 1, (1 << 31) - 1)
    check_range("row_size", p.row_size, 1, (1 << 31) - 1)
    check_scale("input_scale", p.input_scale)
    check_scale("output_inv_scale", p.output_inv_scale)
    eps = float(np.float32(p.epsilon))
    if not (eps >= 0.0 and math.isfinite(eps)):
        raise ValueError(f"epsilon={p.epsilon!r} must be finite and >= 0 as a float32")
    check_range("input_zero_point", p.input_zero_point, -128, 127)
    check_range("output_zero_point", p.output_zero_point, -128, 127)
    check_range("act_min", p.act_min, -128, p.act_max)
    check_range("act_max", p.act_max, p.act_min, 127)
    _check_vector("gamma", p.gamma, p.row_size)
    if p.beta is not None:
        _check_vector("beta", p.beta, p.row_size)
    q = np.asarray(x).reshape(p.rows, p.row_size).astype(np.int32)
    n = p.row_size
    with np.errstate(all="ignore"):  # overflow, var + eps == 0 -> inf, 0 * inf -> nan: as in C
        xs = F32(p.input_scale) * (q - p.input_zero_point).astype(F32)
        acc = np.zeros(p.rows, dtype=F32)
        for i in range(n):
            acc = acc + xs[:, i]
        mean = acc / F32(n)
        d = xs - mean[:, None]
        acc = np.zeros(p.rows, dtype=F32)
        for i in range(n):
            acc = acc + d[:, i] * d[:, i]
        var = acc / F32(n)
        inv = F32(1.0) / np.sqrt(var + F32(eps))
        y = d * inv[:, None] * p.gamma[None, :]
        if p.beta is not None:
            y = y + p.beta[None, :]
        return quantize_f32(y, p.output_inv_scale, p.output_zero_point, p.act_min, p.act_max)


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
