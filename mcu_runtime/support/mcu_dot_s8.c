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

#elif defined(__riscv)

/* gcc's pre-allocation scheduling hoists every load of an unrolled step ahead of its MACs, which
 * then spill (36 stack accesses per step of mcu_dot4x2_rows_s8): off in these loops. */
#if defined(__GNUC__) && !defined(__clang__)
#define MCU_DOT_RV_LOOP MCU_DOT_NOINLINE __attribute__((optimize("no-schedule-insns")))
#else
#define MCU_DOT_RV_LOOP MCU_DOT_NOINLINE
#endif

/* RV32IM(A)C: a load takes a base register and a 12-bit immediate only (no register offset, no
 * post-increment), so each stream walks its own pointer and a step reads four bytes at immediate
 * offsets 0..3: 5 + 16 loads, 16 MUL and 16 ADD and six pointer and loop instructions per 16 MACs
 * (the index-from-the-end loop below costs one address add per load here). No 8- or 16-bit SIMD
 * MAC in RV32IMC: every product is one MUL. */
MCU_DOT_RV_LOOP void mcu_dot4_s8(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t len,
                                  int32_t acc[4])
{
    const int8_t *w0 = w;
    const int8_t *w1 = w0 + w_stride;
    const int8_t *w2 = w1 + w_stride;
    const int8_t *w3 = w2 + w_stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    const int8_t *const x_end = x + (len & ~(int32_t)3);
    while (x != x_end) {
        const int32_t x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
        a0 += x0 * w0[0] + x1 * w0[1] + x2 * w0[2] + x3 * w0[3];
        a1 += x0 * w1[0] + x1 * w1[1] + x2 * w1[2] + x3 * w1[3];
        a2 += x0 * w2[0] + x1 * w2[1] + x2 * w2[2] + x3 * w2[3];
        a3 += x0 * w3[0] + x1 * w3[1] + x2 * w3[2] + x3 * w3[3];
        x += 4;
        w0 += 4;
        w1 += 4;
        w2 += 4;
        w3 += 4;
    }
    for (int32_t i = 0; i < (len & 3); ++i) {
        const int32_t xv = (int32_t)x[i];
        a0 += xv * (int32_t)w0[i];
        a1 += xv * (int32_t)w1[i];
        a2 += xv * (int32_t)w2[i];
        a3 += xv * (int32_t)w3[i];
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

MCU_DOT_RV_LOOP int32_t mcu_dot1_s8(const int8_t *x, const int8_t *w, int32_t len)
{
    int32_t acc = 0;
    const int8_t *const x_end = x + (len & ~(int32_t)3);
    while (x != x_end) {
        acc += (int32_t)x[0] * w[0] + (int32_t)x[1] * w[1] + (int32_t)x[2] * w[2] +
               (int32_t)x[3] * w[3];
        x += 4;
        w += 4;
    }
    for (int32_t i = 0; i < (len & 3); ++i) {
        acc += (int32_t)x[i] * (int32_t)w[i];
    }
    return acc;
}

#if defined(MCU_DOT_PAIRS)
MCU_DOT_RV_LOOP void mcu_dot4x2_rows_s8(const int8_t *xa, const int8_t *xb, const int8_t *w,
                                         int32_t w_stride, int32_t rows, int32_t run,
                                         int32_t x_step, int32_t acc[8])
{
    /* per byte pair: 2 + 4 loads, 8 MUL, 8 ADD (each weight byte serves both positions); the
     * weights of the rows are contiguous, the inputs' rows x_step bytes apart */
    const int8_t *w0 = w;
    const int8_t *w1 = w0 + w_stride;
    const int8_t *w2 = w1 + w_stride;
    const int8_t *w3 = w2 + w_stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    int32_t b0 = acc[4], b1 = acc[5], b2 = acc[6], b3 = acc[7];
    const int32_t body = run & ~(int32_t)3;
    const int32_t skip = x_step - run;
    for (int32_t j = rows; j > 0; --j) {
        const int8_t *const xa_end = xa + body;
        while (xa != xa_end) {
            /* written out: gcc -O2 keeps a four-step loop (and its index adds) */
#define MCU_DOT4X2_STEP(i)                                                                       \
    do {                                                                                         \
        const int32_t u = xa[i], v = xb[i];                                                      \
        int32_t t = w0[i];                                                                       \
        a0 += u * t;                                                                             \
        b0 += v * t;                                                                             \
        t = w1[i];                                                                               \
        a1 += u * t;                                                                             \
        b1 += v * t;                                                                             \
        t = w2[i];                                                                               \
        a2 += u * t;                                                                             \
        b2 += v * t;                                                                             \
        t = w3[i];                                                                               \
        a3 += u * t;                                                                             \
        b3 += v * t;                                                                             \
    } while (0)
            MCU_DOT4X2_STEP(0);
            MCU_DOT4X2_STEP(1);
            MCU_DOT4X2_STEP(2);
            MCU_DOT4X2_STEP(3);
#undef MCU_DOT4X2_STEP
            xa += 4;
            xb += 4;
            w0 += 4;
            w1 += 4;
            w2 += 4;
            w3 += 4;
        }
        for (int32_t i = body; i < run; ++i) {
            const int32_t u = *xa++, v = *xb++;
            a0 += u * *w0;
            b0 += v * *w0++;
            a1 += u * *w1;
            b1 += v * *w1++;
            a2 += u * *w2;
            b2 += v * *w2++;
            a3 += u * *w3;
            b3 += v * *w3++;
        }
        xa += skip;
        xb += skip;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
    acc[4] = b0;
    acc[5] = b1;
    acc[6] = b2;
    acc[7] = b3;
}
#endif

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

/* the layout's chunks: MCU_FC_CHUNK inputs, then the four rows' MCU_FC_CHUNK weights each */
#if MCU_ISA_NATIVE == MCU_ISA_MVE && MCU_FC_CHUNK == 16
MCU_DOT_NOINLINE void mcu_dot4_chunks_s8(const int8_t *x, const int8_t *w, int32_t chunks,
                                         int32_t acc[4])
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    for (; chunks > 0; --chunks) {
        const int8x16_t xv = vld1q_s8(x);
        a0 = vmladavaq_s8(a0, xv, vld1q_s8(w));
        a1 = vmladavaq_s8(a1, xv, vld1q_s8(w + 16));
        a2 = vmladavaq_s8(a2, xv, vld1q_s8(w + 32));
        a3 = vmladavaq_s8(a3, xv, vld1q_s8(w + 48));
        x += 16;
        w += 64;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#elif MCU_ISA_NATIVE == MCU_ISA_DSP
MCU_DOT_NOINLINE void mcu_dot4_chunks_s8(const int8_t *x, const int8_t *w, int32_t chunks,
                                         int32_t acc[4])
{
    /* four bytes of x against four of each row: 23 instructions per 16 MACs */
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    for (int32_t n = chunks * (MCU_FC_CHUNK / 4); n > 0; --n) {
        const uint32_t xv = read_s8x4(x);
        const int32_t x02 = __sxtb16((int32_t)xv);
        const int32_t x13 = sxtb16_ror8(xv);
        const uint32_t v0 = read_s8x4(w);
        a0 = __smlad(x13, sxtb16_ror8(v0), __smlad(x02, __sxtb16((int32_t)v0), a0));
        const uint32_t v1 = read_s8x4(w + MCU_FC_CHUNK);
        a1 = __smlad(x13, sxtb16_ror8(v1), __smlad(x02, __sxtb16((int32_t)v1), a1));
        const uint32_t v2 = read_s8x4(w + 2 * MCU_FC_CHUNK);
        a2 = __smlad(x13, sxtb16_ror8(v2), __smlad(x02, __sxtb16((int32_t)v2), a2));
        const uint32_t v3 = read_s8x4(w + 3 * MCU_FC_CHUNK);
        a3 = __smlad(x13, sxtb16_ror8(v3), __smlad(x02, __sxtb16((int32_t)v3), a3));
        x += 4;
        /* the next four bytes of the chunk, or the next chunk's rows */
        w += ((n - 1) & (MCU_FC_CHUNK / 4 - 1)) != 0 ? 4 : 4 + 3 * MCU_FC_CHUNK;
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#else
void mcu_dot4_chunks_s8(const int8_t *x, const int8_t *w, int32_t chunks, int32_t acc[4])
{
    for (; chunks > 0; --chunks) {
        mcu_dot4_s8(x, w, MCU_FC_CHUNK, MCU_FC_CHUNK, acc);
        x += MCU_FC_CHUNK;
        w += 4 * MCU_FC_CHUNK;
    }
}
#endif
