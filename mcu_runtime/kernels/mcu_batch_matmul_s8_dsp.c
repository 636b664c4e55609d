/*
 * mcu_batch_matmul_s8_dsp.c - the DSP path of mcu_batch_matmul_s8 (Armv7E-M / Armv8-M Mainline
 * with the DSP extension): one batch, lhs [M, K] by rhs_t [N, K], two lhs rows by two rhs rows per
 * pass (the last row of an odd M by two rhs rows). Four bytes of a row unpack with their offset into two int16 pairs (SXTAB16, SXTAB16 ROR 8),
 * and SMLAD adds two products at a time: every output's sum has exactly the reference's K terms
 * (|lhs + offset|, |rhs + offset| <= 255 fit int16). Requantization: mcu_requant2 (the dispatcher
 * took this path only for TFLite rounding or MCU_ROUND_NEAREST_NO_TIE, shift in [-20, -1],
 * multiplier >= 0; |acc| < 2^30 as K <= 16384), onnxruntime's rounding through mcu_requant2_lift.
 */
#include <stdint.h>

#include "mcu_batch_matmul_s8_internal.h"

#if MCU_ISA_NATIVE == MCU_ISA_DSP

typedef struct {
    int32_t lo2;   /* input_offset in both int16 lanes */
    int32_t ro2;   /* rhs_offset in both int16 lanes */
    int32_t lo;    /* input_offset */
    int32_t ro;    /* rhs_offset */
    int32_t depth; /* K */
} consts_t;

/* out[m, n] from sum acc: mcu_requant2, clamped to the activation range */
MCU_ALWAYS_INLINE int8_t finish(int32_t acc, int32_t lift2, int32_t mult, int32_t base, int32_t right,
                                const mcu_quant_io_t *q)
{
    return (int8_t)mcu_clamp_s32(mcu_requant2(2 * acc + lift2, mult, base, right), q->act_min,
                                 q->act_max);
}

/* *s00 += a0 . b0, *s01 += a0 . b1, *s10 += a1 . b0, *s11 += a1 . b1 (offsets included) */
MCU_ALWAYS_INLINE void dot2x2(const int8_t *a0, const int8_t *a1, const int8_t *b0,
                              const int8_t *b1, const consts_t *c, int32_t *s00, int32_t *s01,
                              int32_t *s10, int32_t *s11)
{
    int32_t acc00 = 0, acc01 = 0, acc10 = 0, acc11 = 0;
    const int32_t quads = c->depth >> 2;
    for (int32_t i = 0; i < quads; ++i) {
        const uint32_t wb0 = read_s8x4_next(&b0);
        const uint32_t wb1 = read_s8x4_next(&b1);
        const int32_t b0e = __sxtab16(c->ro2, (int32_t)wb0);
        const int32_t b0o = sxtab16_ror8(c->ro2, wb0);
        const int32_t b1e = __sxtab16(c->ro2, (int32_t)wb1);
        const int32_t b1o = sxtab16_ror8(c->ro2, wb1);
        uint32_t wa = read_s8x4_next(&a0);
        int32_t ae = __sxtab16(c->lo2, (int32_t)wa);
        int32_t ao = sxtab16_ror8(c->lo2, wa);
        acc00 = __smlad(ae, b0e, acc00);
        acc00 = __smlad(ao, b0o, acc00);
        acc01 = __smlad(ae, b1e, acc01);
        acc01 = __smlad(ao, b1o, acc01);
        wa = read_s8x4_next(&a1);
        ae = __sxtab16(c->lo2, (int32_t)wa);
        ao = sxtab16_ror8(c->lo2, wa);
        acc10 = __smlad(ae, b0e, acc10);
        acc10 = __smlad(ao, b0o, acc10);
        acc11 = __smlad(ae, b1e, acc11);
        acc11 = __smlad(ao, b1o, acc11);
    }
    for (int32_t k = quads << 2; k < c->depth; ++k) {
        const int32_t x0 = (int32_t)*a0++ + c->lo, x1 = (int32_t)*a1++ + c->lo;
        const int32_t y0 = (int32_t)*b0++ + c->ro, y1 = (int32_t)*b1++ + c->ro;
        acc00 += x0 * y0;
        acc01 += x0 * y1;
        acc10 += x1 * y0;
        acc11 += x1 * y1;
    }
    *s00 = acc00;
    *s01 = acc01;
    *s10 = acc10;
    *s11 = acc11;
}

/* *s0 += a . b0, *s1 += a . b1 (offsets included): the last row of an odd M */
MCU_ALWAYS_INLINE void dot1x2(const int8_t *a, const int8_t *b0, const int8_t *b1,
                              const consts_t *c, int32_t *s0, int32_t *s1)
{
    int32_t acc0 = 0, acc1 = 0;
    const int32_t quads = c->depth >> 2;
    for (int32_t i = 0; i < quads; ++i) {
        const uint32_t wa = read_s8x4_next(&a);
        const int32_t ae = __sxtab16(c->lo2, (int32_t)wa);
        const int32_t ao = sxtab16_ror8(c->lo2, wa);
        uint32_t wb = read_s8x4_next(&b0);
        acc0 = __smlad(ae, __sxtab16(c->ro2, (int32_t)wb), acc0);
        acc0 = __smlad(ao, sxtab16_ror8(c->ro2, wb), acc0);
        wb = read_s8x4_next(&b1);
        acc1 = __smlad(ae, __sxtab16(c->ro2, (int32_t)wb), acc1);
        acc1 = __smlad(ao, sxtab16_ror8(c->ro2, wb), acc1);
    }
    for (int32_t k = quads << 2; k < c->depth; ++k) {
        const int32_t x = (int32_t)*a++ + c->lo;
        acc0 += x * ((int32_t)*b0++ + c->ro);
        acc1 += x * ((int32_t)*b1++ + c->ro);
    }
    *s0 = acc0;
    *s1 = acc1;
}

void mcu_batch_matmul_s8_dsp(const mcu_batch_matmul_params_t *p, const int8_t *lhs, int32_t lhs_row,
                             const int8_t *rhs_t, int32_t rhs_row, int8_t *output)
{
    const int32_t rows = p->lhs.w, cols = p->rhs.c, depth = p->lhs.c;
    const int32_t lo = p->q.input_offset, ro = p->rhs_offset;
    const consts_t c = {(int32_t)(((uint32_t)lo << 16) | ((uint32_t)lo & 0xFFFFu)),
                        (int32_t)(((uint32_t)ro << 16) | ((uint32_t)ro & 0xFFFFu)), lo, ro, depth};
    const int32_t mult = p->multiplier, right = -p->shift;
    const int32_t base = mcu_requant2_base_q(mult, p->shift, &p->q);
    const int32_t lift2 = 2 * mcu_requant2_lift(mult, p->shift, &p->q); /* 0 in TFLite rounding */
    int32_t m = 0;
    for (; m + 1 < rows; m += 2) {
        const int8_t *a0 = lhs + m * lhs_row;
        const int8_t *a1 = a0 + lhs_row;
        int8_t *o0 = output + m * cols;
        for (int32_t n = 0; n < cols; n += 2) {
            const int8_t *b0 = rhs_t + n * rhs_row;
            const int8_t *b1 = n + 1 < cols ? b0 + rhs_row : b0; /* odd N: the last column twice */
            int32_t s00, s01, s10, s11;
            dot2x2(a0, a1, b0, b1, &c, &s00, &s01, &s10, &s11);
            o0[n] = finish(s00, lift2, mult, base, right, &p->q);
            if (n + 1 < cols) {
                o0[n + 1] = finish(s01, lift2, mult, base, right, &p->q);
            }
            o0[cols + n] = finish(s10, lift2, mult, base, right, &p->q);
            if (n + 1 < cols) {
                o0[cols + n + 1] = finish(s11, lift2, mult, base, right, &p->q);
            }
        }
    }
    if (m < rows) { /* odd M: the last row, two columns per pass */
        const int8_t *a = lhs + m * lhs_row;
        int8_t *o = output + m * cols;
        for (int32_t n = 0; n < cols; n += 2) {
            const int8_t *b0 = rhs_t + n * rhs_row;
            const int8_t *b1 = n + 1 < cols ? b0 + rhs_row : b0;
            int32_t s0, s1;
            dot1x2(a, b0, b1, &c, &s0, &s1);
            o[n] = finish(s0, lift2, mult, base, right, &p->q);
            if (n + 1 < cols) {
                o[n + 1] = finish(s1, lift2, mult, base, right, &p->q);
            }
        }
    }
}

#endif
