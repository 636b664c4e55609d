"""What the int16-activation twins (mcu_*_s16, TFLite's int16x8 mode) share.

TFLite int16x8: int16 activations with zero point 0, int8 symmetric weights, int64 bias and
accumulator. The output stage is TFLite's 64-bit MultiplyByQuantizedMultiplier (CMSIS-NN
arm_nn_requantize_s64): the Q31 multiplier reduced to 16 bits, one rounding half up,

    reduced = multiplier < 0x7FFF0000 ? (multiplier + 2^15) >> 16 : 0x7FFF
    out     = (acc * reduced + 2^(14 - shift)) >> (15 - shift)          shift in [-31, 7]

then the int32 result + output_offset (0), clamped to [act_min, act_max] within int16.
The C twin is mcu_requantize_s64() in mcu_runtime/include/mcu_nn_s16.h.
"""
from __future__ import annotations

import numpy as np

from emitter.quant import wrap_int32

INT16_MIN, INT16_MAX = -32768, 32767
SHIFT_MIN, SHIFT_MAX = -31, 7  # TFLite's range for the 64-bit requantization
ACC_BITS = 47  # |acc| < 2^47 (TFLite's bound; acc * reduced multiplier stays inside int64)


def reduced_multiplier(multiplier: np.ndarray) -> np.ndarray:
    m = np.asarray(multiplier, np.int64)
    return np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)


def requantize_s64(acc: np.ndarray, multiplier: np.ndarray | int, shift: np.ndarray | int) -> np.ndarray:
    """acc (int64 values, |acc| < 2^47) -> int32 values (as int64), TFLite's 64-bit rule."""
    acc = np.asarray(acc, np.int64)
    shift = np.asarray(shift, np.int64)
    total = 15 - shift
    out = (acc * reduced_multiplier(np.asarray(multiplier)) + (np.int64(1) << (total - 1))) >> total
    return wrap_int32(out)


def check_requant(multiplier: np.ndarray, shift: np.ndarray) -> None:
    m, s = np.asarray(multiplier, np.int64), np.asarray(shift, np.int64)
    if np.any(m < 0) or np.any(s < SHIFT_MIN) or np.any(s > SHIFT_MAX):
        raise ValueError(f"int16 requantization needs multiplier >= 0 and shift in [{SHIFT_MIN}, "
                         f"{SHIFT_MAX}], got {m.min()}..{m.max()}, {s.min()}..{s.max()}")


def check_clamp(act_min: int, act_max: int) -> None:
    if not INT16_MIN <= act_min <= act_max <= INT16_MAX:
        raise ValueError(f"clamp [{act_min}, {act_max}] is not a sub-range of int16")


def output_stage_s16(acc: np.ndarray, bias: np.ndarray | None, multiplier: np.ndarray, shift: np.ndarray,
                     output_offset: int, act_min: int, act_max: int) -> np.ndarray:
    """acc [..., C] int64 -> int16: + int64 bias, requantize per channel, + offset, clamp."""
    check_requant(multiplier, shift)
    check_clamp(act_min, act_max)
    if bias is not None:
        acc = acc + np.asarray(bias, np.int64)
    if np.any(np.abs(acc) >= 1 << ACC_BITS):
        raise ValueError("int16 accumulator exceeds 2^47")
    out = requantize_s64(acc, multiplier, shift) + output_offset
    return np.clip(out, act_min, act_max).astype(np.int16)


CMSIS_MAX_TAPS = 511  # CMSIS-NN's s16 kernels sum products in int32 before the int64 bias: exact below 512 taps


def cmsis_taps_problem(taps: int) -> str | None:
    """Why CMSIS-NN's s16 convolution / FC may differ from TFLite's int64 accumulation, if it may."""
    if taps > CMSIS_MAX_TAPS:
        return (f"int16 activations: {taps} products per output can overflow CMSIS-NN's int32 partial sum "
                f"(exact up to {CMSIS_MAX_TAPS}); the portable kernel accumulates in int64 as TFLite does")
    return None
