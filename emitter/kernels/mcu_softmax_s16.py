"""Twin of mcu_softmax_s16: TFLite int16 SOFTMAX (reference_ops::SoftmaxInt16), zero points 0, over rows:

  d    = requant(in - max(row), input_multiplier, input_shift)      [-65535, 0] is [-10, 0]
  e    = lut(exp_lut, clamp(d + 32767))                             exp(d), Q0.15
  sum  = sum of e over the row;  h = clz32(sum)
  x    = clamp((((sum << (h - 1)) + 2^13) >> 14) - 3 * 2^15)        sum normalized to [1, 2), centred
  r    = lut(recip_lut, x)                                          1 / sum (normalized), Q0.15
  mode 0 (output scale 2^-15, TFLite's): out = clamp((e * r + 2^(30 - h)) >> (31 - h), 0, 32767)
  mode 1 (another scale): out = RoundingDivideByPOT(SRDHM(e * r, output_multiplier), 31 - h - output_shift)
lut(t, v) interpolates the 513-entry int16 table t: base t[256 + (v >> 7)], slope to the next entry times
(v & 127), rounded: base + ((slope * (v & 127) + 64) >> 7). Mode 1 requantizes the unrounded product e * r
once (TFLite's double rounding, half away from zero). Tables: emitter/ops/a16_lut.py (TFLite's gen_lut).
Params: mcu_softmax_s16_params_t. CMSIS-NN: arm_softmax_s16 (mode 0); mcugen keeps the portable kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.calls import Prepared
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import check_range
from emitter.quant import requantize, rounding_divide_by_pot, srdhm

LUT_SIZE = 513
MAX_ROW = 65536  # the row sum of Q0.15 exponentials stays below 2^31


@dataclass(frozen=True)
class SoftmaxS16Params:
    CTYPE: ClassVar[str] = "mcu_softmax_s16_params_t"
    rows: int
    row_size: int
    input_multiplier: int
    input_shift: int
    output_mode: int
    output_multiplier: int
    output_shift: int


def lut_lookup(lut: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The 513-entry int16 table interpolated at int16 values v (int64 arrays)."""
    t = np.asarray(lut, np.int64)
    v = np.asarray(v, np.int64)
    index = 256 + (v >> 7)
    base = t[index]
    return base + (((t[index + 1] - base) * (v & 0x7F) + 64) >> 7)


def check(p: SoftmaxS16Params, exp_lut: np.ndarray, recip_lut: np.ndarray, x: np.ndarray) -> None:
    check_range("rows", p.rows, 1, (1 << 31) - 1)
    check_range("row_size", p.row_size, 1, MAX_ROW)
    check_range("input_multiplier", p.input_multiplier, 0, (1 << 31) - 1)
    check_range("input_shift", p.input_shift, -31, 15)
    check_range("output_mode", p.output_mode, 0, 1)
    check_range("output_multiplier", p.output_multiplier, 0, (1 << 31) - 1)
    check_range("output_shift", p.output_shift, -31, 14)
    for name, t in (("exp_lut", exp_lut), ("recip_lut", recip_lut)):
        if np.shape(t) != (LUT_SIZE,) or np.asarray(t).dtype != np.int16 or np.asarray(t).min() < 0:
            raise ValueError(f"{name}: expected a non-negative int16 [{LUT_SIZE}]")
    if int(lut_lookup(exp_lut, np.array(32767))) < 1 << 14:
        raise ValueError("exp_lut: exp(0) must be at least 0.5 (16384)")
    if x.size != p.rows * p.row_size:
        raise ValueError(f"softmax input: expected {p.rows} x {p.row_size}, found {x.size} elements")


def mcu_softmax_s16(p: SoftmaxS16Params, exp_lut: np.ndarray, recip_lut: np.ndarray, x: np.ndarray) -> np.ndarray:
    """int16 [rows * row_size] -> flat int16, softmax over each row."""
    check(p, exp_lut, recip_lut, x)
    xi = np.asarray(x, np.int64).reshape(p.rows, p.row_size)
    d = requantize(xi - xi.max(axis=1, keepdims=True), p.input_multiplier, p.input_shift)
    e = lut_lookup(exp_lut, np.clip(d + 32767, -32768, 32767))
    sums = e.sum(axis=1)
    h = np.array([32 - int(s).bit_length() for s in sums], np.int64)
    shifted = ((sums << (h - 1)) + (1 << 13)) >> 14
    r = lut_lookup(recip_lut, np.clip(shifted - ((1 << 15) + (1 << 16)), -32768, 32767))
    product = e * r[:, None]
    right = (31 - h)[:, None]
    if p.output_mode == 0:
        out = np.clip((product + (np.int64(1) << (right - 1))) >> right, 0, 32767)
    else:
        y = srdhm(product, p.output_multiplier)
        out = np.clip(rounding_divide_by_pot(y, np.minimum(right - p.output_shift, 31)), -32768, 32767)
    return out.astype(np.int16).ravel()


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    conv.refusal = ("int16 Softmax stays portable: "
                    "CMSIS-NN's arm_softmax_s16 has TFLite's 2^-15 output scale only and its own tables")
    return None


KERNEL = Kernel("mcu_softmax_s16", to_cmsis=to_cmsis)
