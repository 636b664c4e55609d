"""Twin of mcu_layernorm_f32_s8: int8 LayerNormalization over the last axis computed in float32
(a float island: ONNX LayerNormalization, stash_type 1, between DequantizeLinear and QuantizeLinear).

Per row of n elements, every step a single correctly rounded float32 operation in the C order
(sums left to right from 0.0f, which a Python loop over the columns reproduces; np.sum would sum
pairwise):
  x_i  = input_scale * float32(q_i - input_zero_point)
  mean = (sum_i x_i) / float32(n)
  var  = (sum_i (x_i - mean) * (x_i - mean)) / float32(n)
  inv  = 1 / sqrt(var + epsilon)
  y_i  = ((x_i - mean) * inv) * gamma_i + beta_i          (no addition when beta is None)
  out_i = quantize_f32(y_i)    (mcu_eltwise_f32_s8.py: NaN -> zero point, half away)
The params come from ops/float_island.py. CMSIS-NN has no such kernel.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import check_range
from emitter.kernels.mcu_eltwise_f32_s8 import F32, check_scale, quantize_f32


@dataclass(frozen=True, eq=False)
class LayerNormF32Params:
    CTYPE: ClassVar[str] = "mcu_layernorm_f32_params_t"
    rows: int
    row_size: int
    input_scale: float
    input_zero_point: int
    epsilon: float
    output_inv_scale: float
    output_zero_point: int
    act_min: int
    act_max: int
    gamma: np.ndarray  # float32 [row_size]
    beta: np.ndarray | None  # float32 [row_size], None -> NULL


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


KERNEL = Kernel("mcu_layernorm_f32_s8")
