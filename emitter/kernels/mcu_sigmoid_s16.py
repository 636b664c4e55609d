"""Twin of mcu_sigmoid_s16: TFLite int16 LOGISTIC (reference_integer_ops::Logistic, int16), zero points 0.

The input is rescaled to units of 1/(3 * 4096) by Prepare's multiplier and right shift (emitter/ops/a16_lut.py),
then looked up with linear interpolation in the 256-entry sigmoid table (table[i] ~ 65536 * sigmoid(i / 24),
one table step = 512 input units), on |x| with the symmetry sigmoid(-x) = 1 - sigmoid(x):

  x  = (in * input_multiplier + 2^(input_shift - 1)) >> input_shift       (no rounding term for shift 0)
  r  = |x| >> 9 >= 255 ? 0x7FFF << 10 : (t[|x| >> 9] << 9) + (|x| & 511) * (t[.. + 1] - t[..])   sigmoid(|x|), Q0.25
  mode 0 (output scale 2^-15, TFLite's): out = x >= 0 ? (r + 2^9) >> 10 : (2^25 - r + 2^9 - 1) >> 10
  mode 1 (any other output scale):       out = requant(x >= 0 ? r : 2^25 - r, output_multiplier, output_shift)
then clamped to [act_min, act_max]. Mode 1 requantizes the Q0.25 value once (TFLite's 32-bit double rounding,
half away from zero), never the rounded Q0.15 one. CMSIS-NN: arm_nn_activation_s16 covers the power-of-two
input scales of mode 0 only; mcugen keeps the portable kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.calls import Prepared
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import check_range
from emitter.kernels.s16 import check_clamp
from emitter.quant import requantize

TABLE_SIZE = 256


@dataclass(frozen=True)
class ActivationS16Params:
    CTYPE: ClassVar[str] = "mcu_activation_s16_params_t"
    size: int
    input_multiplier: int
    input_shift: int
    output_mode: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int


def check(p: ActivationS16Params, table: np.ndarray, x: np.ndarray) -> None:
    check_range("size", p.size, 1, (1 << 31) - 1)
    check_range("input_multiplier", p.input_multiplier, 1, 32767)
    check_range("input_shift", p.input_shift, 0, 31)
    check_range("output_mode", p.output_mode, 0, 1)
    check_range("output_shift", p.output_shift, -31, 0)
    check_range("output_multiplier", p.output_multiplier, 0, (1 << 31) - 1)
    check_clamp(p.act_min, p.act_max)
    t = np.asarray(table)
    if t.shape != (TABLE_SIZE,) or t.dtype != np.uint16 or np.any(np.diff(t.astype(np.int64)) < 0):
        raise ValueError(f"sigmoid table: expected a non-decreasing uint16 [{TABLE_SIZE}], found {t.dtype} {t.shape}")
    if x.size != p.size:
        raise ValueError(f"input: expected {p.size} elements, found {x.size}")


def rescale(p: ActivationS16Params, x: np.ndarray) -> np.ndarray:
    """The input in units of 1/(3 * 4096), as int32 values in int64."""
    rnd = (1 << (p.input_shift - 1)) if p.input_shift > 0 else 0
    return (np.asarray(x, np.int64).ravel() * p.input_multiplier + rnd) >> p.input_shift


def interpolate(table: np.ndarray, ax: np.ndarray, frac_bits: int, saturated: int) -> np.ndarray:
    """sigmoid(|x|) in Q0.(16 + frac_bits): the table interpolated over frac_bits fraction bits per step."""
    t = np.asarray(table, np.int64)
    index = ax >> frac_bits
    inside = index < TABLE_SIZE - 1
    i = np.where(inside, index, 0)
    lerp = (t[i] << frac_bits) + (ax & ((1 << frac_bits) - 1)) * (t[i + 1] - t[i])
    return np.where(inside, lerp, saturated)


def mcu_sigmoid_s16(p: ActivationS16Params, table: np.ndarray, x: np.ndarray) -> np.ndarray:
    """int16 array of p.size elements -> flat int16 [p.size]."""
    check(p, table, x)
    v = rescale(p, x)
    r = interpolate(table, np.abs(v), 9, 0x7FFF << 10)
    if p.output_mode == 0:
        out = np.where(v >= 0, (r + (1 << 9)) >> 10, ((1 << 25) - r + (1 << 9) - 1) >> 10)
    else:
        out = requantize(np.where(v >= 0, r, (1 << 25) - r), p.output_multiplier, p.output_shift)
    return np.clip(out, p.act_min, p.act_max).astype(np.int16)


EXACT_IN_PLACE = True  # element i is read before element i is written


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    conv.refusal = ("int16 Sigmoid stays portable: "
                    "CMSIS-NN's arm_nn_activation_s16 takes power-of-two input scales and the 2^-15 output scale only")
    return None


KERNEL = Kernel("mcu_sigmoid_s16", exact_in_place=EXACT_IN_PLACE, to_cmsis=to_cmsis)
