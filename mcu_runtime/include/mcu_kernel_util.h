/*
 * mcu_kernel_util.h - helpers shared by the kernels: parameter and scratch checks, the valid-tap
 * range of a padded window, the pooling window and broadcast iterators (pool_run, bcast_run), a
 * fast exact requantization (scalar, and four lanes on MVE), and the DSP extension's byte loads
 * and unpacks (inline assembly in optimized builds, each beside its C fallback).
 * Internal to mcu_runtime (not part of the public API in mcu_nn.h).
 */
#ifndef MCU_KERNEL_UTIL_H
#define MCU_KERNEL_UTIL_H

#include <stdint.h>

#include "mcu_math.h"
#include "mcu_nn.h"

static inline int dims_valid(const mcu_dims_t *d)
{
    return d->n > 0 && d->h > 0 && d->w > 0 && d->c > 0;
}

static inline int quant_io_valid(const mcu_quant_io_t *q)
{
    return q->rounding >= MCU_ROUND_TFLITE && q->rounding <= MCU_ROUND_NEAREST_NO_TIE &&
           q->input_offset >= -MCU_INT8_MAX && q->input_offset <= -MCU_INT8_MIN &&
           q->output_offset >= MCU_INT8_MIN && q->output_offset <= MCU_INT8_MAX &&
           q->act_min >= MCU_INT8_MIN && q->act_max <= MCU_INT8_MAX && q->act_min <= q->act_max;
}

/* ctx holds `size` bytes of usable (4-byte aligned) scratch; always true for size 0. */
static inline int scratch_ok(const mcu_context_t *ctx, int32_t size)
{
    return size <= 0 || (ctx != NULL && ctx->buf != NULL && ctx->size >= size &&
                         ((uintptr_t)ctx->buf & 3u) == 0);
}

/* Every shift must keep mcu_requantize's shifts in range: shift in [-31, 30]. */
static inline int shifts_valid(const int32_t *shift, int32_t count)
{
    for (int32_t i = 0; i < count; ++i) {
        if (shift[i] < -31 || shift[i] > 30) {
            return 0;
        }
    }
    return 1;
}

/* The taps k in [*begin, *end) of a window with `taps` taps whose input index
 * origin + k * dilation lies in [0, size). *begin == *end when none does. */
static inline void valid_taps(int32_t origin, int32_t dilation, int32_t taps, int32_t size,
                       int32_t *begin, int32_t *end)
{
    /* (no division when dilation == 1: Armv6-M divides in a library call) */
    const int32_t first =
        origin >= 0 ? 0 : (dilation == 1 ? -origin : (-origin + dilation - 1) / dilation);
    const int32_t last_index = size - 1 - origin; /* k * dilation <= last_index */
    const int32_t past =
        last_index < 0 ? 0 : (dilation == 1 ? last_index : last_index / dilation) + 1;
    *begin = first < taps ? first : taps;
    *end = past < taps ? past : taps;
    if (*end < *begin) {
        *end = *begin;
    }
}

#if defined(__GNUC__)
#define MCU_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define MCU_ALWAYS_INLINE static inline
#endif

/* ------------------------------------------------------------------------------------------- */
/* The pooling window iterator (avgpool, avgpool_requant, maxpool; int8 and int16)            */

/* The geometry checks every pool kernel makes (activation range and rounding are the caller's). */
static inline int pool_geometry_valid(const mcu_pool_params_t *p)
{
    return dims_valid(&p->input) && p->output.n == p->input.n && p->output.h > 0 &&
           p->output.w > 0 && p->output.c == p->input.c && p->filter_h > 0 && p->filter_w > 0 &&
           p->stride_h > 0 && p->stride_w > 0 && p->pad_top >= 0 && p->pad_left >= 0;
}

/* Does every window hold at least one valid tap (TFLite Micro fails an average otherwise)? */
static inline int pool_windows_nonempty(const mcu_pool_params_t *p)
{
    for (int32_t out_y = 0; out_y < p->output.h; ++out_y) {
        const int32_t y0 = out_y * p->stride_h - p->pad_top;
        if (y0 >= p->input.h || y0 + p->filter_h <= 0) {
            return 0;
        }
    }
    for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
        const int32_t x0 = out_x * p->stride_w - p->pad_left;
        if (x0 >= p->input.w || x0 + p->filter_w <= 0) {
            return 0;
        }
    }
    return 1;
}

/* What a pool computes per output element from the sum or maximum `acc` of its `count` taps. */
typedef enum {
    MCU_POOL_MAX,        /* clamp(max) */
    MCU_POOL_AVG_AWAY,   /* clamp(acc / count), ties away from zero (TFLite) */
    MCU_POOL_AVG_EVEN,   /* clamp(acc / count), ties to even (onnxruntime) */
    MCU_POOL_AVG_REQUANT /* clamp(requant(acc + count * input_offset) + output_offset) */
} mcu_pool_kind_t;

/*
 * Runs a pool over [N, H, W, C] int8 (s16 == 0) or int16 (s16 == 1) values: for each output
 * element, the taps of its window that lie inside the input (padding taps are skipped; the valid
 * rows and columns come from valid_taps), reduced by `kind`, clamped to [act_min, act_max].
 * rq holds the requantization of MCU_POOL_AVG_REQUANT (else NULL). Always inlined: with s16 and
 * kind constant, each kernel compiles to its own loops.
 */
MCU_ALWAYS_INLINE void pool_run(const mcu_pool_params_t *p, const mcu_avgpool_requant_params_t *rq,
                                const void *input, void *output, int s16, mcu_pool_kind_t kind)
{
    const int32_t in_w = p->input.w;
    const int32_t channels = p->input.c;
    const size_t image = (size_t)p->input.h * (size_t)in_w * (size_t)channels;
    size_t out_index = 0;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const size_t batch = (size_t)n * image;
        for (int32_t out_y = 0; out_y < p->output.h; ++out_y) {
            const int32_t y0 = out_y * p->stride_h - p->pad_top;
            int32_t ky_begin, ky_end;
            valid_taps(y0, 1, p->filter_h, p->input.h, &ky_begin, &ky_end);
            for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
                const int32_t x0 = out_x * p->stride_w - p->pad_left;
                int32_t kx_begin, kx_end;
                valid_taps(x0, 1, p->filter_w, in_w, &kx_begin, &kx_end);
                const int32_t count = (ky_end - ky_begin) * (kx_end - kx_begin);
                for (int32_t ch = 0; ch < channels; ++ch) {
                    int32_t acc = kind != MCU_POOL_MAX ? 0 : (s16 ? -32768 : MCU_INT8_MIN);
                    for (int32_t ky = ky_begin; ky < ky_end; ++ky) {
                        for (int32_t kx = kx_begin; kx < kx_end; ++kx) {
                            const size_t at = batch + ((size_t)(y0 + ky) * (size_t)in_w +
                                                       (size_t)(x0 + kx)) * (size_t)channels +
                                              (size_t)ch;
                            const int32_t v = s16 ? ((const int16_t *)input)[at]
                                                  : ((const int8_t *)input)[at];
                            acc = kind != MCU_POOL_MAX ? acc + v : (v > acc ? v : acc);
                        }
                    }
                    int32_t out = acc;
                    if (kind == MCU_POOL_AVG_AWAY) {
                        out = mcu_div_round_away(acc, count);
                    } else if (kind == MCU_POOL_AVG_EVEN) {
                        out = mcu_div_round_even(acc, count);
                    } else if (kind == MCU_POOL_AVG_REQUANT) {
                        /* sum(in + offset) = sum(in) + count * offset: one multiply per output.
                         * int8: a large left shift can bring the requantized value near
                         * INT32_MAX; pre-clamping it to [-256, 256] keeps the offset add from
                         * overflowing and changes no output. (int16: offsets are 0.) */
                        out = mcu_requantize_mode(acc + count * rq->input_offset, rq->multiplier,
                                                  rq->shift, p->rounding);
                        if (!s16) {
                            out = mcu_clamp_s32(out, -256, 256) + rq->output_offset;
                        }
                    }
                    out = mcu_clamp_s32(out, p->act_min, p->act_max);
                    if (s16) {
                        ((int16_t *)output)[out_index++] = (int16_t)out;
                    } else {
                        ((int8_t *)output)[out_index++] = (int8_t)out;
                    }
                }
            }
        }
    }
}

/* ------------------------------------------------------------------------------------------- */
/* The broadcast iterator (add, mul, minmax, eltwise_f32)                                      */

static inline int bcast_valid(const mcu_bcast_t *b)
{
    return b->inner >= 1 && b->period >= 1;
}

/* One int8 output element from its two int8 operands; params is the kernel's parameter struct. */
typedef int8_t (*mcu_bcast_one_t)(const void *params, int8_t a, int8_t b);

/*
 * output[i] = one(params, input1[(i / in1.inner) % in1.period], input2[likewise]) for i < size,
 * with a plain loop when both operands are full tensors. Always inlined with a constant `one` (a
 * static function of the kernel): the call becomes direct and the kernel's loops compile as if
 * written out.
 */
MCU_ALWAYS_INLINE void bcast_run(const void *params, mcu_bcast_one_t one, int32_t size,
                                 const mcu_bcast_t *in1, const mcu_bcast_t *in2,
                                 const int8_t *input1, const int8_t *input2, int8_t *output)
{
    if (in1->inner == 1 && in1->period == size && in2->inner == 1 && in2->period == size) {
        /* Fast path: both operands are full tensors. */
        for (int32_t i = 0; i < size; ++i) {
            output[i] = one(params, input1[i], input2[i]);
        }
        return;
    }
    for (int32_t i = 0; i < size; ++i) {
        const int32_t i1 = (i / in1->inner) % in1->period;
        const int32_t i2 = (i / in2->inner) % in2->period;
        output[i] = one(params, input1[i1], input2[i2]);
    }
}

/*
 * gemmlowp's SaturatingRoundingDoublingHighMul without its saturating case (a = b = INT32_MIN,
 * which the caller handles): it truncates (a*b + nudge) / 2^31 toward zero with nudge = 2^30 for
 * a*b >= 0 and 1 - 2^30 otherwise; both cases equal floor((a*b + 2^30) / 2^31) (for a*b < 0:
 * trunc(v / 2^31) = floor((v + 2^31 - 1) / 2^31) with v = a*b + 1 - 2^30), one arithmetic shift.
 * (On Armv6-M gcc's __aeabi_lmul for the product is as fast as a hand-split 16x16 version.)
 */
static inline int32_t high_mul(int32_t a, int32_t b)
{
    return (int32_t)(((int64_t)a * b + ((int64_t)1 << 30)) >> 31);
}

/*
 * One output element in TFLite rounding: mcu_requantize(acc, multiplier, shift) + output_offset, clamped to
 * [act_min, act_max]; bit for bit mcu_math.h's arithmetic in fewer instructions (high_mul above;
 * RoundingDivideByPOT keeps its remainder/threshold form, with a 32-bit mask).
 */
static inline int8_t output_stage_tflite(int32_t acc, int32_t multiplier, int32_t shift,
                                         const mcu_quant_io_t *q)
{
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    const int32_t x = (int32_t)((uint32_t)acc << left);
    const int32_t high =
        (x == INT32_MIN && multiplier == INT32_MIN) ? INT32_MAX : high_mul(x, multiplier);
    const int32_t mask = (int32_t)((1u << right) - 1u);
    const int32_t remainder = high & mask;
    const int32_t threshold = (mask >> 1) + (high < 0 ? 1 : 0);
    const int32_t out = (high >> right) + (remainder > threshold ? 1 : 0) + q->output_offset;
    return (int8_t)mcu_clamp_s32(out, q->act_min, q->act_max);
}

/* One output element in onnxruntime's rounding: mcu_requantize_rne(acc, multiplier, shift) +
 * output_offset, clamped to [act_min, act_max]. */
static inline int8_t output_stage_rne(int32_t acc, int32_t multiplier, int32_t shift,
                                      const mcu_quant_io_t *q)
{
    const int32_t v = mcu_requantize_mode(acc, multiplier, shift, q->rounding);
    return (int8_t)mcu_clamp_s32(v + q->output_offset, q->act_min, q->act_max);
}

/* One output element in q->rounding. Loops over many outputs test q->rounding once and call
 * output_stage_tflite / output_stage_rne (a test per output costs the TFLite path ~3% on
 * Armv6-M). */
static inline int8_t output_stage(int32_t acc, int32_t multiplier, int32_t shift,
                                  const mcu_quant_io_t *q)
{
    return q->rounding == MCU_ROUND_TFLITE ? output_stage_tflite(acc, multiplier, shift, q)
                                           : output_stage_rne(acc, multiplier, shift, q);
}

/*
 * A faster exact requantization for realistic constants (requant2 on the DSP extension,
 * requant4 on MVE): for accumulators with |acc| < 2^30,
 *   RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(acc, M), r) + output_offset
 *     = floor((2 acc M + 2^31 + 2^32 * (2^(r-1) - [acc < 0] + output_offset * 2^r)) / 2^(32+r))
 *     = SMMLAR(2 acc, M, base - [acc < 0]) >> r,   base = 2^(r-1) + output_offset * 2^r,
 * bit for bit output_stage() before its clamp, for r = -shift in [1, 20] and M >= 0:
 * - SRDHM(acc, M) = floor((acc M + 2^30) / 2^31) (see high_mul), no saturation as |acc| < 2^30;
 * - RoundingDivideByPOT(h, r) = floor((h + 2^(r-1) - [h < 0]) / 2^r) for r >= 1, and
 *   floor((floor(a / b) + n) / c) = floor((a + n b) / (b c)) nests the two roundings into one;
 * - [h < 0] may be replaced by [acc < 0] (M >= 0): they differ only when h == 0, where both
 *   give 0, since then 0 <= acc M + 2^30 < 2^31;
 * - the SMMLAR result cannot leave int32: |acc| < 2^30 and |base| < 2^28 for r <= 20.
 * requant2_ok() is the condition on one channel's constants (|bias| < 2^29 leaves the kernel
 * room for 2^29 / (255 * 128) = 16448 multiply-accumulates of offset inputs).
 */
static inline int requant2_ok(int32_t multiplier, int32_t shift, int32_t bias)
{
    return shift >= -20 && shift <= -1 && multiplier >= 0 && bias > -(1 << 29) &&
           bias < (1 << 29);
}

static inline int32_t requant2_base(int32_t shift, int32_t output_offset)
{
    return (int32_t)((1u << (-shift - 1)) + ((uint32_t)output_offset << -shift));
}

/*
 * onnxruntime's rounding on the fast paths (rounding == MCU_ROUND_NEAREST_NO_TIE): requant2 and
 * requant4 compute floor((2 a M + 2^31 + 2^32 (base - [a < 0])) / 2^(32+r)) for the accumulator
 * a they get. Give them a = acc + lift, lift = 2^29 + 2^(30 - v) with 2^v the lowest set bit of
 * M (v >= 7: M holds a float32 mantissa in its top 24 bits):
 * - a lies in [0, 2^30) for |acc| < 2^29 - 2^23, so [a < 0] = 0 (and 2a fits int32);
 * - 2 lift M = 2^(30+v) m + 2^31 m for M = m 2^v, m odd: 2^31 + 2^32 j with the integer
 *   j = M / 4 + (m - 1) / 2 = (M >> 2) + (M >> (v + 1));
 * - with base' = 2^(r-1) + output_offset 2^r - 1 - j (requant2_base_q) the numerator is
 *   2 acc M + 2^(31+r) + output_offset 2^(32+r): acc M / 2^(31+r) rounded half up, plus the
 *   output offset; half up is half to even as no reachable acc is a tie.
 * emitter/quant.py fast_round_ok() checks both bounds per channel at build time.
 */
static inline int32_t requant2_lift(int32_t multiplier, const mcu_quant_io_t *q)
{
    if (q->rounding != MCU_ROUND_NEAREST_NO_TIE || multiplier <= 0) {
        return 0;
    }
    const int32_t v = __builtin_ctz((uint32_t)multiplier); /* RBIT + CLZ */
    return (int32_t)((1u << 29) + ((1u << 30) >> v));
}

/* requant2_lift() doubled and requant2_base_q() of one MCU_ROUND_NEAREST_NO_TIE channel with one
 * CTZ and no tests (fast_round_ok() gives every channel of such a layer a multiplier > 0) */
static inline int32_t requant2_no_tie(int32_t multiplier, int32_t shift, int32_t output_offset,
                                      int32_t *lift2)
{
    const int32_t v = __builtin_ctz((uint32_t)multiplier);
    *lift2 = (int32_t)((1u << 30) + ((1u << 31) >> v));
    return requant2_base(shift, output_offset) - 1 - (multiplier >> 2) - (multiplier >> (v + 1));
}

/* requant2_base(), or base' above for MCU_ROUND_NEAREST_NO_TIE */
static inline int32_t requant2_base_q(int32_t multiplier, int32_t shift, const mcu_quant_io_t *q)
{
    const int32_t base = requant2_base(shift, q->output_offset);
    if (q->rounding != MCU_ROUND_NEAREST_NO_TIE || multiplier <= 0) {
        return base;
    }
    const int32_t v = __builtin_ctz((uint32_t)multiplier);
    return base - 1 - (multiplier >> 2) - (multiplier >> (v + 1));
}

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(__ARM_BIG_ENDIAN)
#include <arm_mve.h>

/* requantize (CMSIS-NN's arm_requantize_mve, bit-exact with output_stage: VQRDMULH is
 * SaturatingRoundingDoublingHighMul, VRSHL by -exponent after gemmlowp's fix-up of negative
 * values is RoundingDivideByPOT), add the output offset, clamp: four lanes. */
static inline int32x4_t output_stage4(int32x4_t acc, int32x4_t multiplier, int32x4_t shift,
                                      const mcu_quant_io_t *q)
{
    if (q->rounding != MCU_ROUND_TFLITE) { /* onnxruntime's rounding: output_stage per lane */
        int32_t a[4], m[4], s[4], o[4];
        vst1q_s32(a, acc);
        vst1q_s32(m, multiplier);
        vst1q_s32(s, shift);
        for (int32_t r = 0; r < 4; ++r) {
            o[r] = output_stage_rne(a[r], m[r], s[r], q);
        }
        return vld1q_s32(o);
    }
    const int32x4_t left = vmaxq_s32(shift, vdupq_n_s32(0));
    const int32x4_t right = vminq_s32(shift, vdupq_n_s32(0)); /* -exponent */
    int32x4_t v = vqrdmulhq_s32(vshlq_s32(acc, left), multiplier);
    v = vrshlq_s32(vqaddq_s32(v, vshrq_n_s32(vandq_s32(v, right), 31)), right);
    v = vaddq_s32(v, vdupq_n_s32(q->output_offset));
    v = vmaxq_s32(v, vdupq_n_s32(q->act_min));
    return vminq_s32(v, vdupq_n_s32(q->act_max));
}

/* requant2's arithmetic on four lanes, for requant2_ok() constants and |acc| < 2^30: VQRDMULH is
 * SRDHM itself (no doubled accumulator needed), then floor((h + base - [acc < 0]) / 2^r) with
 * VSHL by shift = -r. Plus the output offset (in base); not clamped. */
static inline int32x4_t requant4(int32x4_t acc, int32x4_t mult, int32x4_t base,
                                 int32x4_t shift)
{
    int32x4_t v = vaddq_s32(vqrdmulhq_s32(acc, mult), base);
    v = vaddq_s32(v, vshrq_n_s32(acc, 31));
    return vshlq_s32(v, shift);
}

#endif

#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#include <arm_acle.h>
#include <string.h>

/* Four int8 from any address: memcpy is defined for every alignment and compiles to one LDR
 * (Armv7E-M and Armv8-M Mainline load unaligned words). */
static inline uint32_t read_s8x4(const int8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#if defined(__OPTIMIZE__) && defined(__GNUC__)

/* Bytes 1 and 3 of v sign-extended to two int16 lanes: SXTB16 with its free rotation. */
static inline int32_t sxtb16_ror8(uint32_t v)
{
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}

/* Bytes 1 and 3 of v sign-extended, each plus the matching int16 lane of a. */
static inline int32_t sxtab16_ror8(int32_t a, uint32_t v)
{
    int32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(v));
    return r;
}

/* floor((c * 2^32 + a * b + 2^31) / 2^32) */
static inline int32_t smmlar(int32_t a, int32_t b, int32_t c)
{
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

/* v saturated to [-128, 127] (SSAT; gcc 12's __ssat trips -Wsign-conversion) */
static inline int32_t ssat8(int32_t v)
{
    int32_t r;
    __asm__("ssat %0, #8, %1" : "=r"(r) : "r"(v));
    return r;
}

#else /* unoptimized builds: the same in C */

static inline int32_t sxtb16_ror8(uint32_t v)
{
    return __sxtb16((int32_t)((v >> 8) | (v << 24)));
}

static inline int32_t sxtab16_ror8(int32_t a, uint32_t v)
{
    return __sxtab16(a, (int32_t)((v >> 8) | (v << 24)));
}

static inline int32_t smmlar(int32_t a, int32_t b, int32_t c)
{
    /* the 64-bit sum modulo 2^64, as the instruction computes it */
    const uint64_t sum = ((uint64_t)(uint32_t)c << 32) + (uint64_t)((int64_t)a * b) + 0x80000000u;
    return (int32_t)(uint32_t)(sum >> 32);
}

static inline int32_t ssat8(int32_t v)
{
    return mcu_clamp_s32(v, MCU_INT8_MIN, MCU_INT8_MAX);
}

#endif

/* The requantized acc2 = 2 * acc, plus the output offset, saturated to int8 (not clamped to the
 * activation range). */
static inline int32_t requant2(int32_t acc2, int32_t mult, int32_t base, int32_t right)
{
    return ssat8(smmlar(acc2, mult, base + (acc2 >> 31)) >> right);
}

#endif

#endif /* MCU_KERNEL_UTIL_H */
