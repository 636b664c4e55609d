/*
 * mcu_conv2d_s8_dsp.c - the DSP path of mcu_conv2d_s8 (__ARM_FEATURE_DSP; see mcu_conv2d_s8.c for
 * the dispatch, and mcu_conv2d_s8_dsp_positions() there for when it runs).
 *
 * P = 4, 2 or 1 output positions at a time (as many as MCU_CONV_DSP_WORDS allows). Their windows
 * (K = KH * KW * C_in values each) are extended once to int16 2 * (x + input_offset) (SXTAB16,
 * SADD16) and interleaved in scratch, four values of one position in two words, the P positions
 * one after the other:
 *   xbuf[2 (P g + p)] = lanes (x[4g], x[4g + 2]),  xbuf[2 (P g + p) + 1] = (x[4g + 1], x[4g + 3])
 * of position p, value group g (a last partial group padded with zero values; its weights are
 * assembled with zeros). Then every output channel's K weights are read once per P positions,
 * four per 4-byte load, unpacked once (SXTB16) for the P positions, two SMLAD per position;
 * P = 1 takes two output channels per pass. Instructions per 16 multiply-accumulates: 17
 * (P = 4), 22 (P = 2), 26 (P = 1), in small inline-assembly loops (gcc splits the LDRD pairs
 * and spends a register per pointer), each beside its C fallback (unoptimized builds). The
 * doubled sums are requantized in four instructions (mcu_requant2 in mcu_requant.h).
 * A window is read straight from the input when it is one run of it, else tap by tap (zero
 * words for the padding taps; needs C_in % 4 == 0), else row by row (KW * C_in % 4 == 0, no
 * horizontal dilation: a row across the input's edge assembled in the patch first), else
 * (K <= MCU_CONV_DSP_PATCH) gathered by mcu_conv2d_s8_gather first.
 * Conditions (else the generic path): K <= 2 * MCU_CONV_DSP_WORDS, mcu_requant2_ok() for every
 * output channel (then |acc| < 2^29 + 576 * 255 * 128 < 2^30).
 * Scratch: 8 * P * ceil(K / 4) bytes of interleaved windows (xbuf), then the patch when
 * windows are gathered byte by byte (K bytes) or rows across the edge assembled (KW * C_in).
 * The lean call (mcu_conv2d_s8_dsp_lean) keeps at most P = 2 windows (half the xbuf of P = 4)
 * and meets them with two channels at a time (dot_p2x2: 19 instructions per 16 products).
 */
#include <stdint.h>

#include "mcu_conv2d_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_DSP
#include <arm_acle.h>

/* n (> 0) bytes from src, as int16 2 * (x + input_offset), into dst[0], dst[1] and on every
 * `step` words, four values at a time; a last partial group reads only its own bytes. */
static void extend(int32_t *dst, const int8_t *src, int32_t n, int32_t step, int32_t offset2)
{
    /* an end pointer, not a count: the loop is as short under clang as under gcc */
    const int8_t *const end = src + (n & ~3);
    for (; src != end; src += 4, dst += step) {
        const uint32_t v = read_s8x4(src);
        const int32_t even = __sxtab16(offset2, (int32_t)v);
        const int32_t odd = sxtab16_ror8(offset2, v);
        dst[0] = __sadd16(even, even);
        dst[1] = __sadd16(odd, odd);
    }
    n &= 3;
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

/* `groups` (> 0) whole groups of four bytes from src, as extend() (inline: the short rows of a
 * window read row by row) */
MCU_CONV_INLINE void extend_groups(int32_t *dst, const int8_t *src, int32_t groups, int32_t step,
                                   int32_t offset2)
{
    do {
        const uint32_t v = read_s8x4(src);
        const int32_t even = __sxtab16(offset2, (int32_t)v);
        const int32_t odd = sxtab16_ror8(offset2, v);
        dst[0] = __sadd16(even, even);
        dst[1] = __sadd16(odd, odd);
        src += 4;
        dst += step;
    } while (--groups > 0);
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

/* a[2 c + p] += sum over n (>= 1) value groups of xbuf(p) * w_c, p < 2, c < 2, w_0 = w,
 * w_1 = w + k (P = 2 with channel pairs, the lean call: 19 instructions per 16 products in twelve
 * registers, the first position's window read twice) */
MCU_CONV_INLINE void dot_p2x2(int32_t a[4], const int32_t *xb, const int8_t *w, int32_t k,
                              int32_t n)
{
    int32_t a0 = a[0], a1 = a[1], b0 = a[2], b1 = a[3];
    int32_t x0, x1, we, wo;
    __asm__("1:\n\t"
            "ldr     %[wo], [%[w], %[k]]\n\t"
            "sxtb16  %[we], %[wo]\n\t"
            "sxtb16  %[wo], %[wo], ror #8\n\t"
            "ldrd    %[x0], %[x1], [%[xb]]\n\t"
            "smlad   %[b0], %[x0], %[we], %[b0]\n\t"
            "smlad   %[b0], %[x1], %[wo], %[b0]\n\t"
            "ldrd    %[x0], %[x1], [%[xb], #8]\n\t"
            "smlad   %[b1], %[x0], %[we], %[b1]\n\t"
            "smlad   %[b1], %[x1], %[wo], %[b1]\n\t"
            "ldr     %[wo], [%[w]], #4\n\t"
            "sxtb16  %[we], %[wo]\n\t"
            "sxtb16  %[wo], %[wo], ror #8\n\t"
            "smlad   %[a1], %[x0], %[we], %[a1]\n\t"
            "smlad   %[a1], %[x1], %[wo], %[a1]\n\t"
            "ldrd    %[x0], %[x1], [%[xb]], #16\n\t"
            "smlad   %[a0], %[x0], %[we], %[a0]\n\t"
            "smlad   %[a0], %[x1], %[wo], %[a0]\n\t"
            "subs    %[n], %[n], #1\n\t"
            "bne     1b"
            : [a0] "+r"(a0), [a1] "+r"(a1), [b0] "+r"(b0), [b1] "+r"(b1), [xb] "+r"(xb),
              [w] "+r"(w), [n] "+r"(n), [x0] "=&r"(x0), [x1] "=&r"(x1), [we] "=&r"(we),
              [wo] "=&r"(wo)
            : [k] "r"(k)
            : "cc", "memory");
    a[0] = a0;
    a[1] = a1;
    a[2] = b0;
    a[3] = b1;
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


MCU_CONV_INLINE void dot_p2x2(int32_t a[4], const int32_t *xb, const int8_t *w, int32_t k,
                              int32_t n)
{
    for (; n > 0; --n, xb += 4, w += 4) {
        for (int32_t c = 0; c < 2; ++c) {
            const uint32_t v = read_s8x4(w + c * k);
            const int32_t we = __sxtb16((int32_t)v);
            const int32_t wo = sxtb16_ror8(v);
            a[2 * c] = __smlad(xb[1], wo, __smlad(xb[0], we, a[2 * c]));
            a[2 * c + 1] = __smlad(xb[3], wo, __smlad(xb[2], we, a[2 * c + 1]));
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

/* mcu_requant2 of a doubled sum, clamped to the activation range unless it is the full int8 one */
static inline int8_t dsp_out(int32_t acc2, int32_t mult, int32_t base, int32_t shift,
                             const mcu_quant_io_t *q, int full)
{
    int32_t v = mcu_requant2(acc2, mult, base, -shift);
    if (!full) {
        v = mcu_clamp_s32(v, q->act_min, q->act_max);
    }
    return (int8_t)v;
}

/* Every output channel of P = per_pass (4 or 2, a constant where inlined) consecutive positions
 * whose windows are in xbuf; out: the first one's output pixel. no_tie (a constant where
 * inlined): rounding is MCU_ROUND_NEAREST_NO_TIE, rq[2 oc] and rq[2 oc + 1] channel oc's doubled
 * mcu_requant2_lift and base' (mcu_requant2_no_tie, computed once per call). */
MCU_CONV_INLINE void dsp_channels_p(const mcu_conv_params_t *p, const int32_t *xbuf,
                                  const int8_t *filter, const int32_t *bias, int8_t *out,
                                  int32_t per_pass, int no_tie, const int32_t *rq,
                                  const mcu_conv_fuse_t *fuse)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t full_groups = k >> 2;
    const int32_t tail = k & 3;
    const int32_t out_c = p->output.c; /* the output pixel's stride */
    const int32_t n_c = p->filter.n;   /* its channels computed (output.c, or mcu_conv2d_s4's block) */
    const mcu_quant_io_t q = p->q;
    const int full = q.act_min == MCU_INT8_MIN && q.act_max == MCU_INT8_MAX;
    const int32_t *const multiplier = p->multiplier;
    const int32_t *const shift = p->shift;
    const int32_t *const xtail = xbuf + 2 * per_pass * full_groups;
    const int8_t *w = filter; /* advanced by the dot products */
    for (int32_t oc = 0; oc < n_c; ++oc) {
        int32_t b2 = bias != NULL ? 2 * bias[oc] : 0;
        int32_t base_no_tie = 0;
        if (no_tie) {
            b2 += rq[2 * oc];
            base_no_tie = rq[2 * oc + 1];
        }
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
        const int32_t base = no_tie ? base_no_tie : mcu_requant2_base(sh, q.output_offset);
        a0 = mcu_requant2(a0, mult, base, -sh);
        a1 = mcu_requant2(a1, mult, base, -sh);
        if (per_pass == 4) {
            a2 = mcu_requant2(a2, mult, base, -sh);
            a3 = mcu_requant2(a3, mult, base, -sh);
        }
        if (!full) {
            a0 = mcu_clamp_s32(a0, q.act_min, q.act_max);
            a1 = mcu_clamp_s32(a1, q.act_min, q.act_max);
            a2 = mcu_clamp_s32(a2, q.act_min, q.act_max);
            a3 = mcu_clamp_s32(a3, q.act_min, q.act_max);
        }
        int8_t *const o = out + oc;
        if (fuse != NULL) { /* the residual Add: each value with the skip element at its place */
            const int32_t v[4] = {a0, a1, a2, a3};
            mcu_conv2d_s8_fuse_store(fuse, o, out_c, v, per_pass);
            continue;
        }
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
                            const int8_t *filter, const int32_t *bias, int8_t *out,
                            const int32_t *rq, const mcu_conv_fuse_t *fuse)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t full_groups = k >> 2;
    const int32_t tail = k & 3;
    const int32_t out_c = p->filter.n; /* channels computed (see dsp_channels_p) */
    const mcu_quant_io_t q = p->q;
    const int full = q.act_min == MCU_INT8_MIN && q.act_max == MCU_INT8_MAX;
    const int no_tie = q.rounding == MCU_ROUND_NEAREST_NO_TIE; /* rq holds its constants */
    const int32_t *const xtail = xbuf + 2 * full_groups;
    for (int32_t oc = 0; oc < out_c; oc += 2) {
        /* (an odd last channel is computed twice) */
        const int32_t oc1 = oc + 1 < out_c ? oc + 1 : oc;
        const int8_t *const w = filter + oc * k;
        const int32_t step = (oc1 - oc) * k;
        int32_t a[2] = {bias != NULL ? 2 * bias[oc] : 0, bias != NULL ? 2 * bias[oc1] : 0};
        int32_t base0 = mcu_requant2_base(p->shift[oc], q.output_offset);
        int32_t base1 = mcu_requant2_base(p->shift[oc1], q.output_offset);
        if (no_tie) {
            a[0] += rq[2 * oc];
            base0 = rq[2 * oc + 1];
            a[1] += rq[2 * oc1];
            base1 = rq[2 * oc1 + 1];
        }
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
        const int8_t v1 = dsp_out(a[1], p->multiplier[oc1], base1, p->shift[oc1], &q, full);
        const int8_t v0 = dsp_out(a[0], p->multiplier[oc], base0, p->shift[oc], &q, full);
        if (fuse != NULL) { /* the residual Add (oc1 == oc: the same value twice) */
            const int32_t v[2] = {v0, v1};
            mcu_conv2d_s8_fuse_store(fuse, out + oc, oc1 - oc, v, 2);
        } else {
            out[oc1] = v1;
            out[oc] = v0;
        }
    }
}

/* Every output channel of per_pass consecutive positions whose windows are in xbuf. */
MCU_CONV_NOINLINE static void dsp_channels(const mcu_conv_params_t *p, const int32_t *xbuf,
                                           const int8_t *filter, const int32_t *bias,
                                           int8_t *out, int32_t per_pass, const int32_t *rq,
                                           const mcu_conv_fuse_t *fuse)
{
    const int no_tie = p->q.rounding == MCU_ROUND_NEAREST_NO_TIE;
    if (per_pass == 4 && !no_tie) {
        dsp_channels_p(p, xbuf, filter, bias, out, 4, 0, rq, fuse);
    } else if (per_pass == 4) {
        dsp_channels_p(p, xbuf, filter, bias, out, 4, 1, rq, fuse);
    } else if (per_pass == 2 && !no_tie) {
        dsp_channels_p(p, xbuf, filter, bias, out, 2, 0, rq, fuse);
    } else if (per_pass == 2) {
        dsp_channels_p(p, xbuf, filter, bias, out, 2, 1, rq, fuse);
    } else {
        dsp_channels_p1(p, xbuf, filter, bias, out, rq, fuse);
    }
}

/* P = 2 with channel pairs (the lean call, no residual Add): every output channel of two
 * consecutive positions whose windows are in xbuf, two channels per dot_p2x2 (an odd last one
 * alone, dot_p2); no_tie and rq as in dsp_channels_p. */
MCU_CONV_INLINE void dsp_pairs_p2(const mcu_conv_params_t *p, const int32_t *xbuf,
                                  const int8_t *filter, const int32_t *bias, int8_t *out,
                                  int no_tie, const int32_t *rq)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t full_groups = k >> 2;
    const int32_t tail = k & 3;
    const int32_t out_c = p->output.c; /* the output pixel's stride */
    const int32_t n_c = p->filter.n;
    const mcu_quant_io_t q = p->q;
    const int full = q.act_min == MCU_INT8_MIN && q.act_max == MCU_INT8_MAX;
    const int32_t *const xtail = xbuf + 4 * full_groups;
    for (int32_t oc = 0; oc < n_c; oc += 2) {
        const int32_t count = n_c - oc < 2 ? 1 : 2;
        const int8_t *const w = filter + oc * k;
        int32_t a[4]; /* a[2 c + position] for channel oc + c */
        for (int32_t c = 0; c < count; ++c) {
            const int32_t b2 = (bias != NULL ? 2 * bias[oc + c] : 0) + (no_tie ? rq[2 * (oc + c)] : 0);
            a[2 * c] = b2;
            a[2 * c + 1] = b2;
        }
        if (full_groups > 0) {
            if (count == 2) {
                dot_p2x2(a, xbuf, w, k, full_groups);
            } else {
                const int8_t *wp = w;
                dot_p2(a, xbuf, &wp, full_groups);
            }
        }
        for (int32_t c = 0; c < count; ++c) {
            const int32_t o = oc + c;
            int32_t a0 = a[2 * c], a1 = a[2 * c + 1];
            if (tail != 0) {
                int32_t we, wo;
                tail_weights(w + c * k + 4 * full_groups, tail, &we, &wo);
                a0 = __smlad(xtail[1], wo, __smlad(xtail[0], we, a0));
                a1 = __smlad(xtail[3], wo, __smlad(xtail[2], we, a1));
            }
            const int32_t mult = p->multiplier[o];
            const int32_t sh = p->shift[o];
            const int32_t base = no_tie ? rq[2 * o + 1] : mcu_requant2_base(sh, q.output_offset);
            a0 = mcu_requant2(a0, mult, base, -sh);
            a1 = mcu_requant2(a1, mult, base, -sh);
            if (!full) {
                a0 = mcu_clamp_s32(a0, q.act_min, q.act_max);
                a1 = mcu_clamp_s32(a1, q.act_min, q.act_max);
            }
            out[o + out_c] = (int8_t)a1;
            out[o] = (int8_t)a0;
        }
    }
}

/* The lean call's passes: P = 2 with channel pairs, or P = 1. */
MCU_CONV_NOINLINE static void dsp_channels_lean(const mcu_conv_params_t *p, const int32_t *xbuf,
                                                const int8_t *filter, const int32_t *bias,
                                                int8_t *out, int32_t per_pass, const int32_t *rq,
                                                const mcu_conv_fuse_t *fuse)
{
    if (per_pass == 1) {
        dsp_channels_p1(p, xbuf, filter, bias, out, rq, fuse);
    } else if (p->q.rounding == MCU_ROUND_NEAREST_NO_TIE) {
        dsp_pairs_p2(p, xbuf, filter, bias, out, 1, rq);
    } else {
        dsp_pairs_p2(p, xbuf, filter, bias, out, 0, rq);
    }
}

/* Position n's window into xbuf slot `slot` of per_pass (see above). */
static void dsp_window(const mcu_conv_block_t *c, const int8_t *input, int32_t n, int32_t *xbuf,
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
    mcu_conv_window_t win;
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
    } else if ((k_w * in_c) % 4 == 0 && p->dilation_w == 1) {
        /* row by row: KW * C_in / 4 value groups each, read from the input when the row is
         * inside it, zero values for a padding row, a row across the edge assembled first */
        const int32_t w_row = k_w * in_c;
        const int32_t row_groups = w_row >> 2;
        const int32_t first = win.kx_begin * in_c;
        const int32_t last = win.kx_end * in_c;
        const int32_t row_step = p->dilation_h * c->in_row;
        int32_t ky = 0;
        for (; ky < win.ky_begin; ++ky, dst += row_groups * step) {
            extend_zero(dst, row_groups, step);
        }
        if (ky < win.ky_end) { /* the rows inside the input (x0 * C_in before them: padding) */
            const int8_t *row =
                win.in_batch + (win.y0 + ky * p->dilation_h) * c->in_row + win.x0 * in_c;
            if (first == 0 && last == w_row) {
                for (; ky < win.ky_end; ++ky, dst += row_groups * step, row += row_step) {
                    extend_groups(dst, row, row_groups, step, offset2);
                }
            } else {
                const int8_t pad = (int8_t)(-p->q.input_offset);
                for (; ky < win.ky_end; ++ky, dst += row_groups * step, row += row_step) {
                    int32_t i = 0;
                    for (; i < first; ++i) {
                        patch[i] = pad;
                    }
                    for (; i < last; ++i) {
                        patch[i] = row[i];
                    }
                    for (; i < w_row; ++i) {
                        patch[i] = pad;
                    }
                    extend_groups(dst, patch, row_groups, step, offset2);
                }
            }
        }
        for (; ky < k_h; ++ky, dst += row_groups * step) {
            extend_zero(dst, row_groups, step);
        }
    } else {
        mcu_conv2d_s8_gather(c, &win, patch);
        extend(dst, patch, c->filter_size, step, offset2);
    }
}

/* dsp_channels, or (lean) the lean call's dsp_channels_lean */
MCU_CONV_INLINE void channels(int lean, const mcu_conv_params_t *p, const int32_t *xbuf,
                              const int8_t *filter, const int32_t *bias, int8_t *out,
                              int32_t per_pass, const int32_t *rq, const mcu_conv_fuse_t *fuse)
{
    if (lean) {
        dsp_channels_lean(p, xbuf, filter, bias, out, per_pass, rq, fuse);
    } else {
        dsp_channels(p, xbuf, filter, bias, out, per_pass, rq, fuse);
    }
}

/* The whole convolution through the DSP path, per_pass positions a pass; lean: the lean call's
 * passes (dsp_channels_lean). */
static void dsp_conv(const mcu_conv_params_t *p, const int8_t *input, const int8_t *filter,
                     const int32_t *bias, int8_t *output, int32_t per_pass, int lean,
                     void *scratch, const mcu_conv_fuse_t *fuse)
{
    const int32_t filter_size = p->filter.h * p->filter.w * p->input.c;
    int32_t *const xbuf = (int32_t *)scratch;
    /* onnxruntime's rounding: each channel's doubled lift and base', then the patch */
    int32_t *const rq = xbuf + 2 * per_pass * ((filter_size + 3) >> 2);
    const int no_tie = p->q.rounding == MCU_ROUND_NEAREST_NO_TIE;
    int8_t *const patch = (int8_t *)(rq + (no_tie ? 2 * p->filter.n : 0));
    if (no_tie) {
        for (int32_t oc = 0; oc < p->filter.n; ++oc) {
            rq[2 * oc + 1] = mcu_requant2_no_tie(p->multiplier[oc], p->shift[oc], p->q.output_offset,
                                             &rq[2 * oc]);
        }
    }
    mcu_conv_block_t c;
    c.params = p;
    c.filter = filter;
    c.filter_size = filter_size;
    c.in_row = p->input.w * p->input.c;
    c.fuse = NULL; /* this path applies the residual Add itself (dsp_channels) */
    const int32_t positions = p->input.n * p->output.h * p->output.w;
    /* with a residual Add every position is computed once (its skip elements are read once,
     * just before the output may overwrite them), and the lean call computes none twice (one
     * position, 26 instructions per 16 products, costs less than a pair's two, 38): the last
     * positions one at a time */
    const int32_t whole = fuse != NULL || lean ? positions - positions % per_pass : positions;
    for (int32_t first = 0; first < positions; first += per_pass) {
        /* per_pass consecutive positions; the last pass overlaps the one before (recomputing
         * up to per_pass - 1 positions, which writes the same values again) */
        if (first >= whole) {
            for (int32_t n = first; n < positions; ++n) {
                dsp_window(&c, input, n, xbuf, 0, 1, patch);
                channels(lean, p, xbuf, filter, bias, output + n * p->output.c, 1, rq, fuse);
            }
            break;
        }
        const int32_t n0 = first + per_pass <= positions ? first : positions - per_pass;
        for (int32_t i = 0; i < per_pass; ++i) {
            dsp_window(&c, input, n0 + i, xbuf, i, per_pass, patch);
        }
        channels(lean, p, xbuf, filter, bias, output + n0 * p->output.c, per_pass, rq, fuse);
    }
}

/* The whole convolution through the DSP path, per_pass = mcu_conv2d_s8_dsp_positions(). */
void mcu_conv2d_s8_dsp(const mcu_conv_params_t *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int32_t per_pass, void *scratch,
                       const mcu_conv_fuse_t *fuse)
{
    dsp_conv(p, input, filter, bias, output, per_pass, 0, scratch, fuse);
}

void mcu_conv2d_s8_dsp_lean(const mcu_conv_params_t *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, int32_t per_pass, void *scratch)
{
    dsp_conv(p, input, filter, bias, output, per_pass, 1, scratch, NULL);
}

#endif /* MCU_ISA_NATIVE == MCU_ISA_DSP */
