/*
 * mcu_dot_s8.c - the dot products of mcu_dot_s8.h, one variant per instruction set, chosen at
 * compile time (MCU_ISA_NATIVE): MVE, else DSP, else pure C99.
 *
 * They stay out of line (noinline also under -flto): inlined into a kernel's loop nest they lose
 * registers.
 */
#include "mcu_dot_s8.h"

#include "mcu_kernel_util.h"
#include "mcu_nn.h"

#if defined(__GNUC__)
#define MCU_DOT_NOINLINE __attribute__((noinline))
#else
#define MCU_DOT_NOINLINE
#endif

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

MCU_DOT_NOINLINE void mcu_dot4_s8(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t len,
                                  int32_t acc[4])
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

MCU_DOT_NOINLINE int32_t mcu_dot1_s8(const int8_t *x, const int8_t *w, int32_t len)
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

#elif MCU_ISA_NATIVE == MCU_ISA_DSP
#include <arm_acle.h>

MCU_DOT_NOINLINE void mcu_dot4_s8(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t len,
                                  int32_t acc[4])
{
    /* Bytes 0/2 and 1/3 of four inputs and four weights as int16 lane pairs: each SMLAD adds two
     * products, exactly as two scalar MACs. Filters 0/1 are read at wa and wa + w_stride, 2/3 at
     * wb and wb + w_stride (two moving pointers, register-offset loads). */
    const int8_t *wa = w;
    const int8_t *wb = w + 2 * w_stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
#if defined(__clang__)
    /* clang: post-indexed and register-offset loads written out (its read_s8x4 is an asm whose
     * "m" operand takes a register per address), the loop ended by x's end, and wb hidden from
     * it (else folded into wa + 2 * w_stride, one more register): 29 instructions per 16 MACs,
     * not 36. gcc keeps the loop below (29; this one spills the pointers on the Cortex-M4). */
    __asm__("" : "+r"(wb));
    const int8_t *const x_end = x + (len & ~(int32_t)3);
    while (x != x_end) {
        const uint32_t xv = read_s8x4_next(&x);
        const int32_t x02 = __sxtb16((int32_t)xv);
        const int32_t x13 = sxtb16_ror8(xv);
        const uint32_t v1 = read_s8x4_at(wa, w_stride);
        const uint32_t v0 = read_s8x4_next(&wa);
        a0 = __smlad(x02, __sxtb16((int32_t)v0), a0);
        a0 = __smlad(x13, sxtb16_ror8(v0), a0);
        a1 = __smlad(x02, __sxtb16((int32_t)v1), a1);
        a1 = __smlad(x13, sxtb16_ror8(v1), a1);
        const uint32_t v3 = read_s8x4_at(wb, w_stride);
        const uint32_t v2 = read_s8x4_next(&wb);
        a2 = __smlad(x02, __sxtb16((int32_t)v2), a2);
        a2 = __smlad(x13, sxtb16_ror8(v2), a2);
        a3 = __smlad(x02, __sxtb16((int32_t)v3), a3);
        a3 = __smlad(x13, sxtb16_ror8(v3), a3);
    }
#else
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
#endif
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

MCU_DOT_NOINLINE int32_t mcu_dot1_s8(const int8_t *x, const int8_t *w, int32_t len)
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

#else /* pure C99 */

/* The loops index from -len up to 0 off pointers to the ends: on Armv6-M every load then has the
 * one addressing mode LDRSB offers (base + register) and the loop test is the index update. */
#if defined(__thumb__) && !defined(__thumb2__)
/* Thumb-1 (Armv6-M) has eight low registers: two filters per pass keep everything in them. */
MCU_DOT_NOINLINE static void dot2(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t len,
                                  int32_t acc[2])
{
    mcu_dot2_s8(x, w, w_stride, len, acc);
}

MCU_DOT_NOINLINE void mcu_dot4_s8(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t len,
                                  int32_t acc[4])
{
    dot2(x, w, w_stride, len, acc);
    dot2(x, w + 2 * w_stride, w_stride, len, acc + 2);
}

#else
MCU_DOT_NOINLINE void mcu_dot4_s8(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t len,
                                  int32_t acc[4])
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

MCU_DOT_NOINLINE int32_t mcu_dot1_s8(const int8_t *x, const int8_t *w, int32_t len)
{
    const int8_t *const x_end = x + len;
    const int8_t *const w_end = w + len;
    int32_t acc = 0;
    for (int32_t i = -len; i != 0; ++i) {
        acc += (int32_t)x_end[i] * (int32_t)w_end[i];
    }
    return acc;
}

#endif
