"""Twin of mcu_layernorm_s8: int8 LayerNormalization over the last axis in integer arithmetic (no
float at run time; the float island mcu_layernorm_f32_s8 is the fallback).

Per row of n raw int8 values q_i (the input zero point cancels: the statistics are shift-invariant):
  S   = sum q_i                          (int32)
  Q   = sum q_i^2                        (int32, n <= MAX_ROW)
  V   = n * Q - S^2                      (int64, = n^2 * variance in input quanta^2, exact)
  D_i = n * q_i - S                      (int32, = n * (q_i - mean), exact)
  W   = (V << var_shift) + (eps_mantissa << eps_shift)
                                         (uint64 < 2^62; the epsilon term is n^2 eps / s_in^2 << var_shift)
  t   = the largest t >= 0 with W << 2t < 2^62;  r = isqrt(W << 2t) in [2^30, 2^31)  (floor)
  inv = (2^60 + r / 2) / r               (int32, in (2^29, 2^30])
  u_i = rshift(D_i * inv, 36 - var_shift / 2 - t)     normalized value in Q24 (int32)
  y_i = rshift(u_i * multiplier_i, 39 - shift_i)      u * gamma_i / s_out in Q16
  out_i = clamp(zero_point + rshift(y_i + bias_i, 16), act_min, act_max)
rshift(a, k) = (a + 2^(k-1)) >> k rounds half up (arithmetic shift). V == 0 (a constant row) gives
u_i = 0 (every D_i is 0), epsilon 0 too. gamma_i / s_out = multiplier_i * 2^(shift_i - 31)
(multiplier_i may be negative, 0 for gamma 0), bias_i = beta_i / s_out in Q16. The params come from
emitter/ops/layernorm.py. Cost: per row one integer square root and one 64-bit division; per element
two int32 x int32 -> int64 products and three rounding shifts.
CMSIS-NN has no such kernel.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import check_range

MAX_ROW = 8192  # D_i < 2^21, Q < 2^27, |u_i| < 2^31
U_BITS = 24  # fraction bits of u_i
Y_BITS = 16  # fraction bits of y_i and bias_i


@dataclass(frozen=True, eq=False)
class LayerNormParams:
    CTYPE: ClassVar[str] = "mcu_layernorm_params_t"
    rows: int
    row_size: int
    var_shift: int  # even, in [0, 60]
    eps_mantissa: int  # in [0, 2^31)
    eps_shift: int  # in [0, 30]
    output_zero_point: int
    act_min: int
    act_max: int
    multiplier: np.ndarray  # int32 [row_size]
    shift: np.ndarray  # int32 [row_size], each in [-23, 38]
    bias: np.ndarray | None  # int32 [row_size] (Q16), None -> NULL (no bias)


def rshift_round(a: np.ndarray, k: np.ndarray | int) -> np.ndarray:
    """a / 2^k rounded half up ((a + 2^(k-1)) >> k, arithmetic), for int64 a and 1 <= k <= 62."""
    a = np.asarray(a, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    return (a + (np.int64(1) << (k - 1))) >> k


def check(p: LayerNormParams) -> None:
    check_range("rows", p.rows, 1, (1 << 31) - 1)
    check_range("row_size", p.row_size, 1, MAX_ROW)
    check_range("var_shift", p.var_shift, 0, 60)
    if p.var_shift % 2:
        raise ValueError(f"var_shift={p.var_shift} must be even")
    check_range("eps_mantissa", p.eps_mantissa, 0, (1 << 31) - 1)
    check_range("eps_shift", p.eps_shift, 0, 30)
    check_range("output_zero_point", p.output_zero_point, -128, 127)
    check_range("act_min", p.act_min, -128, p.act_max)
    check_range("act_max", p.act_max, p.act_min, 127)
    n = p.row_size
    vmax = n * n * (1 << 14)
    if (vmax << p.var_shift) + (p.eps_mantissa << p.eps_shift) >= 1 << 62:
        raise ValueError(f"var_shift={p.var_shift}, eps {p.eps_mantissa} << {p.eps_shift}: "
                         f"the variance term of a row of {n} can reach 2^62")
    for what, v in (("multiplier", p.multiplier), ("shift", p.shift), ("bias", p.bias)):
        if v is None and what == "bias":
            continue
        if not isinstance(v, np.ndarray) or v.dtype != np.int32 or v.shape != (n,):
            found = f"{v.dtype} {v.shape}" if isinstance(v, np.ndarray) else type(v).__name__
            raise ValueError(f"{what}: expected an int32 array of shape ({n},), found {found}")
    if p.shift.min() < -23 or p.shift.max() > 38:
        raise ValueError(f"shift outside [-23, 38]: {int(p.shift.min())}..{int(p.shift.max())}")


def row_scale(v: int, p: LayerNormParams) -> tuple[int, int]:
    """(inv, k) of one row: u_i = rshift(D_i * inv, k); (0, 0) for V == 0."""
    if v == 0:
        return 0, 0
    w = (v << p.var_shift) + (p.eps_mantissa << p.eps_shift)
    t = (62 - w.bit_length()) // 2
    r = math.isqrt(w << (2 * t))
    inv = ((1 << 60) + r // 2) // r
    return inv, 36 - p.var_shift // 2 - t


def mcu_layernorm_s8(p: LayerNormParams, x: np.ndarray) -> np.ndarray:
    """int8 [rows, row_size] -> int8 [rows, row_size]."""
    check(p)
    n = p.row_size
    q = np.asarray(x).reshape(p.rows, n).astype(np.int64)
    s = q.sum(axis=1)
    v = n * (q * q).sum(axis=1) - s * s
    out = np.empty((p.rows, n), dtype=np.int64)
    mult, shift = p.multiplier.astype(np.int64), p.shift.astype(np.int64)
    bias = np.zeros(n, np.int64) if p.bias is None else p.bias.astype(np.int64)
    for r in range(p.rows):
        inv, k = row_scale(int(v[r]), p)
        d = n * q[r] - s[r]
        u = rshift_round(d * inv, k) if inv else np.zeros(n, np.int64)
        y = rshift_round(u * mult, 39 - shift)
        out[r] = p.output_zero_point + rshift_round(y + bias, Y_BITS)
    return np.clip(out, p.act_min, p.act_max).astype(np.int8)


KERNEL = Kernel("mcu_layernorm_s8", exact_in_place=True)
