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


def round_int32(reals: np.ndarray) -> np.ndarray:
    """round_half_away() of every value, saturated to int32 (a bias far beyond int32, e.g. over a
    tiny scale, saturates here, and the accumulator headroom check then refuses it by name)."""
    flat = [min(INT32_MAX, max(INT32_MIN, round_half_away(v))) if math.isfinite(v) else
            (INT32_MAX if v > 0 else INT32_MIN) for v in np.asarray(reals, np.float64).ravel()]
    return np.array(flat, np.int64).astype(np.int32).reshape(np.shape(reals))


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


# ---- onnxruntime numerics (--numerics onnxruntime) ---------------------------------------------
# onnxruntime's integer kernels (MLAS) requantize in float32: y = RNE(float(acc) * scale) + zp with
# scale = float32(float32(s_in * s_w) / s_out), round half to even, saturate. A float32 scale is a
# 24-bit mantissa times a power of two, so it is exactly a Q31 multiplier and a shift; one 64-bit
# product and one round-half-to-even shift then give the rounding of the exact product: the same
# integer as onnxruntime's float computation wherever float(acc) and float(acc) * scale are exact
# or do not land on a tie (see docs/numerics_onnxruntime.md).

ROUND_TFLITE = 0  # mcu_quant_io_t.rounding: TFLite double rounding (the default contract)
ROUND_NEAREST_EVEN = 1  # one rounding of the exact product, ties to even (onnxruntime)
ROUND_NEAREST_NO_TIE = 2  # the same, proven tie-free (fast_round_ok): the DSP/MVE paths run it


def f32_scale(num: float | np.ndarray, *den: float | np.ndarray) -> np.ndarray:
    """num / den... in float32 arithmetic, left to right, as onnxruntime computes its scales."""
    out = np.asarray(num, np.float32)
    for d in den:
        out = (out / np.asarray(d, np.float32)).astype(np.float32)
    return out


def exact_multiplier(real: float) -> tuple[int, int]:
    """A float32 value as multiplier * 2^(shift - 31), multiplier in [2^30, 2^31), exactly (a
    float32 mantissa has 24 bits, so the Q31 multiplier ends in 7 zero bits)."""
    f = float(np.float32(real))
    if f != float(real):
        raise ValueError(f"scale {real!r} is not a float32 value")
    if not math.isfinite(f) or f < 0:
        raise ValueError(f"multiplier {real!r} must be finite and >= 0")
    if f == 0.0:
        return 0, 0
    q, shift = math.frexp(f)
    m = int(q * (1 << 31))
    assert m == q * (1 << 31)
    if shift > 30:
        raise ValueError(f"scale {f} >= 2^30 cannot be requantized")
    return m, shift


def exact_multipliers(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pairs = [exact_multiplier(float(r)) for r in np.asarray(reals, np.float32).ravel()]
    return (np.array([m for m, _ in pairs], dtype=np.int32), np.array([s for _, s in pairs], dtype=np.int32))


def round_shift_even(p: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """p / 2^n rounded half to even, p int64, n in [1, 63] (n >= 63: |p| < 2^62 gives 0)."""
    p = np.asarray(p, np.int64)
    n = np.asarray(n, np.int64)
    big = n >= 63
    n = np.where(big, 1, n)
    q = p >> n
    rem = p & ((np.int64(1) << n) - 1)
    half = np.int64(1) << (n - 1)
    out = q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))
    return np.where(big, 0, out)


def requantize_rne(x: np.ndarray, multiplier: np.ndarray | int, shift: np.ndarray | int) -> np.ndarray:
    """x * multiplier * 2^(shift - 31) rounded half to even (C twin: mcu_requantize_rne), x int32
    values, multiplier in [0, 2^31), shift <= 30; saturated to int32."""
    p = np.asarray(x, np.int64) * np.asarray(multiplier, np.int64)
    return np.clip(round_shift_even(p, 31 - np.asarray(shift, np.int64)), INT32_MIN, INT32_MAX)


NUMERICS = ("tflite", "onnxruntime")


def layer_multipliers(numerics: str, in_s: float, w_s: np.ndarray, out_s: float
                      ) -> tuple[np.ndarray, np.ndarray, int]:
    """(multipliers, shifts, rounding) of a conv/FC output stage with effective scale
    in_s * w_s / out_s: TFLite's (double-precision scale, quantize_multiplier, double rounding)
    or onnxruntime's (float32 scale held exactly, one rounding half to even)."""
    w_s = np.asarray(w_s, np.float64)
    if numerics == "onnxruntime":
        real = f32_scale((np.float32(in_s) * w_s.astype(np.float32)).astype(np.float32), out_s)
        m, s = exact_multipliers(real)
        return m, s, ROUND_NEAREST_EVEN
    m, s = multipliers(in_s * w_s / out_s)
    return m, s, ROUND_TFLITE


def fast_round_ok(multiplier: np.ndarray, shift: np.ndarray, acc_bound: np.ndarray) -> bool:
    """ROUND_NEAREST_EVEN may run as ROUND_NEAREST_NO_TIE, rounding half up, on the fast DSP/MVE
    requantization (mcu_requant2_lift, mcu_requant4_no_tie in mcu_requant.h) when, per channel
    with |acc| <= acc_bound, no acc that matters is a tie and the arithmetic cannot overflow:
    - acc M 2^s / 2^31 (M = m 2^v, m odd) is a tie only if acc has exactly 30 - s - v trailing
      zero bits: impossible when that is negative or 2^(30 - s - v) > |acc|; and a tie matters
      only inside the int8 range, |acc M 2^s / 2^31| <= 256, i.e. |acc| <= 2^(39 - s) / M;
    - shift s <= 0: |acc| < 2^29 - 2^23 (the lifted accumulator stays in [0, 2^30); shift 0
      takes the depthwise fast paths with a lift of 2^29 alone: mcu_requant2_ok_q);
    - shift s > 0: |acc| 2^s < 2^30 (acc << s is multiplied as it is).
    Every multiplier must be > 0."""
    for m64, s64, b64 in zip(np.asarray(multiplier, np.int64).ravel(), np.asarray(shift, np.int64).ravel(),
                             np.broadcast_to(np.asarray(acc_bound, np.int64), np.shape(multiplier)).ravel(),
                             strict=True):
        m, s, b = int(m64), int(s64), int(b64)
        if m <= 0:
            return False  # (a zero scale: the generic loops; mcu_requant2_no_tie assumes M > 0)
        v = (m & -m).bit_length() - 1
        if b >= ((1 << 29) - (1 << 23) if s <= 0 else 1 << (30 - s)):
            return False
        zeros = 30 - s - v
        if zeros >= 0 and 1 << zeros <= min(b, (1 << (39 - s)) // m):
            return False
    return True


def acc_bound(weights: np.ndarray, bias: np.ndarray | None, channels: int) -> np.ndarray:
    """Per output channel, the largest |accumulator| of int8 inputs with any zero point:
    |bias| + 255 * sum |w| (weights grouped by output channel along their first axis)."""
    w = np.abs(np.asarray(weights, np.int64)).reshape(channels, -1).sum(axis=1)
    b = np.zeros(channels, np.int64) if bias is None else np.abs(np.asarray(bias, np.int64)).ravel()
    return b + 255 * w
