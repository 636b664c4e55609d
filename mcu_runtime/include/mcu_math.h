/*
 * mcu_math.h - fixed-point helpers shared by every mcugen int8 kernel.
 *
 * These are the TFLite int8 requantization primitives (gemmlowp rounding), which TFLite Micro's
 * reference kernels and CMSIS-NN implement bit-exactly. emitter/quant.py holds the Python twin of
 * every function here; tests compare the two.
 *
 * Sign conventions, stated once:
 *   input_offset  = -input_zero_point    (added to every int8 input before the MAC)
 *   output_offset = +output_zero_point   (added after requantization)
 *   shift > 0 is a left shift, shift < 0 a right shift; multiplier is Q31 in [2^30, 2^31) or 0.
 */
#ifndef MCU_MATH_H
#define MCU_MATH_H

#include <stdint.h>

#define MCU_INT8_MIN (-128)
#define MCU_INT8_MAX 127

/** Saturate an int32 to [lo, hi]. */
static inline int32_t mcu_clamp_s32(int32_t x, int32_t lo, int32_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/** gemmlowp SaturatingRoundingDoublingHighMul: (a * b + nudge) / 2^31 truncated, nudge = 2^30 for a
 * non-negative product and 1 - 2^30 otherwise; the only overflow (INT32_MIN^2) saturates. */
static inline int32_t mcu_srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    const int64_t ab = (int64_t)a * (int64_t)b;
    const int64_t nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
    /* C division truncates toward zero, exactly as gemmlowp's reference does. */
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/** x / 2^exponent, rounding half away from zero; exponent in [0, 31]. */
static inline int32_t mcu_rounding_divide_by_pot(int32_t x, int32_t exponent)
{
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    /* Arithmetic right shift of a negative value: implementation-defined in C99, arithmetic on
     * every compiler mcugen supports (gcc, clang, arm-none-eabi-gcc). */
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/**
 * TFLite MultiplyByQuantizedMultiplier in the default "double rounding" mode:
 * RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x * 2^left, multiplier), right).
 * The left shift wraps like the two's-complement int32 multiply of the reference kernels,
 * without the undefined behaviour of a signed overflow.
 */
static inline int32_t mcu_requantize(int32_t x, int32_t multiplier, int32_t shift)
{
    const int32_t left_shift = shift > 0 ? shift : 0;
    const int32_t right_shift = shift > 0 ? 0 : -shift;
    const int32_t shifted = (int32_t)((uint32_t)x << left_shift);
    return mcu_rounding_divide_by_pot(mcu_srdhm(shifted, multiplier), right_shift);
}

/**
 * onnxruntime's requantization (--numerics onnxruntime): x * multiplier * 2^(shift - 31) with ONE
 * rounding, half to even; multiplier in [0, 2^31) holds a float32 scale exactly, shift <= 30;
 * saturated to int32. (x * multiplier needs 62 bits; a product below 2^62 shifted by 63 or more rounds to 0.)
 */
static inline int32_t mcu_requantize_rne(int32_t x, int32_t multiplier, int32_t shift)
{
    const int32_t n = 31 - shift;
    if (n >= 63) {
        return 0;
    }
    const int64_t p = (int64_t)x * multiplier;
    if (n >= 32) {
        /* floor((p + 2^(n-1) - 1 + q0) / 2^n), q0 the parity of floor(p / 2^n): ties to even;
         * the 64-bit shifts by constants only, no saturation needed (|result| < 2^30) */
        const int32_t k = n - 32;
        const int32_t hi = (int32_t)(p >> 32); /* arithmetic shift, see below */
        const int64_t bias = (int64_t)((uint64_t)(1u << k) << 31) - 1 + ((hi >> k) & 1);
        return (int32_t)((p + bias) >> 32) >> k;
    }
    /* Arithmetic right shift of a negative value: see mcu_rounding_divide_by_pot. */
    const int64_t q = p >> n;
    const uint64_t rem = (uint64_t)p & (((uint64_t)1 << n) - 1u);
    const uint64_t half = (uint64_t)1 << (n - 1);
    const int64_t r = q + ((rem > half || (rem == half && (q & 1) != 0)) ? 1 : 0);
    return r > INT32_MAX ? INT32_MAX : (r < INT32_MIN ? INT32_MIN : (int32_t)r);
}

/** The requantization of mcu_quant_io_t.rounding: 0 (MCU_ROUND_TFLITE) mcu_requantize, else
 * mcu_requantize_rne kept in [-256, 256] (enough for any int8 result, and room for the offset). */
static inline int32_t mcu_requantize_mode(int32_t x, int32_t multiplier, int32_t shift,
                                          int32_t rounding)
{
    if (rounding == 0) {
        return mcu_requantize(x, multiplier, shift);
    }
    const int32_t v = mcu_requantize_rne(x, multiplier, shift);
    return v < -256 ? -256 : (v > 256 ? 256 : v);
}

/** acc / count (count > 0) rounded half away from zero (TFLite's average pool). */
static inline int32_t mcu_div_round_away(int32_t acc, int32_t count)
{
    return acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
}

/** acc / count (count > 0) rounded half to even (onnxruntime's average pool). */
static inline int32_t mcu_div_round_even(int32_t acc, int32_t count)
{
    int32_t q = acc / count;
    int32_t r = acc - q * count;
    if (r < 0) { /* floor */
        q -= 1;
        r += count;
    }
    return q + ((2 * r > count || (2 * r == count && (q & 1) != 0)) ? 1 : 0);
}

#endif /* MCU_MATH_H */
