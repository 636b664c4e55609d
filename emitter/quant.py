"""All fixed-point math of the numeric contract (TFLite int8 spec, CMSIS-NN double rounding).

Sign conventions, stated once: input_offset = -input_zero_point, output_offset = +output_zero_point;
a shift > 0 is a left shift. Every array function works on int64 numpy arrays holding int32 values
and returns the same, so callers never meet numpy's silent int32 overflow. The C twins live in
mcu_runtime/include/mcu_math.h.
"""
from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def round_half_away(x: float) -> int:
    """C's round(): ties away from zero (TfLiteRound). Never Python's round() (ties to even)."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier: real = multiplier * 2^(shift - 31), multiplier in [2^30, 2^31).

    frexp, round half away from zero, the 1<<31 fix-up, flush of tiny scales to zero and the clamp
    of huge ones, exactly as tensorflow/lite/kernels/internal/quantization_util.cc.
    """
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"multiplier {real!r} must be finite and >= 0")
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = round_half_away(q * (1 << 31))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        return INT32_MAX, 30
    return q_fixed, shift


def wrap_int32(x: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of int64 values to the int32 range (kept as int64)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def srdhm(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul on int32 values held in int64 arrays."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    # a*b of two int32 values fits in int64 except INT32_MIN^2, masked out below.
    ab = np.where(overflow, 0, a) * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    num = ab + nudge
    # C-style division truncating toward zero.
    q = np.where(num >= 0, num >> 31, -((-num) >> 31))
    return np.where(overflow, INT32_MAX, q)


def rounding_divide_by_pot(x: np.ndarray, exponent: np.ndarray | int) -> np.ndarray:
    """x / 2^exponent rounded half away from zero (gemmlowp RoundingDivideByPOT)."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def requantize(x: np.ndarray, multiplier: np.ndarray | int, shift: np.ndarray | int) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier, double rounding (CMSIS-NN arm_nn_requantize)."""
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    shifted = wrap_int32(np.asarray(x, dtype=np.int64) << left)
    return rounding_divide_by_pot(srdhm(shifted, multiplier), right)


def saturate_int8(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -128, 127).astype(np.int8)


def multipliers(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """quantize_multiplier over an array; returns (int32 multipliers, int32 shifts)."""
    pairs = [quantize_multiplier(float(r)) for r in np.asarray(reals, dtype=np.float64).ravel()]
    mult = np.array([m for m, _ in pairs], dtype=np.int32)
    shift = np.array([s for _, s in pairs], dtype=np.int32)
    return mult, shift
