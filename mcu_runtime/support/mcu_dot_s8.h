/*
 * mcu_dot_s8.h - int8 dot products shared by the convolution, depthwise and fully connected
 * kernels, each in the compile target's instructions (mcu_dot_s8.c): pure C99 (every target, the
 * host included), Arm DSP (__ARM_FEATURE_DSP: SXTB16 + SMLAD, two 16x16 MACs per instruction) or
 * Arm MVE (__ARM_FEATURE_MVE: VMLADAVA.S8, 16 8x8 MACs per instruction).
 *
 * Every variant adds exactly the reference's integer terms, in another order: for 1 <= len < 2^17
 * no partial sum of products of int8 values (each at most 2^14 in magnitude) leaves int32.
 * Internal to mcu_runtime (not part of the public API in mcu_nn.h).
 */
#ifndef MCU_DOT_S8_H
#define MCU_DOT_S8_H

#include <stdint.h>

#include "mcu_config.h" /* first: a bundle's variant renames the symbols declared below */

/* acc[r] += sum_i x[i] * w[r * w_stride + i], r = 0..3 (four filters w_stride bytes apart) */
void mcu_dot4_s8(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t len, int32_t acc[4]);

/* acc[r] += sum over `chunks` chunks c of the fully connected kernel's blocked weights (mcu_nn.h:
 * MCU_FC_CHUNK inputs x[c * CHUNK + i], and row r's weights at w[(4 c + r) * CHUNK + i]), r = 0..3 */
void mcu_dot4_chunks_s8(const int8_t *x, const int8_t *w, int32_t chunks, int32_t acc[4]);

/* sum_i x[i] * w[i] */
int32_t mcu_dot1_s8(const int8_t *x, const int8_t *w, int32_t len);

/* sum_i w[i]: static inline (below), as kernels call it once per output channel */
static inline int32_t mcu_sum_s8(const int8_t *w, int32_t len);

#include "mcu_kernel_util.h"
#include "mcu_nn.h"

#if defined(__riscv) && !defined(MCU_OPTIMIZE_SIZE)
/* RV32 (speed builds): the convolution's generic path takes two output positions per pass
 * (mcu_conv2d_s8_generic.c), each weight byte loaded once for both. */
#define MCU_DOT_PAIRS 1
/* acc[r] += sum of xa[.] * w[r * w_stride + .] and acc[4 + r] += the same of xb, r = 0..3, over
 * `rows` runs of `run` bytes: the runs x_step bytes apart in xa and xb, contiguous in w. */
void mcu_dot4x2_rows_s8(const int8_t *xa, const int8_t *xb, const int8_t *w, int32_t w_stride,
                        int32_t rows, int32_t run, int32_t x_step, int32_t acc[8]);
#endif

#if defined(__thumb__) && !defined(__thumb2__)
/* Armv6-M (Thumb-1, eight low registers): acc[r] += sum_i x[i] * w[r * w_stride + i], r = 0, 1;
 * indexed from -len up to 0 off the ends, the one addressing mode LDRSB has (base + register),
 * the loop test the index update. Inline: mcu_dot_s8.c and the fully connected kernel's blocks. */
static inline void mcu_dot2_s8(const int8_t *x, const int8_t *w, int32_t w_stride, int32_t len,
                               int32_t acc[2])
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
#endif

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

static inline int32_t mcu_sum_s8(const int8_t *w, int32_t len)
{
    int32_t acc = 0;
    for (int32_t left = len; left > 0; left -= 16) {
        acc = vaddvaq_s8(acc, vldrbq_z_s8(w, vctp8q((uint32_t)left)));
        w += 16;
    }
    return acc;
}

#elif MCU_ISA_NATIVE == MCU_ISA_DSP
#include <arm_acle.h>

static inline int32_t mcu_sum_s8(const int8_t *w, int32_t len)
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

#else

static inline int32_t mcu_sum_s8(const int8_t *w, int32_t len)
{
    int32_t acc = 0;
    for (int32_t i = 0; i < len; ++i) {
        acc += (int32_t)w[i];
    }
    return acc;
}

#endif

#endif /* MCU_DOT_S8_H */
