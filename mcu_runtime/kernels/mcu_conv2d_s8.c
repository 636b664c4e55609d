/*
 * mcu_conv2d_s8.c - int8 2-D convolution (group == 1), NHWC input/output, OHWI filter.
 *
 * Semantics of TFLite Micro's per-channel int8 convolution and CMSIS-NN's arm_convolve_s8: one
 * int32 sum per output element, taps that fall outside the input are skipped (the same as padding
 * with the input zero point), then requantize with the output channel's multiplier and shift, add
 * the output offset and clamp.
 *
 * How it is fast and still bit-exact:
 * - __ARM_FEATURE_DSP with K = KH * KW * C_in up to 576 and realistic requantization
 *   (dsp_positions): up to four output positions at a time, their windows extended once to int16
 *   and interleaved in a stack buffer, every output channel's weights read once per pass (SMLAD,
 *   small inline-assembly loops), requantization in four instructions (requant2 in
 *   mcu_kernel_util.h). See "DSP fast path" below.
 * - __ARM_FEATURE_MVE with every channel's requantization realistic (requant2_ok) and windows of
 *   at most MCU_CONV_MVE_K (and MCU_CONV_PATCH_BYTES) bytes: four output positions at a time,
 *   their windows (gathered with predicated vector copies) interleaved in 16-byte chunks in a
 *   stack buffer, every channel's weight vectors meeting the four windows (VMLADAVA), the four
 *   sums requantized together (requant4) and scattered with one store; corrections kept for
 *   MCU_CONV_MVE_OC_BLOCK channels at a time (conv_block_mve). Larger windows and the last
 *   positions: one position at a time, four channels per pass (pixel_mve).
 * - Otherwise (every target; the generic path):
 * - The input offset leaves the inner loops: sum (x + off) * w = sum x * w + off * sum w. For a
 *   block of up to MCU_CONV_OC_BLOCK output channels, corr[oc] = bias[oc] + off * (sum of all the
 *   channel's weights) is computed once; the loops then only multiply raw int8 values.
 * - Per output position the valid tap ranges [ky_begin, ky_end) x [kx_begin, kx_end) are computed
 *   once. The window is read as one contiguous vector of KH * KW * C_in bytes (the patch):
 *   straight from the input when it is one run there (1x1 and 1xN filters inside the input: a
 *   plain matrix product), else gathered into a stack buffer, with the input zero point (-off) in
 *   the padding taps, so that they add -off * w and corr's off * w cancels them. Filters larger
 *   than MCU_CONV_PATCH_BYTES are read run by run from the input (a run is a filter row of
 *   adjacent taps, (kx, ic) contiguous in NHWC and OHWI); at a border the weights of the missing
 *   taps are summed and off times that sum is taken back out.
 * - Four output channels are computed together, so every input byte is loaded once for four MACs.
 * - The dot products come in three variants, chosen at compile time: pure C99 (every target, the
 *   host included), Arm DSP (__ARM_FEATURE_DSP: SXTB16 + SMLAD, two 16x16 MACs per instruction)
 *   and Arm MVE (__ARM_FEATURE_MVE: VMLADAVA.S8, 16 8x8 MACs per instruction; requantization of
 *   four channels per vector).
 * Every variant adds the same integer terms as the reference, in another order and modulo 2^32
 * (unsigned arithmetic wherever a partial sum could leave int32); an int32 sum the reference
 * computes without overflow comes out identical.
 *
 * Stack: the patch (KH * KW * C_in bytes when that is at most MCU_CONV_PATCH_BYTES) and the
 * corrections (4 * min(C_out, MCU_CONV_OC_BLOCK) bytes), as C99 variable-length arrays, plus
 * about 150 bytes of frames; the DSP path instead 4 * MCU_CONV_DSP_WORDS + MCU_CONV_DSP_PATCH
 * bytes of buffers (1296) and about 250 bytes of frames. No scratch from the arena.
 */
#include <string.h>

#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

/* Filters of at most this many bytes (KH * KW * C_in) have their window gathered into a stack
 * buffer of this size (576: a 3x3 filter over 64 channels); larger ones are read run by run,
 * slower at the borders. Overridable, >= 1 (the tests use 1 to exercise the runs). */
#ifndef MCU_CONV_PATCH_BYTES
#define MCU_CONV_PATCH_BYTES 576
#endif
/* Output channels whose offset corrections are kept on the stack at a time (int32 each). */
#ifndef MCU_CONV_OC_BLOCK
#define MCU_CONV_OC_BLOCK 32
#endif

/* The dot products stay out of line (inlined into the loop nest they lose registers), and so do
 * the rarer paths (their locals would grow the hot loop's stack frame). */
#if defined(__GNUC__)
#define MCU_CONV_NOINLINE __attribute__((noinline))
#define MCU_CONV_INLINE static inline __attribute__((always_inline))
#else
#define MCU_CONV_NOINLINE
#define MCU_CONV_INLINE static inline
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(__ARM_BIG_ENDIAN)
#define MCU_CONV_MVE 1
#include <arm_mve.h>
#elif defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#define MCU_CONV_DSP 1
#include <arm_acle.h>
#endif

/* a + b with int32 wrap-around (no undefined behaviour): sums of terms that the reference adds
 * in another order. */
static inline int32_t add_wrap(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/*
 * Per-target primitives over `len` contiguous bytes (1 <= len < 2^17, so that no partial sum of
 * products of int8 values, each at most 2^14 in magnitude, leaves int32):
 *   dot4:   acc[r] += sum_i x[i] * w[r * w_stride + i], r = 0..3
 *   dot1:   returns   sum_i x[i] * w[i]
 *   sum_s8: returns   sum_i w[i]
 *   store4: out_px[oc + r] = output_stage(acc[r] + corr[r], multiplier[oc + r], shift[oc + r]),
 *           r = 0..3
 */
#if defined(MCU_CONV_MVE)

MCU_CONV_NOINLINE static void dot4(const int8_t *x, const int8_t *w, int32_t w_stride,
                                   int32_t len, int32_t acc[4])
{
    /* VMLADAVA.S8: 16 products summed into a 32-bit scalar; the tail is predicated (inactive
     * lanes read nothing and add 0). */
    const int8_t *w0 = w;
    const int8_t *w1 = w + w_stride;
    const int8_t *w2 = w1 + w_stride;
    const int8_t *w3 = w2 + w_stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    for (int32_t n = len >> 4; n > 0; --n) {
        const int8x16_t xv = vld1q_s8(x);
        a0 = vmladavaq_s8(a0, xv, vld1q_s8(w0));
        a1 = vmladavaq_s8(a1, xv, vld1q_s8(w1));
        a2 = vmladavaq_s8(a2, xv, vld1q_s8(w2));
        a3 = vmladavaq_s8(a3, xv, vld1q_s8(w3));
        x += 16;
        w0 += 16;
        w1 += 16;
        w2 += 16;
        w3 += 16;
    }
    if ((len & 15) != 0) {
        const mve_pred16_t p = vctp8q((uint32_t)(len & 15));
        const int8x16_t xv = vldrbq_z_s8(x, p);
        a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(w0, p));
        a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(w1, p));
        a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(w2, p));
        a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(w3, p));
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

MCU_CONV_NOINLINE static int32_t dot1(const int8_t *x, const int8_t *w, int32_t len)
{
    int32_t acc = 0;
    for (int32_t left = len; left > 0; left -= 16) {
        const mve_pred16_t p = vctp8q((uint32_t)left);
        acc = vmladavaq_s8(acc, vldrbq_z_s8(x, p), vldrbq_z_s8(w, p));
        x += 16;
        w += 16;
    }
    return acc;
}

static int32_t sum_s8(const int8_t *w, int32_t len)
{
    int32_t acc = 0;
    for (int32_t left = len; left > 0; left -= 16) {
        acc = vaddvaq_s8(acc, vldrbq_z_s8(w, vctp8q((uint32_t)left)));
        w += 16;
    }
    return acc;
}

/* Four output channels: correction added, requantized (output_stage4), stored. */
static void store4(const int32_t acc[4], const int32_t corr[4], int32_t oc,
                   const mcu_conv_params_t *params, int8_t *out_px)
{
    const int32x4_t v = vaddq_s32(vldrwq_s32(acc), vldrwq_s32(corr));
    vstrbq_s32(out_px + oc, output_stage4(v, vldrwq_s32(params->multiplier + oc),
                                          vldrwq_s32(params->shift + oc), &params->q));
}

#else

#if defined(MCU_CONV_DSP)

MCU_CONV_NOINLINE static void dot4(const int8_t *x, const int8_t *w, int32_t w_stride,
                                   int32_t len, int32_t acc[4])
{
    /* Bytes 0/2 and 1/3 of four inputs and four weights as int16 lane pairs: each SMLAD adds two
     * products, exactly as two scalar MACs. Filters 0/1 are read at wa and wa + w_stride, 2/3 at
     * wb and wb + w_stride (two moving pointers, register-offset loads). */
    const int8_t *wa = w;
    const int8_t *wb = w + 2 * w_stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    for (int32_t n = len >> 2; n > 0; --n) {
        const uint32_t xv = read_s8x4(x);
        const int32_t x02 = __sxtb16((int32_t)xv);
        const int32_t x13 = sxtb16_ror8(xv);
        const uint32_t v0 = read_s8x4(wa);
        a0 = __smlad(x02, __sxtb16((int32_t)v0), a0);
        a0 = __smlad(x13, sxtb16_ror8(v0), a0);
        const uint32_t v1 = read_s8x4(wa + w_stride);
        a1 = __smlad(x02, __sxtb16((int32_t)v1), a1);
        a1 = __smlad(x13, sxtb16_ror8(v1), a1);
        const uint32_t v2 = read_s8x4(wb);
        a2 = __smlad(x02, __sxtb16((int32_t)v2), a2);
        a2 = __smlad(x13, sxtb16_ror8(v2), a2);
        const uint32_t v3 = read_s8x4(wb + w_stride);
        a3 = __smlad(x02, __sxtb16((int32_t)v3), a3);
        a3 = __smlad(x13, sxtb16_ror8(v3), a3);
        x += 4;
        wa += 4;
        wb += 4;
    }
    for (int32_t i = 0; i < (len & 3); ++i) {
        const int32_t xv = (int32_t)x[i];
        a0 += xv * (int32_t)wa[i];
        a1 += xv * (int32_t)wa[w_stride + i];
        a2 += xv * (int32_t)wb[i];
        a3 += xv * (int32_t)wb[w_stride + i];
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

MCU_CONV_NOINLINE static int32_t dot1(const int8_t *x, const int8_t *w, int32_t len)
{
    int32_t acc = 0;
    for (int32_t n = len >> 2; n > 0; --n) {
        const uint32_t xv = read_s8x4(x);
        const uint32_t wv = read_s8x4(w);
        acc = __smlad(__sxtb16((int32_t)xv), __sxtb16((int32_t)wv), acc);
        acc = __smlad(sxtb16_ror8(xv), sxtb16_ror8(wv), acc);
        x += 4;
        w += 4;
    }
    for (int32_t i = 0; i < (len & 3); ++i) {
        acc += (int32_t)x[i] * (int32_t)w[i];
    }
    return acc;
}

static int32_t sum_s8(const int8_t *w, int32_t len)
{
    /* USADA8 adds four unsigned bytes; w ^ 0x80 is w + 128 as an unsigned byte. */
    uint32_t acc = 0u;
    for (int32_t n = len >> 2; n > 0; --n) {
        acc = __usada8(read_s8x4(w) ^ 0x80808080u, 0u, acc);
        w += 4;
    }
    int32_t sum = (int32_t)(acc - 128u * (uint32_t)(len & ~(int32_t)3));
    for (int32_t i = 0; i < (len & 3); ++i) {
        sum += (int32_t)w[i];
    }
    return sum;
}

#else /* pure C99 */

/* The loops index from -len up to 0 off pointers to the ends: on Armv6-M every load then has the
 * one addressing mode LDRSB offers (base + register) and the loop test is the index update. */
#if defined(__thumb__) && !defined(__thumb2__)
/* Thumb-1 (Armv6-M) has eight low registers: two filters per pass keep everything in them. */
MCU_CONV_NOINLINE static void dot2(const int8_t *x, const int8_t *w, int32_t w_stride,
                                   int32_t len, int32_t acc[2])
{
    const int8_t *const x_end = x + len;
    const int8_t *const w0_end = w + len;
    const int8_t *const w1_end = w0_end + w_stride;
    int32_t a0 = acc[0], a1 = acc[1];
    for (int32_t i = -len; i != 0; ++i) {
        const int32_t xv = (int32_t)x_end[i];
        a0 += xv * (int32_t)w0_end[i];
        a1 += xv * (int32_t)w1_end[i];
    }
    acc[0] = a0;
    acc[1] = a1;
}

MCU_CONV_NOINLINE static void dot4(const int8_t *x, const int8_t *w, int32_t w_stride,
                                   int32_t len, int32_t acc[4])
{
    dot2(x, w, w_stride, len, acc);
    dot2(x, w + 2 * w_stride, w_stride, len, acc + 2);
}
#else
MCU_CONV_NOINLINE static void dot4(const int8_t *x, const int8_t *w, int32_t w_stride,
                                   int32_t len, int32_t acc[4])
{
    const int8_t *const x_end = x + len;
    const int8_t *const w0_end = w + len;
    const int8_t *const w1_end = w0_end + w_stride;
    const int8_t *const w2_end = w1_end + w_stride;
    const int8_t *const w3_end = w2_end + w_stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    for (int32_t i = -len; i != 0; ++i) {
        const int32_t xv = (int32_t)x_end[i];
        a0 += xv * (int32_t)w0_end[i];
        a1 += xv * (int32_t)w1_end[i];
        a2 += xv * (int32_t)w2_end[i];
        a3 += xv * (int32_t)w3_end[i];
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#endif

MCU_CONV_NOINLINE static int32_t dot1(const int8_t *x, const int8_t *w, int32_t len)
{
    const int8_t *const x_end = x + len;
    const int8_t *const w_end = w + len;
    int32_t acc = 0;
    for (int32_t i = -len; i != 0; ++i) {
        acc += (int32_t)x_end[i] * (int32_t)w_end[i];
    }
    return acc;
}

static int32_t sum_s8(const int8_t *w, int32_t len)
{
    int32_t acc = 0;
    for (int32_t i = 0; i < len; ++i) {
        acc += (int32_t)w[i];
    }
    return acc;
}

#endif

static void store4(const int32_t acc[4], const int32_t corr[4], int32_t oc,
                   const mcu_conv_params_t *params, int8_t *out_px)
{
    /* local copies: an int8_t store may alias anything, which would reload them per output */
    const mcu_quant_io_t q = params->q;
    const int32_t *const multiplier = params->multiplier + oc;
    const int32_t *const shift = params->shift + oc;
    int8_t *const out = out_px + oc;
    for (int32_t r = 0; r < 4; ++r) {
        out[r] = output_stage(add_wrap(acc[r], corr[r]), multiplier[r], shift[r], &q);
    }
}

#endif

/* What every output position of one call (and one block of output channels) shares. */
typedef struct {
    const mcu_conv_params_t *params;
    const int8_t *filter;
    int32_t filter_size; /* KH * KW * C_in: bytes of one output channel's filter */
    int32_t in_row;      /* W_in * C_in: bytes of one input row */
    int32_t oc_base;     /* the block of output channels [oc_base, oc_end) */
    int32_t oc_end;
    const int32_t *corr; /* corr[oc - oc_base] = bias[oc] + input_offset * sum of w[oc] */
    const int32_t *base; /* MVE, requant4 for every channel: requant2_base(shift[oc], ...) at
                          * [oc - oc_base]; else NULL */
} conv_ctx_t;

/* The window of one output position: top-left input tap (y0, x0) of batch `in_batch`, and the
 * taps inside the input, ky in [ky_begin, ky_end), kx in [kx_begin, kx_end). */
typedef struct {
    const int8_t *in_batch;
    int32_t y0;
    int32_t x0;
    int32_t ky_begin;
    int32_t ky_end;
    int32_t kx_begin;
    int32_t kx_end;
} window_t;

/* Gathers the window in (ky, kx, ic) order: valid taps copy the input, padding taps get the input
 * zero point (-input_offset). */
MCU_CONV_NOINLINE static void gather_patch(const conv_ctx_t *c, const window_t *win, int8_t *patch)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_c = p->input.c;
    const int32_t k_w = p->filter.w;
    const int8_t pad = (int8_t)(-p->q.input_offset);
    const size_t tap = (size_t)in_c;
    const int32_t w_row = k_w * in_c;
    for (int32_t ky = 0; ky < p->filter.h; ++ky) {
        int8_t *const dst = patch + ky * w_row;
        if (ky < win->ky_begin || ky >= win->ky_end) {
            memset(dst, pad, (size_t)w_row);
            continue;
        }
        const int8_t *const src = win->in_batch + (win->y0 + ky * p->dilation_h) * c->in_row;
        if (win->kx_begin > 0) {
            memset(dst, pad, tap * (size_t)win->kx_begin);
        }
        if (p->dilation_w == 1) {
            memcpy(dst + win->kx_begin * in_c, src + (win->x0 + win->kx_begin) * in_c,
                   tap * (size_t)(win->kx_end - win->kx_begin));
        } else {
            for (int32_t kx = win->kx_begin; kx < win->kx_end; ++kx) {
                memcpy(dst + kx * in_c, src + (win->x0 + kx * p->dilation_w) * in_c, tap);
            }
        }
        if (win->kx_end < k_w) {
            memset(dst + win->kx_end * in_c, pad, tap * (size_t)(k_w - win->kx_end));
        }
    }
}

#if defined(MCU_CONV_MVE)
/* pixel_from_patch when c->base is set: four channels per pass over the patch (VMLADAVA, 16
 * products per instruction, four sums in scalar registers), requantized together (requant4),
 * stored with one narrowing store. */
static void pixel_mve(const conv_ctx_t *c, const int8_t *patch, int8_t *out_px)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t k = c->filter_size;
    const int32x4_t lo = vdupq_n_s32(p->q.act_min);
    const int32x4_t hi = vdupq_n_s32(p->q.act_max);
    const mve_pred16_t tail = vctp8q((uint32_t)(k & 15));
    int32_t oc = c->oc_base;
    for (; oc + 4 <= c->oc_end; oc += 4) {
        const int8_t *x = patch;
        const int8_t *w0 = c->filter + oc * k;
        const int8_t *w1 = w0 + k;
        const int8_t *w2 = w1 + k;
        const int8_t *w3 = w2 + k;
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (int32_t n = k >> 4; n > 0; --n) {
            const int8x16_t xv = vld1q_s8(x);
            a0 = vmladavaq_s8(a0, xv, vld1q_s8(w0));
            a1 = vmladavaq_s8(a1, xv, vld1q_s8(w1));
            a2 = vmladavaq_s8(a2, xv, vld1q_s8(w2));
            a3 = vmladavaq_s8(a3, xv, vld1q_s8(w3));
            x += 16;
            w0 += 16;
            w1 += 16;
            w2 += 16;
            w3 += 16;
        }
        if ((k & 15) != 0) {
            const int8x16_t xv = vldrbq_z_s8(x, tail);
            a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(w0, tail));
            a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(w1, tail));
            a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(w2, tail));
            a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(w3, tail));
        }
        const int32_t i = oc - c->oc_base;
        int32x4_t acc = vsetq_lane_s32(a3, vsetq_lane_s32(a2, vsetq_lane_s32(a1,
                            vdupq_n_s32(a0), 1), 2), 3);
        acc = vaddq_s32(acc, vldrwq_s32(c->corr + i));
        int32x4_t v = requant4(acc, vldrwq_s32(p->multiplier + oc), vldrwq_s32(c->base + i),
                               vldrwq_s32(p->shift + oc));
        v = vminq_s32(vmaxq_s32(v, lo), hi);
        vstrbq_s32(out_px + oc, v);
    }
    for (; oc < c->oc_end; ++oc) {
        const int32_t acc = add_wrap(dot1(patch, c->filter + oc * k, k), c->corr[oc - c->oc_base]);
        out_px[oc] = output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q);
    }
}
#endif

/* Every channel of the block at one output position from its patch (filter_size contiguous
 * bytes whose padding taps hold the input zero point): acc = sum patch * w + corr. */
static void pixel_from_patch(const conv_ctx_t *c, const int8_t *patch, int8_t *out_px)
{
#if defined(MCU_CONV_MVE)
    if (c->base != NULL) {
        pixel_mve(c, patch, out_px);
        return;
    }
#endif
    const mcu_conv_params_t *const p = c->params;
    const int32_t k = c->filter_size;
    int32_t oc = c->oc_base;
    for (; oc + 4 <= c->oc_end; oc += 4) {
        int32_t acc[4] = {0, 0, 0, 0};
        dot4(patch, c->filter + oc * k, k, k, acc);
        store4(acc, c->corr + (oc - c->oc_base), oc, p, out_px);
    }
    for (; oc < c->oc_end; ++oc) {
        const int32_t acc = add_wrap(dot1(patch, c->filter + oc * k, k), c->corr[oc - c->oc_base]);
        out_px[oc] = output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q);
    }
}

/* Sum of the weights of filter `w` at the taps outside the window's valid ranges (the taps a
 * border position skips). */
static int32_t missing_weights(const conv_ctx_t *c, const window_t *win, const int8_t *w)
{
    const int32_t in_c = c->params->input.c;
    const int32_t k_h = c->params->filter.h;
    const int32_t k_w = c->params->filter.w;
    const int32_t w_row = k_w * in_c;
    int32_t sum = 0;
    if (win->ky_begin > 0) {
        sum += sum_s8(w, win->ky_begin * w_row);
    }
    if (win->ky_end < k_h) {
        sum += sum_s8(w + win->ky_end * w_row, (k_h - win->ky_end) * w_row);
    }
    for (int32_t ky = win->ky_begin; ky < win->ky_end; ++ky) {
        if (win->kx_begin > 0) {
            sum += sum_s8(w + ky * w_row, win->kx_begin * in_c);
        }
        if (win->kx_end < k_w) {
            sum += sum_s8(w + ky * w_row + win->kx_end * in_c, (k_w - win->kx_end) * in_c);
        }
    }
    return sum;
}

/* Every channel of the block at one output position, for filters too large for the patch buffer:
 * one dot product per run of valid taps (ky, kx, 0..C_in-1), all the kx of one ky being one run
 * when dilation_w == 1. The padding taps are missing from these sums, so at a border
 * input_offset * (their weights' sum) is taken back out of corr. */
MCU_CONV_NOINLINE static void pixel_from_runs(const conv_ctx_t *c, const window_t *win,
                                               int8_t *out_px)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_c = p->input.c;
    const int32_t k = c->filter_size;
    const int32_t cols = win->kx_end - win->kx_begin;
    const int32_t rows = cols > 0 ? win->ky_end - win->ky_begin : 0;
    const int full = rows == p->filter.h && cols == p->filter.w;
    const int32_t runs_per_row = p->dilation_w == 1 ? 1 : cols;
    const int32_t run_len = p->dilation_w == 1 ? cols * in_c : in_c;
    const int32_t x_run_step = p->dilation_w * in_c;
    const int32_t x_row_step = p->dilation_h * c->in_row;
    const int32_t w_row_step = p->filter.w * in_c;
    const int8_t *x_first = win->in_batch; /* only read when rows > 0 */
    if (rows > 0) {
        x_first = win->in_batch + (win->y0 + win->ky_begin * p->dilation_h) * c->in_row +
                  (win->x0 + win->kx_begin * p->dilation_w) * in_c;
    }
    const int8_t *const w_first = c->filter + win->ky_begin * w_row_step + win->kx_begin * in_c;

    for (int32_t oc = c->oc_base; oc < c->oc_end; oc += 4) {
        const int32_t group = c->oc_end - oc < 4 ? c->oc_end - oc : 4;
        int32_t acc[4] = {0, 0, 0, 0};
        for (int32_t j = 0; j < rows; ++j) {
            for (int32_t r = 0; r < runs_per_row; ++r) {
                const int8_t *const x = x_first + j * x_row_step + r * x_run_step;
                const int8_t *const w = w_first + oc * k + j * w_row_step + r * in_c;
                if (group == 4) {
                    dot4(x, w, k, run_len, acc);
                } else {
                    for (int32_t g = 0; g < group; ++g) {
                        acc[g] = add_wrap(acc[g], dot1(x, w + g * k, run_len));
                    }
                }
            }
        }
        int32_t corr[4];
        for (int32_t g = 0; g < group; ++g) {
            const uint32_t missing =
                full ? 0u : (uint32_t)missing_weights(c, win, c->filter + (oc + g) * k);
            corr[g] = add_wrap(c->corr[oc + g - c->oc_base],
                               (int32_t)(0u - (uint32_t)p->q.input_offset * missing));
        }
        if (group == 4) {
            store4(acc, corr, oc, p, out_px);
        } else {
            for (int32_t g = 0; g < group; ++g) {
                out_px[oc + g] = output_stage(add_wrap(acc[g], corr[g]), p->multiplier[oc + g],
                                              p->shift[oc + g], &p->q);
            }
        }
    }
}

#if defined(MCU_CONV_MVE)
/* Four positions at a time: their windows (filter_size = K bytes each, up to MCU_CONV_MVE_K)
 * copied into one buffer, interleaved in 16-byte chunks,
 *   xq[64 j + 16 i + b] = byte 16 j + b of position i's window
 * (a last partial chunk padded with zeros, which meet zero weights), so that one pointer walks
 * all four: 10 instructions per 64 multiply-accumulates (VMLADAVA) and few live registers.
 * Stack: 4 * MCU_CONV_MVE_K bytes. */
#ifndef MCU_CONV_MVE_K
#define MCU_CONV_MVE_K 256
#endif
/* Output channels whose corrections are kept on the stack at a time on that path (2 words each). */
#ifndef MCU_CONV_MVE_OC_BLOCK
#define MCU_CONV_MVE_OC_BLOCK 64
#endif

/* Every channel of the block at four positions whose windows are interleaved in xq; output
 * pixels at out + i * out_step. Per channel: one pass over its weights, each 16-byte weight
 * vector meeting the four windows (VMLADAVA), the four sums plus corr requantized together
 * (requant4) and scattered with one store. */
MCU_CONV_NOINLINE static void quad_mve(const conv_ctx_t *c, const int8_t *xq, int8_t *out,
                                       int32_t out_step)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t k = c->filter_size;
    const int32_t chunks = k >> 4;
    const int32_t rest = k & 15;
    const mve_pred16_t tail = vctp8q((uint32_t)rest);
    const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)out_step);
    const int32x4_t lo = vdupq_n_s32(p->q.act_min);
    const int32x4_t hi = vdupq_n_s32(p->q.act_max);
    const int32_t *const corr = c->corr - c->oc_base;
    const int32_t *const base = c->base - c->oc_base;
    const int32_t *const multiplier = p->multiplier;
    const int32_t *const shift = p->shift;
    const int8_t *w = c->filter + c->oc_base * k;
    for (int32_t oc = c->oc_base; oc < c->oc_end; ++oc) {
        const int8_t *x = xq;
        const int32_t init = corr[oc];
        int32_t a0 = init, a1 = init, a2 = init, a3 = init;
        for (int32_t n = chunks; n > 0; --n) {
            const int8x16_t wv = vld1q_s8(w);
            w += 16;
            a0 = vmladavaq_s8(a0, vld1q_s8(x), wv);
            x += 16;
            a1 = vmladavaq_s8(a1, vld1q_s8(x), wv);
            x += 16;
            a2 = vmladavaq_s8(a2, vld1q_s8(x), wv);
            x += 16;
            a3 = vmladavaq_s8(a3, vld1q_s8(x), wv);
            x += 16;
        }
        if (rest != 0) {
            const int8x16_t wv = vldrbq_z_s8(w, tail);
            a0 = vmladavaq_s8(a0, vld1q_s8(x), wv);
            a1 = vmladavaq_s8(a1, vld1q_s8(x + 16), wv);
            a2 = vmladavaq_s8(a2, vld1q_s8(x + 32), wv);
            a3 = vmladavaq_s8(a3, vld1q_s8(x + 48), wv);
            w += rest;
        }
        const int32x4_t acc = vsetq_lane_s32(
            a3, vsetq_lane_s32(a2, vsetq_lane_s32(a1, vdupq_n_s32(a0), 1), 2), 3);
        int32x4_t v = requant4(acc, vdupq_n_s32(multiplier[oc]), vdupq_n_s32(base[oc]),
                               vdupq_n_s32(shift[oc]));
        v = vminq_s32(vmaxq_s32(v, lo), hi);
        vstrbq_scatter_offset_s32(out + oc, offsets, v);
    }
}

/* n bytes from src to dst / n copies of v's bytes to dst, 16 per predicated vector op */
static inline void copy_mve(int8_t *dst, const int8_t *src, int32_t n)
{
    for (; n > 0; n -= 16, dst += 16, src += 16) {
        const mve_pred16_t pr = vctp8q((uint32_t)n);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, pr), pr);
    }
}

static inline void fill_mve(int8_t *dst, int8x16_t v, int32_t n)
{
    for (; n > 0; n -= 16, dst += 16) {
        vstrbq_p_s8(dst, v, vctp8q((uint32_t)n));
    }
}

/* gather_patch with predicated vector copies instead of memcpy/memset calls per tap row. */
static void gather_mve(const conv_ctx_t *c, const window_t *win, int8_t *patch)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_c = p->input.c;
    const int32_t k_w = p->filter.w;
    const int8x16_t pad = vdupq_n_s8((int8_t)(-p->q.input_offset));
    const int32_t w_row = k_w * in_c;
    for (int32_t ky = 0; ky < p->filter.h; ++ky) {
        int8_t *const dst = patch + ky * w_row;
        if (ky < win->ky_begin || ky >= win->ky_end) {
            fill_mve(dst, pad, w_row);
            continue;
        }
        const int8_t *const src = win->in_batch + (win->y0 + ky * p->dilation_h) * c->in_row;
        fill_mve(dst, pad, win->kx_begin * in_c);
        if (p->dilation_w == 1) {
            copy_mve(dst + win->kx_begin * in_c, src + (win->x0 + win->kx_begin) * in_c,
                     (win->kx_end - win->kx_begin) * in_c);
        } else {
            for (int32_t kx = win->kx_begin; kx < win->kx_end; ++kx) {
                copy_mve(dst + kx * in_c, src + (win->x0 + kx * p->dilation_w) * in_c, in_c);
            }
        }
        fill_mve(dst + win->kx_end * in_c, pad, (k_w - win->kx_end) * in_c);
    }
}

/* One block of output channels (c->corr, c->base filled) through quad_mve: the positions four
 * at a time (the last one to three through pixel_mve), windows copied from the input when they
 * are one run of it, else gathered (padding taps holding the input zero point). */
MCU_CONV_NOINLINE static void conv_block_mve(const conv_ctx_t *c, const int8_t *input,
                                             int8_t *output, int8_t *patch)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_c = p->input.c;
    const int32_t k_h = p->filter.h;
    const int32_t k_w = p->filter.w;
    const int32_t out_h = p->output.h;
    const int32_t out_w = p->output.w;
    const int32_t k = c->filter_size;
    const int contiguous = k_h == 1 && (k_w == 1 || p->dilation_w == 1);
    const int32_t positions = p->input.n * out_h * out_w;
    int8_t xq[4 * MCU_CONV_MVE_K];
    /* a last partial chunk's padding: zeros (they meet zero weights) */
    memset(xq + 4 * (k & ~15), 0, (size_t)(4 * ((k + 15) & ~15) - 4 * (k & ~15)));
    for (int32_t n0 = 0; n0 < positions; n0 += 4) {
        /* four positions; fewer at the end, one at a time through pixel_mve */
        const int32_t count = positions - n0 < 4 ? positions - n0 : 4;
        for (int32_t i = 0; i < count; ++i) {
            const int32_t n = n0 + i;
            const int32_t b = n / (out_h * out_w);
            const int32_t out_y = n / out_w - b * out_h;
            const int32_t out_x = n - (b * out_h + out_y) * out_w;
            window_t win;
            win.in_batch = input + b * p->input.h * c->in_row;
            win.y0 = out_y * p->stride_h - p->pad_top;
            win.x0 = out_x * p->stride_w - p->pad_left;
            valid_taps(win.y0, p->dilation_h, k_h, p->input.h, &win.ky_begin, &win.ky_end);
            valid_taps(win.x0, p->dilation_w, k_w, p->input.w, &win.kx_begin, &win.kx_end);
            const int inside = win.ky_begin == 0 && win.ky_end == k_h && win.kx_begin == 0 &&
                               win.kx_end == k_w;
            const int8_t *src = patch;
            if (inside && contiguous) {
                src = win.in_batch + win.y0 * c->in_row + win.x0 * in_c;
            } else {
                gather_mve(c, &win, patch);
            }
            if (count < 4) {
                pixel_mve(c, src, output + n * p->output.c);
                continue;
            }
            int8_t *dst = xq + 16 * i;
            int32_t j = 0;
            for (; j + 16 <= k; j += 16, dst += 64) {
                vst1q_s8(dst, vld1q_s8(src + j));
            }
            if (j < k) {
                vstrbq_p_s8(dst, vldrbq_z_s8(src + j, vctp8q((uint32_t)(k - j))),
                            vctp8q((uint32_t)(k - j)));
            }
        }
        if (count < 4) {
            break;
        }
        quad_mve(c, xq, output + n0 * p->output.c, p->output.c);
    }
}
#endif

/* One block of output channels (c->corr filled) at every batch and output position. */
MCU_CONV_NOINLINE static void conv_block(const conv_ctx_t *c, const int8_t *input, int8_t *output,
                                         int8_t *patch_buf)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    const int32_t in_c = p->input.c;
    const int32_t k_h = p->filter.h;
    const int32_t k_w = p->filter.w;
    const int32_t out_h = p->output.h;
    const int32_t out_w = p->output.w;
    const int32_t out_c = p->output.c;
    /* A window inside the input is one run of it when its taps are adjacent in one row. */
    const int contiguous = k_h == 1 && (k_w == 1 || p->dilation_w == 1);
    for (int32_t b = 0; b < p->input.n; ++b) {
        window_t win;
        win.in_batch = input + b * in_h * c->in_row;
        for (int32_t out_y = 0; out_y < out_h; ++out_y) {
            win.y0 = out_y * p->stride_h - p->pad_top;
            valid_taps(win.y0, p->dilation_h, k_h, in_h, &win.ky_begin, &win.ky_end);
            for (int32_t out_x = 0; out_x < out_w; ++out_x) {
                win.x0 = out_x * p->stride_w - p->pad_left;
                valid_taps(win.x0, p->dilation_w, k_w, in_w, &win.kx_begin, &win.kx_end);
                int8_t *const out_px = output + ((b * out_h + out_y) * out_w + out_x) * out_c;
                /* acc[oc] = sum_{ky,kx,ic} (in[b,iy,ix,ic] + input_offset) * w[oc,ky,kx,ic]
                 *           + bias[oc]
                 *         = sum_{ky,kx,ic} in[b,iy,ix,ic] * w[oc,ky,kx,ic] + corr[oc]
                 * with iy = y0 + ky * dilation_h, ix = x0 + kx * dilation_w, the taps outside the
                 * input counting as in = -input_offset (adding nothing). */
                const int full = win.ky_begin == 0 && win.ky_end == k_h && win.kx_begin == 0 &&
                                 win.kx_end == k_w;
                if (full && contiguous) {
                    pixel_from_patch(c, win.in_batch + win.y0 * c->in_row + win.x0 * in_c, out_px);
                } else if (c->filter_size <= MCU_CONV_PATCH_BYTES) {
                    gather_patch(c, &win, patch_buf);
                    pixel_from_patch(c, patch_buf, out_px);
                } else {
                    pixel_from_runs(c, &win, out_px);
                }
            }
        }
    }
}

#if defined(MCU_CONV_DSP)

/*
 * DSP fast path: P = 4, 2 or 1 output positions at a time (as many as the window buffer holds).
 * Their windows (K = KH * KW * C_in values each) are extended once to int16
 * 2 * (x + input_offset) (SXTAB16, SADD16) and interleaved in a stack buffer, four values of
 * one position in two words, the P positions one after the other:
 *   xbuf[2 (P g + p)] = lanes (x[4g], x[4g + 2]),  xbuf[2 (P g + p) + 1] = (x[4g + 1], x[4g + 3])
 * of position p, value group g (a last partial group padded with zero values; its weights are
 * assembled with zeros). Then every output channel's K weights are read once per P positions,
 * four per 4-byte load, unpacked once (SXTB16) for the P positions, two SMLAD per position;
 * P = 1 takes two output channels per pass. Instructions per 16 multiply-accumulates: 17
 * (P = 4), 22 (P = 2), 26 (P = 1), in small inline-assembly loops (gcc splits the LDRD pairs
 * and spends a register per pointer). The doubled sums are requantized in four instructions
 * (requant2 in mcu_kernel_util.h).
 * A window is read straight from the input when it is one run of it, else run by run (zero
 * words for the padding taps; needs C_in % 4 == 0), else (K <= MCU_CONV_DSP_PATCH) gathered by
 * gather_patch first.
 * Conditions (else the generic path): K <= 2 * MCU_CONV_DSP_WORDS, requant2_ok() for every
 * output channel (then |acc| < 2^29 + 576 * 255 * 128 < 2^30).
 */
/* The window buffer in words (overridable: 288 = 1152 bytes of stack; P = 4 up to K = 144,
 * P = 2 up to 288, P = 1 up to 576) and the byte buffer for windows gathered byte by byte. */
#ifndef MCU_CONV_DSP_WORDS
#define MCU_CONV_DSP_WORDS 288
#endif
#ifndef MCU_CONV_DSP_PATCH
#define MCU_CONV_DSP_PATCH 144
#endif

/* Positions per pass (P) of this call; 0 when the DSP path cannot run. */
static int32_t dsp_positions(const mcu_conv_params_t *p, const int32_t *bias)
{
    if (p->filter.h > 2 * MCU_CONV_DSP_WORDS || p->filter.w > 2 * MCU_CONV_DSP_WORDS ||
        p->input.c > 2 * MCU_CONV_DSP_WORDS) {
        return 0;
    }
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t groups = (k + 3) >> 2;
    if (groups * 2 > MCU_CONV_DSP_WORDS || (k > MCU_CONV_DSP_PATCH && p->input.c % 4 != 0)) {
        return 0;
    }
    for (int32_t oc = 0; oc < p->output.c; ++oc) {
        if (!requant2_ok(p->multiplier[oc], p->shift[oc], bias != NULL ? bias[oc] : 0)) {
            return 0;
        }
    }
    const int32_t positions = p->input.n * p->output.h * p->output.w;
    int32_t per_pass = groups * 8 <= MCU_CONV_DSP_WORDS ? 4 : (groups * 4 <= MCU_CONV_DSP_WORDS ? 2 : 1);
    while (per_pass > positions) {
        per_pass >>= 1;
    }
    return per_pass;
}

/* n (> 0) bytes from src, as int16 2 * (x + input_offset), into dst[0], dst[1] and on every
 * `step` words, four values at a time; a last partial group reads only its own bytes. */
static void extend(int32_t *dst, const int8_t *src, int32_t n, int32_t step, int32_t offset2)
{
    for (; n >= 4; n -= 4, src += 4, dst += step) {
        const uint32_t v = read_s8x4(src);
        const int32_t even = __sxtab16(offset2, (int32_t)v);
        const int32_t odd = sxtab16_ror8(offset2, v);
        dst[0] = __sadd16(even, even);
        dst[1] = __sadd16(odd, odd);
    }
    if (n > 0) {
        /* bytes past the window hold the input zero point: zero values */
        const uint32_t zero_point = (uint32_t)(uint8_t)(-(int16_t)offset2);
        uint32_t v = 0u;
        for (int32_t i = 0; i < 4; ++i) {
            v |= (i < n ? (uint32_t)(uint8_t)src[i] : zero_point) << (8 * i);
        }
        const int32_t even = __sxtab16(offset2, (int32_t)v);
        const int32_t odd = sxtab16_ror8(offset2, v);
        dst[0] = __sadd16(even, even);
        dst[1] = __sadd16(odd, odd);
    }
}

/* `groups` groups of zero values (padding taps) */
static void extend_zero(int32_t *dst, int32_t groups, int32_t step)
{
    for (; groups > 0; --groups, dst += step) {
        dst[0] = 0;
        dst[1] = 0;
    }
}

#if defined(__OPTIMIZE__) && defined(__GNUC__)

/* a[p] += sum over n (>= 1) value groups of xbuf(p) * w, p < 4 */
MCU_CONV_INLINE void dot_p4(int32_t a[4], const int32_t *xb, const int8_t **wp, int32_t n)
{
    const int8_t *w = *wp;
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    int32_t x0, x1, we, wo;
    __asm__("1:\n\t"
            "ldr     %[wo], [%[w]], #4\n\t"
            "ldrd    %[x0], %[x1], [%[xb]], #8\n\t"
            "sxtb16  %[we], %[wo]\n\t"
            "sxtb16  %[wo], %[wo], ror #8\n\t"
            "smlad   %[a0], %[x0], %[we], %[a0]\n\t"
            "smlad   %[a0], %[x1], %[wo], %[a0]\n\t"
            "ldrd    %[x0], %[x1], [%[xb]], #8\n\t"
            "smlad   %[a1], %[x0], %[we], %[a1]\n\t"
            "smlad   %[a1], %[x1], %[wo], %[a1]\n\t"
            "ldrd    %[x0], %[x1], [%[xb]], #8\n\t"
            "smlad   %[a2], %[x0], %[we], %[a2]\n\t"
            "smlad   %[a2], %[x1], %[wo], %[a2]\n\t"
            "ldrd    %[x0], %[x1], [%[xb]], #8\n\t"
            "smlad   %[a3], %[x0], %[we], %[a3]\n\t"
            "smlad   %[a3], %[x1], %[wo], %[a3]\n\t"
            "subs    %[n], %[n], #1\n\t"
            "bne     1b"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [xb] "+r"(xb),
              [w] "+r"(w), [n] "+r"(n), [x0] "=&r"(x0), [x1] "=&r"(x1), [we] "=&r"(we),
              [wo] "=&r"(wo)
            :
            : "cc", "memory");
    *wp = w;
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

/* a[p] += sum over n (>= 1) value groups of xbuf(p) * w, p < 2 */
MCU_CONV_INLINE void dot_p2(int32_t a[2], const int32_t *xb, const int8_t **wp, int32_t n)
{
    const int8_t *w = *wp;
    int32_t a0 = a[0], a1 = a[1];
    int32_t x0, x1, we, wo;
    __asm__("1:\n\t"
            "ldr     %[wo], [%[w]], #4\n\t"
            "ldrd    %[x0], %[x1], [%[xb]], #8\n\t"
            "sxtb16  %[we], %[wo]\n\t"
            "sxtb16  %[wo], %[wo], ror #8\n\t"
            "smlad   %[a0], %[x0], %[we], %[a0]\n\t"
            "smlad   %[a0], %[x1], %[wo], %[a0]\n\t"
            "ldrd    %[x0], %[x1], [%[xb]], #8\n\t"
            "smlad   %[a1], %[x0], %[we], %[a1]\n\t"
            "smlad   %[a1], %[x1], %[wo], %[a1]\n\t"
            "subs    %[n], %[n], #1\n\t"
            "bne     1b"
            : [a0] "+r"(a0), [a1] "+r"(a1), [xb] "+r"(xb), [w] "+r"(w), [n] "+r"(n),
              [x0] "=&r"(x0), [x1] "=&r"(x1), [we] "=&r"(we), [wo] "=&r"(wo)
            :
            : "cc", "memory");
    *wp = w;
    a[0] = a0;
    a[1] = a1;
}

/* a[c] += sum over n (>= 1) value groups of xbuf(0) * w_c, w_0 = w, w_1 = w + k */
MCU_CONV_INLINE void dot_p1x2(int32_t a[2], const int32_t *xb, const int8_t *w, int32_t k,
                            int32_t n)
{
    int32_t a0 = a[0], a1 = a[1];
    int32_t x0, x1, we, wo;
    __asm__("1:\n\t"
            "ldrd    %[x0], %[x1], [%[xb]], #8\n\t"
            "ldr     %[wo], [%[w], %[k]]\n\t"
            "sxtb16  %[we], %[wo]\n\t"
            "sxtb16  %[wo], %[wo], ror #8\n\t"
            "smlad   %[a1], %[x0], %[we], %[a1]\n\t"
            "smlad   %[a1], %[x1], %[wo], %[a1]\n\t"
            "ldr     %[wo], [%[w]], #4\n\t"
            "sxtb16  %[we], %[wo]\n\t"
            "sxtb16  %[wo], %[wo], ror #8\n\t"
            "smlad   %[a0], %[x0], %[we], %[a0]\n\t"
            "smlad   %[a0], %[x1], %[wo], %[a0]\n\t"
            "subs    %[n], %[n], #1\n\t"
            "bne     1b"
            : [a0] "+r"(a0), [a1] "+r"(a1), [xb] "+r"(xb), [w] "+r"(w), [n] "+r"(n),
              [x0] "=&r"(x0), [x1] "=&r"(x1), [we] "=&r"(we), [wo] "=&r"(wo)
            : [k] "r"(k)
            : "cc", "memory");
    a[0] = a0;
    a[1] = a1;
}

#else /* unoptimized builds: the same in C */

MCU_CONV_INLINE void dot_p4(int32_t a[4], const int32_t *xb, const int8_t **wp, int32_t n)
{
    const int8_t *w = *wp;
    for (; n > 0; --n, xb += 8, w += 4) {
        const uint32_t v = read_s8x4(w);
        const int32_t we = __sxtb16((int32_t)v);
        const int32_t wo = sxtb16_ror8(v);
        for (int32_t p = 0; p < 4; ++p) {
            a[p] = __smlad(xb[2 * p + 1], wo, __smlad(xb[2 * p], we, a[p]));
        }
    }
    *wp = w;
}

MCU_CONV_INLINE void dot_p2(int32_t a[2], const int32_t *xb, const int8_t **wp, int32_t n)
{
    const int8_t *w = *wp;
    for (; n > 0; --n, xb += 4, w += 4) {
        const uint32_t v = read_s8x4(w);
        const int32_t we = __sxtb16((int32_t)v);
        const int32_t wo = sxtb16_ror8(v);
        a[0] = __smlad(xb[1], wo, __smlad(xb[0], we, a[0]));
        a[1] = __smlad(xb[3], wo, __smlad(xb[2], we, a[1]));
    }
    *wp = w;
}

MCU_CONV_INLINE void dot_p1x2(int32_t a[2], const int32_t *xb, const int8_t *w, int32_t k,
                            int32_t n)
{
    for (; n > 0; --n, xb += 2, w += 4) {
        for (int32_t c = 0; c < 2; ++c) {
            const uint32_t v = read_s8x4(w + c * k);
            a[c] = __smlad(xb[1], sxtb16_ror8(v), __smlad(xb[0], __sxtb16((int32_t)v), a[c]));
        }
    }
}

#endif

/* The k - 4 * (k / 4) (1..3) weights of a last partial group at w, as the lane pairs
 * (w[0], w[2]) and (w[1], w[3]), zero past the end. */
static void tail_weights(const int8_t *w, int32_t tail, int32_t *we, int32_t *wo)
{
    const int32_t w1 = tail > 1 ? w[1] : 0;
    const int32_t w2 = tail > 2 ? w[2] : 0;
    *we = (int32_t)(((uint32_t)w[0] & 0xFFFFu) | ((uint32_t)w2 << 16));
    *wo = (int32_t)((uint32_t)w1 & 0xFFFFu);
}

/* requant2 of a doubled sum, clamped to the activation range unless it is the full int8 one */
static inline int8_t dsp_out(int32_t acc2, int32_t mult, int32_t base, int32_t shift,
                             const mcu_quant_io_t *q, int full)
{
    int32_t v = requant2(acc2, mult, base, -shift);
    if (!full) {
        v = mcu_clamp_s32(v, q->act_min, q->act_max);
    }
    return (int8_t)v;
}

/* Every output channel of P = per_pass (4 or 2, a constant where inlined) consecutive positions
 * whose windows are in xbuf; out: the first one's output pixel. */
MCU_CONV_INLINE void dsp_channels_p(const mcu_conv_params_t *p, const int32_t *xbuf,
                                  const int8_t *filter, const int32_t *bias, int8_t *out,
                                  int32_t per_pass)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t full_groups = k >> 2;
    const int32_t tail = k & 3;
    const int32_t out_c = p->output.c;
    const mcu_quant_io_t q = p->q;
    const int full = q.act_min == MCU_INT8_MIN && q.act_max == MCU_INT8_MAX;
    const int32_t *const multiplier = p->multiplier;
    const int32_t *const shift = p->shift;
    const int32_t *const xtail = xbuf + 2 * per_pass * full_groups;
    const int8_t *w = filter; /* advanced by the dot products */
    for (int32_t oc = 0; oc < out_c; ++oc) {
        const int32_t b2 = bias != NULL ? 2 * bias[oc] : 0;
        int32_t a[4] = {b2, b2, b2, b2};
        if (full_groups > 0) {
            if (per_pass == 4) {
                dot_p4(a, xbuf, &w, full_groups);
            } else {
                dot_p2(a, xbuf, &w, full_groups);
            }
        }
        int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
        if (tail != 0) {
            int32_t we, wo;
            tail_weights(w, tail, &we, &wo);
            w += tail;
            a0 = __smlad(xtail[1], wo, __smlad(xtail[0], we, a0));
            a1 = __smlad(xtail[3], wo, __smlad(xtail[2], we, a1));
            if (per_pass == 4) {
                a2 = __smlad(xtail[5], wo, __smlad(xtail[4], we, a2));
                a3 = __smlad(xtail[7], wo, __smlad(xtail[6], we, a3));
            }
        }
        const int32_t mult = multiplier[oc];
        const int32_t sh = shift[oc];
        const int32_t base = requant2_base(sh, q.output_offset);
        a0 = requant2(a0, mult, base, -sh);
        a1 = requant2(a1, mult, base, -sh);
        if (per_pass == 4) {
            a2 = requant2(a2, mult, base, -sh);
            a3 = requant2(a3, mult, base, -sh);
        }
        if (!full) {
            a0 = mcu_clamp_s32(a0, q.act_min, q.act_max);
            a1 = mcu_clamp_s32(a1, q.act_min, q.act_max);
            a2 = mcu_clamp_s32(a2, q.act_min, q.act_max);
            a3 = mcu_clamp_s32(a3, q.act_min, q.act_max);
        }
        int8_t *const o = out + oc;
        if (per_pass == 4) {
            o[3 * out_c] = (int8_t)a3;
            o[2 * out_c] = (int8_t)a2;
        }
        o[out_c] = (int8_t)a1;
        o[0] = (int8_t)a0;
    }
}

/* P = 1: every output channel of one position, two channels per pass */
static void dsp_channels_p1(const mcu_conv_params_t *p, const int32_t *xbuf,
                            const int8_t *filter, const int32_t *bias, int8_t *out)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t full_groups = k >> 2;
    const int32_t tail = k & 3;
    const int32_t out_c = p->output.c;
    const mcu_quant_io_t q = p->q;
    const int full = q.act_min == MCU_INT8_MIN && q.act_max == MCU_INT8_MAX;
    const int32_t *const xtail = xbuf + 2 * full_groups;
    for (int32_t oc = 0; oc < out_c; oc += 2) {
        /* (an odd last channel is computed twice) */
        const int32_t oc1 = oc + 1 < out_c ? oc + 1 : oc;
        const int8_t *const w = filter + oc * k;
        const int32_t step = (oc1 - oc) * k;
        int32_t a[2] = {bias != NULL ? 2 * bias[oc] : 0, bias != NULL ? 2 * bias[oc1] : 0};
        if (full_groups > 0) {
            dot_p1x2(a, xbuf, w, step, full_groups);
        }
        if (tail != 0) {
            for (int32_t c = 0; c < 2; ++c) {
                int32_t we, wo;
                tail_weights(w + c * step + 4 * full_groups, tail, &we, &wo);
                a[c] = __smlad(xtail[1], wo, __smlad(xtail[0], we, a[c]));
            }
        }
        const int8_t v1 = dsp_out(a[1], p->multiplier[oc1],
                                  requant2_base(p->shift[oc1], q.output_offset), p->shift[oc1],
                                  &q, full);
        const int8_t v0 = dsp_out(a[0], p->multiplier[oc],
                                  requant2_base(p->shift[oc], q.output_offset), p->shift[oc], &q,
                                  full);
        out[oc1] = v1;
        out[oc] = v0;
    }
}

/* Every output channel of per_pass consecutive positions whose windows are in xbuf. */
MCU_CONV_NOINLINE static void dsp_channels(const mcu_conv_params_t *p, const int32_t *xbuf,
                                           const int8_t *filter, const int32_t *bias,
                                           int8_t *out, int32_t per_pass)
{
    if (per_pass == 4) {
        dsp_channels_p(p, xbuf, filter, bias, out, 4);
    } else if (per_pass == 2) {
        dsp_channels_p(p, xbuf, filter, bias, out, 2);
    } else {
        dsp_channels_p1(p, xbuf, filter, bias, out);
    }
}

/* Position n's window into xbuf slot `slot` of per_pass (see above). */
static void dsp_window(const conv_ctx_t *c, const int8_t *input, int32_t n, int32_t *xbuf,
                       int32_t slot, int32_t per_pass, int8_t *patch)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_c = p->input.c;
    const int32_t k_h = p->filter.h;
    const int32_t k_w = p->filter.w;
    const int32_t out_h = p->output.h;
    const int32_t out_w = p->output.w;
    const int32_t offset2 = (int32_t)(((uint32_t)p->q.input_offset & 0xFFFFu) |
                                      ((uint32_t)p->q.input_offset << 16));
    const int32_t step = 2 * per_pass;
    int32_t *dst = xbuf + 2 * slot;
    const int32_t b = n / (out_h * out_w);
    const int32_t out_y = n / out_w - b * out_h;
    const int32_t out_x = n - (b * out_h + out_y) * out_w;
    window_t win;
    win.in_batch = input + b * p->input.h * c->in_row;
    win.y0 = out_y * p->stride_h - p->pad_top;
    win.x0 = out_x * p->stride_w - p->pad_left;
    valid_taps(win.y0, p->dilation_h, k_h, p->input.h, &win.ky_begin, &win.ky_end);
    valid_taps(win.x0, p->dilation_w, k_w, p->input.w, &win.kx_begin, &win.kx_end);
    const int inside = win.ky_begin == 0 && win.ky_end == k_h && win.kx_begin == 0 &&
                       win.kx_end == k_w;
    /* A window inside the input is one run of it when its taps are adjacent in one row. */
    if (inside && k_h == 1 && (k_w == 1 || p->dilation_w == 1)) {
        extend(dst, win.in_batch + win.y0 * c->in_row + win.x0 * in_c, c->filter_size, step,
               offset2);
    } else if (in_c % 4 == 0) {
        /* tap by tap: C_in / 4 value groups each, zero values for the padding taps */
        const int32_t tap_groups = in_c >> 2;
        for (int32_t ky = 0; ky < k_h; ++ky) {
            const int row_ok = ky >= win.ky_begin && ky < win.ky_end;
            const int8_t *const row =
                row_ok ? win.in_batch + (win.y0 + ky * p->dilation_h) * c->in_row : input;
            for (int32_t kx = 0; kx < k_w; ++kx, dst += tap_groups * step) {
                if (row_ok && kx >= win.kx_begin && kx < win.kx_end) {
                    extend(dst, row + (win.x0 + kx * p->dilation_w) * in_c, in_c, step, offset2);
                } else {
                    extend_zero(dst, tap_groups, step);
                }
            }
        }
    } else {
        gather_patch(c, &win, patch);
        extend(dst, patch, c->filter_size, step, offset2);
    }
}

/* The whole convolution through the DSP path, per_pass = dsp_positions(). */
MCU_CONV_NOINLINE static void dsp_conv(const mcu_conv_params_t *p, const int8_t *input,
                                       const int8_t *filter, const int32_t *bias,
                                       int8_t *output, int32_t per_pass)
{
    int32_t xbuf[MCU_CONV_DSP_WORDS];
    int8_t patch[MCU_CONV_DSP_PATCH];
    conv_ctx_t c;
    c.params = p;
    c.filter = filter;
    c.filter_size = p->filter.h * p->filter.w * p->input.c;
    c.in_row = p->input.w * p->input.c;
    const int32_t positions = p->input.n * p->output.h * p->output.w;
    for (int32_t first = 0; first < positions; first += per_pass) {
        /* per_pass consecutive positions; the last pass overlaps the one before (recomputing
         * up to per_pass - 1 positions, which writes the same values again) */
        const int32_t n0 = first + per_pass <= positions ? first : positions - per_pass;
        for (int32_t i = 0; i < per_pass; ++i) {
            dsp_window(&c, input, n0 + i, xbuf, i, per_pass, patch);
        }
        dsp_channels(p, xbuf, filter, bias, output + n0 * p->output.c, per_pass);
    }
}

#endif

mcu_status_t mcu_conv2d_s8(const mcu_conv_params_t *params, const int8_t *input,
                           const int8_t *filter, const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_dims_t *const in_dims = &params->input;
    const mcu_dims_t *const f_dims = &params->filter;
    const mcu_dims_t *const out_dims = &params->output;
    if (!dims_valid(in_dims) || !dims_valid(f_dims) || !dims_valid(out_dims) ||
        f_dims->c != in_dims->c || f_dims->n != out_dims->c || out_dims->n != in_dims->n ||
        params->stride_h < 1 || params->stride_w < 1 || params->dilation_h < 1 ||
        params->dilation_w < 1 || params->pad_top < 0 || params->pad_left < 0 ||
        !quant_io_valid(&params->q) || !shifts_valid(params->shift, out_dims->c)) {
        return MCU_ERR_ARG;
    }

#if defined(MCU_CONV_DSP)
    const int32_t per_pass = dsp_positions(params, bias);
    if (per_pass > 0) {
        dsp_conv(params, input, filter, bias, output, per_pass);
        return MCU_OK;
    }
#endif
    const int32_t out_c = out_dims->c;
    const int32_t input_offset = params->q.input_offset;
    const int32_t filter_size = f_dims->h * f_dims->w * in_dims->c;
    /* Stack buffers sized to this call's need (C99 variable-length arrays, bounded by the two
     * macros): the patch when windows are gathered, the block's corrections. */
    int8_t patch_buf[filter_size <= MCU_CONV_PATCH_BYTES ? filter_size : 1];
    int32_t corr[out_c < MCU_CONV_OC_BLOCK ? out_c : MCU_CONV_OC_BLOCK];
    conv_ctx_t c;
    c.params = params;
    c.filter = filter;
    c.filter_size = filter_size;
    c.in_row = in_dims->w * in_dims->c;
    c.corr = corr;
    c.base = NULL;
#if defined(MCU_CONV_MVE)
    /* requant4 when every channel allows it (|acc| < 2^29 + 16384 * 255 * 128 < 2^30) */
    int fast = filter_size <= 16384;
    for (int32_t oc = 0; oc < out_c && fast; ++oc) {
        fast = requant2_ok(params->multiplier[oc], params->shift[oc], bias != NULL ? bias[oc] : 0);
    }
    int32_t base[fast && out_c < MCU_CONV_OC_BLOCK ? out_c : (fast ? MCU_CONV_OC_BLOCK : 1)];
    if (fast) {
        c.base = base;
    }
#endif
#if defined(MCU_CONV_MVE)
    /* four positions at a time where their windows fit (gathered ones: the patch), in blocks of
     * MCU_CONV_MVE_OC_BLOCK channels (each window gathered once per block) */
    if (fast && filter_size <= MCU_CONV_MVE_K && filter_size <= MCU_CONV_PATCH_BYTES) {
        int32_t corr_q[out_c < MCU_CONV_MVE_OC_BLOCK ? out_c : MCU_CONV_MVE_OC_BLOCK];
        int32_t base_q[out_c < MCU_CONV_MVE_OC_BLOCK ? out_c : MCU_CONV_MVE_OC_BLOCK];
        c.corr = corr_q;
        c.base = base_q;
        for (c.oc_base = 0; c.oc_base < out_c; c.oc_base += MCU_CONV_MVE_OC_BLOCK) {
            c.oc_end = out_c - c.oc_base < MCU_CONV_MVE_OC_BLOCK ? out_c
                                                                  : c.oc_base + MCU_CONV_MVE_OC_BLOCK;
            for (int32_t oc = c.oc_base; oc < c.oc_end; ++oc) {
                const int32_t w_sum = sum_s8(filter + oc * filter_size, filter_size);
                corr_q[oc - c.oc_base] =
                    add_wrap(bias != NULL ? bias[oc] : 0,
                             (int32_t)((uint32_t)input_offset * (uint32_t)w_sum));
                base_q[oc - c.oc_base] = requant2_base(params->shift[oc], params->q.output_offset);
            }
            conv_block_mve(&c, input, output, patch_buf);
        }
        return MCU_OK;
    }
#endif
    for (c.oc_base = 0; c.oc_base < out_c; c.oc_base += MCU_CONV_OC_BLOCK) {
        c.oc_end = out_c - c.oc_base < MCU_CONV_OC_BLOCK ? out_c : c.oc_base + MCU_CONV_OC_BLOCK;
        /* corr[oc] = bias[oc] + input_offset * sum_{ky,kx,ic} w[oc,ky,kx,ic] */
        for (int32_t oc = c.oc_base; oc < c.oc_end; ++oc) {
            const int32_t w_sum = sum_s8(filter + oc * filter_size, filter_size);
            corr[oc - c.oc_base] = add_wrap(bias != NULL ? bias[oc] : 0,
                                            (int32_t)((uint32_t)input_offset * (uint32_t)w_sum));
#if defined(MCU_CONV_MVE)
            if (fast) {
                base[oc - c.oc_base] = requant2_base(params->shift[oc], params->q.output_offset);
            }
#endif
        }
        conv_block(&c, input, output, patch_buf);
    }
    return MCU_OK;
}
