"""Twin of mcu_eltwise_f32_s8: an int8 binary op computed in float32 (a float island, for ONNX
Add/Sub/Mul/Div/Min/Max left in float between DequantizeLinear and QuantizeLinear).

With x1 = input1[(i // in1.inner) % in1.period] and x2 likewise, every step a single correctly
rounded float32 operation, exactly as the C kernel:
  a = input1_scale * float32(x1 - input1_zero_point)
  b = input2_scale * float32(x2 - input2_zero_point)
  r = a op b                       (min: a < b ? a : b, max: a > b ? a : b; x / 0 -> inf or nan)
  out = quantize(r) = clamp(round_half_away(clamp(r * output_inv_scale, -256, 256))
                            + output_zero_point, act_min, act_max),   NaN -> output_zero_point
round_half_away(c) is float32 c +- 0.5 truncated toward zero, as the C `(int32_t)(c + 0.5f)`.
The params (float32 scales, the output scale as its reciprocal) come from ops/float_island.py.
CMSIS-NN has no such kernel.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.kernels.base import Kernel
from emitter.kernels.common import Bcast, broadcast_operand, check_range

F32 = np.float32
F32_ADD, F32_SUB, F32_MUL, F32_DIV, F32_MIN, F32_MAX = range(6)  # MCU_F32_* in mcu_nn.h


@dataclass(frozen=True)
class EltwiseF32Params:
    """op: one of the F32_* codes above."""
    CTYPE: ClassVar[str] = "mcu_eltwise_f32_params_t"
    size: int
    in1: Bcast
    in2: Bcast
    op: int
    input1_scale: float
    input1_zero_point: int
    input2_scale: float
    input2_zero_point: int
    output_inv_scale: float
    output_zero_point: int
    act_min: int
    act_max: int


def check_scale(what: str, value: float) -> None:
    """A scale-like float field of the C struct: finite and > 0 as a float32."""
    v = float(np.float32(value))
    if not (v > 0.0 and math.isfinite(v)):
        raise ValueError(f"{what}={value!r} must be finite and > 0 as a float32")


def quantize_f32(r: np.ndarray, output_inv_scale: float, output_zero_point: int, act_min: int,
                 act_max: int) -> np.ndarray:
    """float32 results -> int8, as the C kernels' shared tail (NaN -> the zero point)."""
    with np.errstate(all="ignore"):  # overflow to inf: saturates below
        v = np.asarray(r, dtype=F32) * F32(output_inv_scale)
    nan = np.isnan(v)
    c = np.where(nan, F32(0.0), v)
    c = np.where(c < F32(-256.0), F32(-256.0), np.where(c > F32(256.0), F32(256.0), c))
    q = np.where(c >= F32(0.0), c + F32(0.5), c - F32(0.5)).astype(np.int32)  # truncates
    q = np.where(nan, 0, q).astype(np.int64)
    return np.clip(q + output_zero_point, act_min, act_max).astype(np.int8)


def mcu_eltwise_f32_s8(p: EltwiseF32Params, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Flat int8 operands (period elements each) -> flat int8 [p.size]."""
    check_range("size", p.size, 1, (1 << 31) - 1)
    check_range("op", p.op, F32_ADD, F32_MAX)
    check_scale("input1_scale", p.input1_scale)
    check_scale("input2_scale", p.input2_scale)
    check_scale("output_inv_scale", p.output_inv_scale)
    check_range("input1_zero_point", p.input1_zero_point, -128, 127)
    check_range("input2_zero_point", p.input2_zero_point, -128, 127)
    check_range("output_zero_point", p.output_zero_point, -128, 127)
    check_range("act_min", p.act_min, -128, p.act_max)
    check_range("act_max", p.act_max, p.act_min, 127)
    x1 = broadcast_operand(a, p.in1, p.size, "eltwise_f32 input1") - p.input1_zero_point
    x2 = broadcast_operand(b, p.in2, p.size, "eltwise_f32 input2") - p.input2_zero_point
    with np.errstate(all="ignore"):  # overflow, x / 0, inf - inf: IEEE, as in C; see quantize_f32
        fa = F32(p.input1_scale) * x1.astype(F32)
        fb = F32(p.input2_scale) * x2.astype(F32)
        r = {F32_ADD: lambda: fa + fb, F32_SUB: lambda: fa - fb, F32_MUL: lambda: fa * fb,
             F32_DIV: lambda: fa / fb, F32_MIN: lambda: np.where(fa < fb, fa, fb),
             F32_MAX: lambda: np.where(fa > fb, fa, fb)}[p.op]()
        return quantize_f32(r, p.output_inv_scale, p.output_zero_point, p.act_min, p.act_max)


KERNEL = Kernel("mcu_eltwise_f32_s8")
