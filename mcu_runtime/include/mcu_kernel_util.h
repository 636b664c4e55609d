/*
 * mcu_kernel_util.h - helpers shared by the kernels: parameter and scratch checks, the valid-tap
 * range of a padded window, the pooling window and broadcast iterators (pool_run, bcast_run), and
 * the DSP extension's byte loads and unpacks (inline assembly in optimized builds, each beside its
 * C fallback). The requantization helpers are mcu_requant.h's (included here).
 * Internal to mcu_runtime (not part of the public API in mcu_nn.h).
 */
#ifndef MCU_KERNEL_UTIL_H
#define MCU_KERNEL_UTIL_H

#include <stdint.h>

#include "mcu_math.h"
#include "mcu_nn.h"
#include "mcu_requant.h"

/* The checks below run on every kernel call: inlined whatever the compiler's heuristics (clang
 * keeps some out of line). */
#if defined(__GNUC__)
#define MCU_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define MCU_ALWAYS_INLINE static inline
#endif

MCU_ALWAYS_INLINE int dims_valid(const mcu_dims_t *d)
{
    return d->n > 0 && d->h > 0 && d->w > 0 && d->c > 0;
}

MCU_ALWAYS_INLINE int quant_io_valid(const mcu_quant_io_t *q)
{
    return q->rounding >= MCU_ROUND_TFLITE && q->rounding <= MCU_ROUND_NEAREST_NO_TIE &&
           q->input_offset >= -MCU_INT8_MAX && q->input_offset <= -MCU_INT8_MIN &&
           q->output_offset >= MCU_INT8_MIN && q->output_offset <= MCU_INT8_MAX &&
           q->act_min >= MCU_INT8_MIN && q->act_max <= MCU_INT8_MAX && q->act_min <= q->act_max;
}

/* ctx holds `size` bytes of usable (4-byte aligned) scratch; always true for size 0. */
MCU_ALWAYS_INLINE int scratch_ok(const mcu_context_t *ctx, int32_t size)
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

/* Output positions [*begin, *end) along one axis whose window has every tap inside an input of
 * `size`: origin o * stride - pad >= 0 and origin + (taps - 1) * dilation < size (an empty range
 * when none; pad >= 0). */
static inline void mcu_inside_positions(int32_t pad, int32_t stride, int32_t dilation,
                                        int32_t taps, int32_t size, int32_t out_size,
                                        int32_t *begin, int32_t *end)
{
    const int32_t last = size - 1 - (taps - 1) * dilation + pad;
    int32_t b = (pad + stride - 1) / stride;
    int32_t e = last < 0 ? 0 : last / stride + 1;
    b = b > out_size ? out_size : b;
    e = e > out_size ? out_size : e;
    *begin = b;
    *end = e < b ? b : e;
}

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

#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#include <arm_acle.h>
#include <string.h>

/* Four int8 from any address: memcpy is defined for every alignment and compiles to one LDR
 * (Armv7E-M and Armv8-M Mainline load unaligned words). clang before 19 assumes strict alignment
 * on bare metal unless given -munaligned-access (no __ARM_FEATURE_UNALIGNED) and would load byte
 * by byte: there the LDR is written out, as these cores (and gcc's default) load unaligned words. */
#if defined(__clang__) && !defined(__ARM_FEATURE_UNALIGNED) && defined(__OPTIMIZE__)
static inline uint32_t read_s8x4(const int8_t *p)
{
    uint32_t v;
    __asm__("ldr %0, %1" : "=r"(v) : "m"(*(const struct { int8_t b[4]; } *)(const void *)p));
    return v;
}

/* Four int8 to any address (one STR, as read_s8x4). */
static inline void write_s8x4(int8_t *p, uint32_t v)
{
    __asm__("str %1, %0" : "=m"(*(struct { int8_t b[4]; } *)(void *)p) : "r"(v));
}

/* read_s8x4(p + off) with a register offset, and read_s8x4(*p) then *p += 4 (a post-indexed
 * load): an "m" operand would have clang compute every address into a register of its own. For
 * loops that only read memory ("memory" orders them after the caller's stores). */
static inline uint32_t read_s8x4_at(const int8_t *p, int32_t off)
{
    uint32_t v;
    __asm__("ldr %0, [%1, %2]" : "=r"(v) : "r"(p), "r"(off) : "memory");
    return v;
}

static inline uint32_t read_s8x4_next(const int8_t **p)
{
    uint32_t v;
    __asm__("ldr %0, [%1], #4" : "=r"(v), "+r"(*p) : : "memory");
    return v;
}
#else
static inline uint32_t read_s8x4(const int8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void write_s8x4(int8_t *p, uint32_t v)
{
    memcpy(p, &v, sizeof v);
}

static inline uint32_t read_s8x4_at(const int8_t *p, int32_t off)
{
    return read_s8x4(p + off);
}

static inline uint32_t read_s8x4_next(const int8_t **p)
{
    const uint32_t v = read_s8x4(*p);
    *p += 4;
    return v;
}
#endif

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

#else /* unoptimized builds: the same in C */

static inline int32_t sxtb16_ror8(uint32_t v)
{
    return __sxtb16((int32_t)((v >> 8) | (v << 24)));
}

static inline int32_t sxtab16_ror8(int32_t a, uint32_t v)
{
    return __sxtab16(a, (int32_t)((v >> 8) | (v << 24)));
}

#endif

#endif

#endif /* MCU_KERNEL_UTIL_H */
