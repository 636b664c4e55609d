/*
 * mcu_requant.h - the requantization helpers of the int8 kernels, bit for bit mcu_math.h's
 * mcu_requantize / mcu_requantize_rne in fewer instructions: one output element in either rounding
 * (mcu_output_stage*), the fast exact forms for realistic constants (mcu_requant2 on the DSP
 * extension, mcu_requant4 on MVE) with their condition and constants (mcu_requant2_ok, _base,
 * _lift, _no_tie, _base_q), and the DSP instructions they use (mcu_smmlar, mcu_ssat8: inline
 * assembly in optimized builds, each beside its C fallback).
 * Internal to mcu_runtime (not part of the public API in mcu_nn.h).
 */
#ifndef MCU_REQUANT_H
#define MCU_REQUANT_H

#include <stdint.h>

#include "mcu_math.h"
#include "mcu_nn.h"

/*
 * gemmlowp's SaturatingRoundingDoublingHighMul without its saturating case (a = b = INT32_MIN,
 * which the caller handles): it truncates (a*b + nudge) / 2^31 toward zero with nudge = 2^30 for
 * a*b >= 0 and 1 - 2^30 otherwise; both cases equal floor((a*b + 2^30) / 2^31) (for a*b < 0:
 * trunc(v / 2^31) = floor((v + 2^31 - 1) / 2^31) with v = a*b + 1 - 2^30), one arithmetic shift.
 * (On Armv6-M gcc's __aeabi_lmul for the product is as fast as a hand-split 16x16 version.)
 */
static inline int32_t mcu_high_mul(int32_t a, int32_t b)
{
    return (int32_t)(((int64_t)a * b + ((int64_t)1 << 30)) >> 31);
}

/*
 * One output element in TFLite rounding: mcu_requantize(acc, multiplier, shift) + output_offset, clamped to
 * [act_min, act_max]; bit for bit mcu_math.h's arithmetic in fewer instructions (mcu_high_mul above;
 * RoundingDivideByPOT keeps its remainder/threshold form, with a 32-bit mask).
 */
static inline int8_t mcu_output_stage_tflite(int32_t acc, int32_t multiplier, int32_t shift,
                                         const mcu_quant_io_t *q)
{
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    const int32_t x = (int32_t)((uint32_t)acc << left);
    const int32_t high =
        (x == INT32_MIN && multiplier == INT32_MIN) ? INT32_MAX : mcu_high_mul(x, multiplier);
    const int32_t mask = (int32_t)((1u << right) - 1u);
    const int32_t remainder = high & mask;
    const int32_t threshold = (mask >> 1) + (high < 0 ? 1 : 0);
    const int32_t out = (high >> right) + (remainder > threshold ? 1 : 0) + q->output_offset;
    return (int8_t)mcu_clamp_s32(out, q->act_min, q->act_max);
}

/* One output element in onnxruntime's rounding: mcu_requantize_rne(acc, multiplier, shift) +
 * output_offset, clamped to [act_min, act_max]. */
static inline int8_t mcu_output_stage_rne(int32_t acc, int32_t multiplier, int32_t shift,
                                      const mcu_quant_io_t *q)
{
    const int32_t v = mcu_requantize_mode(acc, multiplier, shift, q->rounding);
    return (int8_t)mcu_clamp_s32(v + q->output_offset, q->act_min, q->act_max);
}

/* One output element in q->rounding. Loops over many outputs test q->rounding once and call
 * mcu_output_stage_tflite / mcu_output_stage_rne (a test per output costs the TFLite path ~3% on
 * Armv6-M). */
static inline int8_t mcu_output_stage(int32_t acc, int32_t multiplier, int32_t shift,
                                  const mcu_quant_io_t *q)
{
    return q->rounding == MCU_ROUND_TFLITE ? mcu_output_stage_tflite(acc, multiplier, shift, q)
                                           : mcu_output_stage_rne(acc, multiplier, shift, q);
}

/*
 * A faster exact requantization for realistic constants (mcu_requant2 on the DSP extension,
 * mcu_requant4 on MVE): for accumulators with |acc| < 2^30,
 *   RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(acc, M), r) + output_offset
 *     = floor((2 acc M + 2^31 + 2^32 * (2^(r-1) - [acc < 0] + output_offset * 2^r)) / 2^(32+r))
 *     = SMMLAR(2 acc, M, base - [acc < 0]) >> r,   base = 2^(r-1) + output_offset * 2^r,
 * bit for bit mcu_output_stage() before its clamp, for r = -shift in [1, 20] and M >= 0:
 * - SRDHM(acc, M) = floor((acc M + 2^30) / 2^31) (see mcu_high_mul), no saturation as |acc| < 2^30;
 * - RoundingDivideByPOT(h, r) = floor((h + 2^(r-1) - [h < 0]) / 2^r) for r >= 1, and
 *   floor((floor(a / b) + n) / c) = floor((a + n b) / (b c)) nests the two roundings into one;
 * - [h < 0] may be replaced by [acc < 0] (M >= 0): they differ only when h == 0, where both
 *   give 0, since then 0 <= acc M + 2^30 < 2^31;
 * - the SMMLAR result cannot leave int32: |acc| < 2^30 and |base| < 2^28 for r <= 20.
 * mcu_requant2_ok() is the condition on one channel's constants (|bias| < 2^29 leaves the kernel
 * room for 2^29 / (255 * 128) = 16448 multiply-accumulates of offset inputs).
 */
static inline int mcu_requant2_ok(int32_t multiplier, int32_t shift, int32_t bias)
{
    return shift >= -20 && shift <= -1 && multiplier >= 0 && bias > -(1 << 29) &&
           bias < (1 << 29);
}

static inline int32_t mcu_requant2_base(int32_t shift, int32_t output_offset)
{
    return (int32_t)((1u << (-shift - 1)) + ((uint32_t)output_offset << -shift));
}

/*
 * mcu_requant2_ok(), or, for onnxruntime's rounding (MCU_ROUND_NEAREST_NO_TIE), also shift 0 (r = 0):
 * SMMLAR's / VQRDMULH's own + 2^31 is then the rounding and nothing is shifted out. The lift is
 * 2^29 alone: 2 * 2^29 * M = 2^32 (M >> 2) exactly (M = m 2^v, v >= 7), so with base' =
 * output_offset - (M >> 2) the numerator is 2 acc M + 2^31 + output_offset 2^32, i.e. acc M / 2^31
 * rounded half up plus the offset, and a = acc + 2^29 lies in [0, 2^30) for |acc| < 2^29
 * (emitter/quant.py fast_round_ok() proves such a channel tie-free). TFLite's multipliers need not
 * be multiples of 4, so TFLite rounding keeps shift <= -1. Used by the depthwise fast paths.
 */
static inline int mcu_requant2_ok_q(int32_t multiplier, int32_t shift, int32_t bias, int32_t rounding)
{
    return mcu_requant2_ok(multiplier, shift, bias) ||
           (shift == 0 && rounding == MCU_ROUND_NEAREST_NO_TIE && multiplier >= 0 &&
            bias > -(1 << 29) && bias < (1 << 29));
}

/*
 * onnxruntime's rounding on the fast paths (rounding == MCU_ROUND_NEAREST_NO_TIE): mcu_requant2 and
 * mcu_requant4 compute floor((2 a M + 2^31 + 2^32 (base - [a < 0])) / 2^(32+r)) for the accumulator
 * a they get. Give them a = acc + lift, lift = 2^29 + 2^(30 - v) with 2^v the lowest set bit of
 * M (v >= 7: M holds a float32 mantissa in its top 24 bits):
 * - a lies in [0, 2^30) for |acc| < 2^29 - 2^23, so [a < 0] = 0 (and 2a fits int32);
 * - 2 lift M = 2^(30+v) m + 2^31 m for M = m 2^v, m odd: 2^31 + 2^32 j with the integer
 *   j = M / 4 + (m - 1) / 2 = (M >> 2) + (M >> (v + 1));
 * - with base' = 2^(r-1) + output_offset 2^r - 1 - j (mcu_requant2_base_q) the numerator is
 *   2 acc M + 2^(31+r) + output_offset 2^(32+r): acc M / 2^(31+r) rounded half up, plus the
 *   output offset; half up is half to even as no reachable acc is a tie.
 * emitter/quant.py fast_round_ok() checks both bounds per channel at build time.
 */
static inline int32_t mcu_requant2_lift(int32_t multiplier, int32_t shift, const mcu_quant_io_t *q)
{
    if (q->rounding != MCU_ROUND_NEAREST_NO_TIE || multiplier <= 0) {
        return 0;
    }
    if (shift == 0) { /* mcu_requant2_ok_q */
        return (int32_t)(1u << 29);
    }
    const int32_t v = __builtin_ctz((uint32_t)multiplier); /* RBIT + CLZ */
    return (int32_t)((1u << 29) + ((1u << 30) >> v));
}

/* mcu_requant2_lift() doubled and mcu_requant2_base_q() of one MCU_ROUND_NEAREST_NO_TIE channel with one
 * CTZ and no tests (fast_round_ok() gives every channel of such a layer a multiplier > 0) */
static inline int32_t mcu_requant2_no_tie(int32_t multiplier, int32_t shift, int32_t output_offset,
                                      int32_t *lift2)
{
    const int32_t v = __builtin_ctz((uint32_t)multiplier);
    *lift2 = (int32_t)((1u << 30) + ((1u << 31) >> v));
    return mcu_requant2_base(shift, output_offset) - 1 - (multiplier >> 2) - (multiplier >> (v + 1));
}

/* mcu_requant2_no_tie() for mcu_requant2_ok_q() constants: shift 0 too (the depthwise fast paths;
 * the convolutions keep the test out of their per-call setup) */
static inline int32_t mcu_requant2_no_tie_q(int32_t multiplier, int32_t shift, int32_t output_offset,
                                            int32_t *lift2)
{
    if (shift == 0) {
        *lift2 = (int32_t)(1u << 30);
        return output_offset - (multiplier >> 2);
    }
    return mcu_requant2_no_tie(multiplier, shift, output_offset, lift2);
}

/* mcu_requant2_base(), or base' above for MCU_ROUND_NEAREST_NO_TIE */
static inline int32_t mcu_requant2_base_q(int32_t multiplier, int32_t shift, const mcu_quant_io_t *q)
{
    if (q->rounding == MCU_ROUND_NEAREST_NO_TIE && multiplier > 0 && shift == 0) {
        return q->output_offset - (multiplier >> 2); /* mcu_requant2_ok_q */
    }
    const int32_t base = mcu_requant2_base(shift, q->output_offset);
    if (q->rounding != MCU_ROUND_NEAREST_NO_TIE || multiplier <= 0) {
        return base;
    }
    const int32_t v = __builtin_ctz((uint32_t)multiplier);
    return base - 1 - (multiplier >> 2) - (multiplier >> (v + 1));
}

/* mcu_output_stage_tflite() for mcu_requant2_ok() constants and |acc| < 2^30 in mcu_requant2's
 * arithmetic with RV32's MUL/MULH: floor((2 acc M + 2^31) / 2^32) is MULH(2 acc, M) plus bit 31 of
 * MUL(2 acc, M) (the carry of + 2^31), then floor((that + base - [acc < 0]) / 2^r), clamped: about
 * 15 instructions, not 40 (used by the generic conv and depthwise loops on RV32).
 * mcu_requant2_mul: the value before the clamp, for r = -shift and base = mcu_requant2_base(). */
static inline int32_t mcu_requant2_mul(int32_t acc, int32_t multiplier, int32_t r, int32_t base)
{
    const int32_t a2 = (int32_t)((uint32_t)acc << 1);
    const uint32_t low = (uint32_t)a2 * (uint32_t)multiplier;
    const int32_t high = (int32_t)(((int64_t)a2 * (int64_t)multiplier) >> 32);
    /* arithmetic right shifts of negative values: see mcu_rounding_divide_by_pot */
    return (int32_t)((uint32_t)high + (low >> 31) + (uint32_t)base + (uint32_t)(acc >> 31)) >> r;
}

static inline int8_t mcu_output_stage_requant2(int32_t acc, int32_t multiplier, int32_t shift,
                                               const mcu_quant_io_t *q)
{
    const int32_t v = mcu_requant2_mul(acc, multiplier, -shift, mcu_requant2_base(shift, q->output_offset));
    return (int8_t)mcu_clamp_s32(v, q->act_min, q->act_max);
}

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(__ARM_BIG_ENDIAN)
#include <arm_mve.h>

/* requantize (CMSIS-NN's arm_requantize_mve, bit-exact with mcu_output_stage: VQRDMULH is
 * SaturatingRoundingDoublingHighMul, VRSHL by -exponent after gemmlowp's fix-up of negative
 * values is RoundingDivideByPOT), add the output offset, clamp: four lanes. */
/*
 * onnxruntime's rounding proven tie-free (MCU_ROUND_NEAREST_NO_TIE: emitter/quant.py fast_round_ok()
 * proves every channel, whatever its shift), before the offset and clamp, on four lanes:
 * - shift s >= 0: VQRDMULH(acc << s, M) = floor((2 acc 2^s M + 2^31) / 2^32), acc M 2^s / 2^31
 *   rounded half up, one rounding (|acc| 2^s < 2^30 is proven);
 * - shift s = -r <= -1: mcu_requant4's arithmetic with the lift of mcu_requant2_lift (a = acc +
 *   2^29 + 2^(30-v) in [0, 2^30), so [a < 0] = 0) and base' without the offset:
 *   (VQRDMULH(a, M) + 2^(r-1) - 1 - j) >> r, j = (M >> 2) + (M >> (v + 1)); the offset's
 *   output_offset 2^r is a multiple of 2^r, so it is added after the shift instead, and r may
 *   reach 31. Every term stays inside int32: VQRDMULH(a, M) < 2^30, j < 2^29 + 2^23.
 * Half up is half to even as no reachable acc is a tie; about 20 instructions for four outputs
 * against a 64-bit product and a rounding per lane.
 */
static inline int32x4_t mcu_requant4_no_tie(int32x4_t acc, int32x4_t multiplier, int32x4_t shift)
{
    const mve_pred16_t right_lanes = vcmpltq_n_s32(shift, 0);
    const int32x4_t low = vandq_s32(multiplier, vnegq_s32(multiplier));  /* 2^v */
    const int32x4_t v = vsubq_s32(vdupq_n_s32(31), vclzq_s32(low));
    const int32x4_t lift = vaddq_n_s32(vshlq_s32(vdupq_n_s32(1 << 30), vnegq_s32(v)), 1 << 29);
    const int32x4_t left = vmaxq_s32(shift, vdupq_n_s32(0));
    const int32x4_t a = vpselq_s32(vaddq_s32(acc, lift), vshlq_s32(acc, left), right_lanes);
    const int32x4_t h = vqrdmulhq_s32(a, multiplier);
    const int32x4_t right = vminq_s32(shift, vdupq_n_s32(0)); /* -r */
    const int32x4_t j = vaddq_s32(vshrq_n_s32(multiplier, 2),
                                  vshlq_s32(multiplier, vsubq_s32(vdupq_n_s32(-1), v)));
    const int32x4_t half = vshlq_s32(vdupq_n_s32(1), vsubq_s32(vnegq_s32(right), vdupq_n_s32(1)));
    const int32x4_t corr = vpselq_s32(vsubq_s32(vsubq_n_s32(half, 1), j), vdupq_n_s32(0), right_lanes);
    return vshlq_s32(vaddq_s32(h, corr), right);
}

/* mcu_output_stage4() in onnxruntime's rounding: proven tie-free (MCU_ROUND_NEAREST_NO_TIE) on four
 * lanes, else mcu_output_stage per lane. Out of line, so that TFLite's inline path stays as small
 * as it was (the generic loops keep their registers). */
static __attribute__((noinline, unused)) int32x4_t mcu_output_stage4_ort(int32x4_t acc, int32x4_t multiplier,
                                                                        int32x4_t shift, const mcu_quant_io_t *q)
{
    if (q->rounding == MCU_ROUND_NEAREST_NO_TIE) {
        int32x4_t v = vaddq_n_s32(mcu_requant4_no_tie(acc, multiplier, shift), q->output_offset);
        v = vmaxq_s32(v, vdupq_n_s32(q->act_min));
        return vminq_s32(v, vdupq_n_s32(q->act_max));
    }
    int32_t a[4], m[4], s[4], o[4];
    vst1q_s32(a, acc);
    vst1q_s32(m, multiplier);
    vst1q_s32(s, shift);
    for (int32_t r = 0; r < 4; ++r) {
        o[r] = mcu_output_stage_rne(a[r], m[r], s[r], q);
    }
    return vld1q_s32(o);
}

static inline int32x4_t mcu_output_stage4(int32x4_t acc, int32x4_t multiplier, int32x4_t shift,
                                      const mcu_quant_io_t *q)
{
    if (q->rounding != MCU_ROUND_TFLITE) {
        return mcu_output_stage4_ort(acc, multiplier, shift, q);
    }
    const int32x4_t left = vmaxq_s32(shift, vdupq_n_s32(0));
    const int32x4_t right = vminq_s32(shift, vdupq_n_s32(0)); /* -exponent */
    int32x4_t v = vqrdmulhq_s32(vshlq_s32(acc, left), multiplier);
    v = vrshlq_s32(vqaddq_s32(v, vshrq_n_s32(vandq_s32(v, right), 31)), right);
    v = vaddq_s32(v, vdupq_n_s32(q->output_offset));
    v = vmaxq_s32(v, vdupq_n_s32(q->act_min));
    return vminq_s32(v, vdupq_n_s32(q->act_max));
}

/* mcu_requant2's arithmetic on four lanes, for mcu_requant2_ok() constants and |acc| < 2^30: VQRDMULH is
 * SRDHM itself (no doubled accumulator needed), then floor((h + base - [acc < 0]) / 2^r) with
 * VSHL by shift = -r. Plus the output offset (in base); not clamped. */
static inline int32x4_t mcu_requant4(int32x4_t acc, int32x4_t mult, int32x4_t base,
                                 int32x4_t shift)
{
    int32x4_t v = vaddq_s32(vqrdmulhq_s32(acc, mult), base);
    v = vaddq_s32(v, vshrq_n_s32(acc, 31));
    return vshlq_s32(v, shift);
}

#endif

#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#include <arm_acle.h>

#if defined(__OPTIMIZE__) && defined(__GNUC__)

/* floor((c * 2^32 + a * b + 2^31) / 2^32) */
static inline int32_t mcu_smmlar(int32_t a, int32_t b, int32_t c)
{
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

/* v saturated to [-128, 127] (SSAT; gcc 12's __ssat trips -Wsign-conversion) */
static inline int32_t mcu_ssat8(int32_t v)
{
    int32_t r;
    __asm__("ssat %0, #8, %1" : "=r"(r) : "r"(v));
    return r;
}

#else /* unoptimized builds: the same in C */

static inline int32_t mcu_smmlar(int32_t a, int32_t b, int32_t c)
{
    /* the 64-bit sum modulo 2^64, as the instruction computes it */
    const uint64_t sum = ((uint64_t)(uint32_t)c << 32) + (uint64_t)((int64_t)a * b) + 0x80000000u;
    return (int32_t)(uint32_t)(sum >> 32);
}

static inline int32_t mcu_ssat8(int32_t v)
{
    return mcu_clamp_s32(v, MCU_INT8_MIN, MCU_INT8_MAX);
}

#endif

/* The requantized acc2 = 2 * acc, plus the output offset, saturated to int8 (not clamped to the
 * activation range). */
static inline int32_t mcu_requant2(int32_t acc2, int32_t mult, int32_t base, int32_t right)
{
    return mcu_ssat8(mcu_smmlar(acc2, mult, base + (acc2 >> 31)) >> right);
}

#endif

/* TFLite's int8 Add for int8 operands in fewer instructions (mcu_add_s8 on full operands, and the
 * residual Add in mcu_conv2d_add_s8's output stage): output[i] = add(v, skip[i]) where v
 * is the int8 value mcu_conv2d_s8 would write at i. The Add's constants are taken apart by
 * operand: the conv value's side (offset, multiplier, exponent = -shift) and the skip's. */
typedef struct {
    const int8_t *skip;     /* skip[i] pairs with output[i] */
    const int8_t *output;   /* the output's first element (finds i from an output pointer) */
    int32_t conv_offset;    /* the Add's input offset of the conv value */
    int32_t conv_mult;
    int32_t conv_exp;       /* in [0, 30] */
    int32_t skip_offset;
    int32_t skip_mult;
    int32_t skip_exp;       /* in [0, 30] */
    int32_t shift1;         /* left_shift + 1, in [1, 21] */
    int32_t out_mult;
    int32_t out_exp;        /* in [0, 30] */
    int32_t out_offset;
    int32_t act_min;
    int32_t act_max;
    int32_t conv_mask; /* 2^exp - 1 of each exponent */
    int32_t skip_mask;
    int32_t out_mask;
} mcu_conv_fuse_t;

/* (a * b + 2^31) >> 32 (SMMULR). For |a| < 2^30 this is exactly gemmlowp's
 * SaturatingRoundingDoublingHighMul(a / 2, b) = floor((a / 2 * b + 2^30) / 2^31) when a is even:
 * its nudge 1 - 2^30 for a negative product, with a division truncating toward zero, is the same
 * floor (and its one saturating case, INT32_MIN * INT32_MIN, cannot occur). */
#if MCU_ISA_NATIVE != MCU_ISA_C && defined(__GNUC__)
static inline int32_t mcu_conv_fuse_mulhi(int32_t a, int32_t b)
{
    int32_t r;
    __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
#else
static inline int32_t mcu_conv_fuse_mulhi(int32_t a, int32_t b)
{
    /* Arithmetic right shift of a negative value: see mcu_rounding_divide_by_pot. */
    return (int32_t)(((int64_t)a * (int64_t)b + ((int64_t)1 << 31)) >> 32);
}
#endif

/* x / 2^e rounding half away from zero (mcu_rounding_divide_by_pot) for e in [0, 30]; mask =
 * 2^e - 1 and half = mask >> 1 given. */
static inline int32_t mcu_conv_fuse_rdbpot(int32_t x, int32_t e, int32_t mask, int32_t half)
{
    const int32_t threshold = half + (int32_t)((uint32_t)x >> 31);
    return (x >> e) + ((x & mask) > threshold ? 1 : 0);
}

/* mcu_add_s8's element for the conv value v and the skip value s, the same arithmetic with the
 * doubling high multiplies done as SMMULR: (v + off) << left_shift has |.| <= 2^28, so
 * SRDHM((v + off) << ls, m) = mcu_conv_fuse_mulhi((v + off) << (ls + 1), m); each scaled value
 * then has |.| <= 2^28, their sum |.| <= 2^29, and SRDHM(sum, mo) = mcu_conv_fuse_mulhi(2 sum, mo). */
static inline int8_t mcu_conv_fuse_one(const mcu_conv_fuse_t *f, int32_t v, int32_t s)
{
    const int32_t x1 = (int32_t)((uint32_t)(v + f->conv_offset) << f->shift1);
    const int32_t x2 = (int32_t)((uint32_t)(s + f->skip_offset) << f->shift1);
    const int32_t scaled1 = mcu_conv_fuse_rdbpot(mcu_conv_fuse_mulhi(x1, f->conv_mult), f->conv_exp,
                                                 f->conv_mask, f->conv_mask >> 1);
    const int32_t scaled2 = mcu_conv_fuse_rdbpot(mcu_conv_fuse_mulhi(x2, f->skip_mult), f->skip_exp,
                                                 f->skip_mask, f->skip_mask >> 1);
    const int32_t sum2 = 2 * (scaled1 + scaled2);
    const int32_t raw = mcu_conv_fuse_rdbpot(mcu_conv_fuse_mulhi(sum2, f->out_mult), f->out_exp,
                                             f->out_mask, f->out_mask >> 1) + f->out_offset;
    return (int8_t)mcu_clamp_s32(raw, f->act_min, f->act_max);
}

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

/* mcu_conv2d_add_s8's Add on four lanes, its constants in vectors: SMMULR is VRMULH, and
 * mcu_conv_fuse_rdbpot (RoundingDivideByPOT) is VRSHL by -e after adding -1 to negative values
 * (rounding half up then rounds their halves away from zero, as CMSIS-NN's MVE add does). */
typedef struct {
    int32x4_t shift1, conv_mult, skip_mult, out_mult, conv_e, skip_e, out_e, act_min, act_max;
    int32_t conv_offset, skip_offset, out_offset;
} mcu_conv_fuse4_t;

static inline int32x4_t mcu_conv_rdbpot4(int32x4_t x, int32x4_t neg_e)
{
    return vrshlq_s32(vqaddq_s32(x, vshrq_n_s32(vandq_s32(x, neg_e), 31)), neg_e);
}

static inline int32x4_t mcu_conv_fuse4(const mcu_conv_fuse4_t *f, int32x4_t v, int32x4_t s)
{
    const int32x4_t x1 = vshlq_s32(vaddq_n_s32(v, f->conv_offset), f->shift1);
    const int32x4_t x2 = vshlq_s32(vaddq_n_s32(s, f->skip_offset), f->shift1);
    const int32x4_t sum = vaddq_s32(mcu_conv_rdbpot4(vrmulhq_s32(x1, f->conv_mult), f->conv_e),
                                    mcu_conv_rdbpot4(vrmulhq_s32(x2, f->skip_mult), f->skip_e));
    const int32x4_t out = mcu_conv_rdbpot4(vrmulhq_s32(vshlq_n_s32(sum, 1), f->out_mult), f->out_e);
    const int32x4_t raw = vaddq_n_s32(out, f->out_offset);
    return vminq_s32(vmaxq_s32(raw, f->act_min), f->act_max);
}
#endif

#endif /* MCU_REQUANT_H */
