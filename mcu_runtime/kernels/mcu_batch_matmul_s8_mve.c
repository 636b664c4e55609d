/*
 * mcu_batch_matmul_s8_mve.c - the MVE path of mcu_batch_matmul_s8 (Armv8.1-M with MVE): one
 * batch, lhs [M, K] by rhs_t [N, K], one lhs row by four rhs rows per pass, 16 bytes of K per
 * VMLADAVA.S8 (tail-predicated loads read zeros past K). The offsets come out of the sum:
 *   sum_k (a + lo)(b + ro) = sum_k a b + ro * sum_k a + lo * (sum_k b + K ro),
 * the last term per rhs row once per rhs batch (the column terms; for M <= MCU_BMM_INLINE_COLS rows
 * summed in the main pass instead), sum_k a per lhs row in the same pass (VADDVA). Four outputs are
 * requantized per vector (mcu_output_stage4).
 */
#include <stdint.h>

#include "mcu_batch_matmul_s8_internal.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

void mcu_batch_matmul_s8_mve_columns(const mcu_batch_matmul_params_t *p, const int8_t *rhs_t,
                                     int32_t rhs_row, int32_t *col)
{
    const int32_t depth = p->lhs.c;
    for (int32_t n = 0; n < p->rhs.c; ++n) {
        const int8_t *b = rhs_t + n * rhs_row;
        int32_t sum = 0, k = 0;
        for (; k + 16 <= depth; k += 16) {
            sum = vaddvaq_s8(sum, vld1q_s8(b + k));
        }
        if (k < depth) {
            sum = vaddvaq_s8(sum, vldrbq_z_s8(b + k, vctp8q((uint32_t)(depth - k))));
        }
        col[n] = p->q.input_offset * (sum + depth * p->rhs_offset);
    }
}

/* 16 bytes of K (zeros past K in a tail-predicated load): *sa += sum va, *s_r += va . row r of b,
 * and with `inline_cols` *c_r += sum of row r. */
MCU_ALWAYS_INLINE void mac4(int8x16_t va, int8x16_t v0, int8x16_t v1, int8x16_t v2, int8x16_t v3,
                            int32_t *sa, int32_t *s, int32_t *c, int inline_cols)
{
    *sa = vaddvaq_s8(*sa, va);
    s[0] = vmladavaq_s8(s[0], va, v0);
    s[1] = vmladavaq_s8(s[1], va, v1);
    s[2] = vmladavaq_s8(s[2], va, v2);
    s[3] = vmladavaq_s8(s[3], va, v3);
    if (inline_cols) {
        c[0] = vaddvaq_s8(c[0], v0);
        c[1] = vaddvaq_s8(c[1], v1);
        c[2] = vaddvaq_s8(c[2], v2);
        c[3] = vaddvaq_s8(c[3], v3);
    }
}

/* One batch; `inline_cols`: the column terms summed in the same pass (col unused), for few rows
 * (a constant in each inlined copy). Whole 16-byte chunks of K load unpredicated, the last
 * K % 16 bytes tail-predicated. */
MCU_ALWAYS_INLINE void run(const mcu_batch_matmul_params_t *p, const int8_t *lhs, int32_t lhs_row,
                           const int8_t *rhs_t, int32_t rhs_row, const int32_t *col, int8_t *output,
                           int inline_cols)
{
    const int32_t rows = p->lhs.w, cols = p->rhs.c, depth = p->lhs.c;
    const int32_t lo = p->q.input_offset, ro = p->rhs_offset;
    const int32_t kro = depth * ro;
    const int32_t whole = depth & ~15;
    const int32x4_t mult = vdupq_n_s32(p->multiplier);
    const int32x4_t shift = vdupq_n_s32(p->shift);
    for (int32_t m = 0; m < rows; ++m) {
        const int8_t *a = lhs + m * lhs_row;
        int8_t *out = output + m * cols;
        int32_t n = 0;
        for (; n + 4 <= cols; n += 4) {
            const int8_t *b = rhs_t + n * rhs_row;
            int32_t s[4] = {0, 0, 0, 0}, c[4] = {0, 0, 0, 0}, sa = 0;
            int32_t k = 0;
            for (; k < whole; k += 16) {
                mac4(vld1q_s8(a + k), vld1q_s8(b + k), vld1q_s8(b + rhs_row + k), vld1q_s8(b + 2 * rhs_row + k),
                     vld1q_s8(b + 3 * rhs_row + k), &sa, s, c, inline_cols);
            }
            if (k < depth) {
                const mve_pred16_t pred = vctp8q((uint32_t)(depth - k));
                mac4(vldrbq_z_s8(a + k, pred), vldrbq_z_s8(b + k, pred), vldrbq_z_s8(b + rhs_row + k, pred),
                     vldrbq_z_s8(b + 2 * rhs_row + k, pred), vldrbq_z_s8(b + 3 * rhs_row + k, pred), &sa, s,
                     c, inline_cols);
            }
            int32x4_t acc = vld1q_s32(s);
            if (inline_cols) {
                const int32_t terms[4] = {lo * (c[0] + kro), lo * (c[1] + kro), lo * (c[2] + kro),
                                          lo * (c[3] + kro)};
                acc = vaddq_s32(acc, vld1q_s32(terms));
            } else {
                acc = vaddq_s32(acc, vld1q_s32(col + n));
            }
            acc = vaddq_s32(acc, vdupq_n_s32(ro * sa));
            vstrbq_s32(out + n, mcu_output_stage4(acc, mult, shift, &p->q));
        }
        for (; n < cols; ++n) {
            const int8_t *b = rhs_t + n * rhs_row;
            int32_t acc = 0, sa = 0, sb = 0;
            for (int32_t k = 0; k < depth; k += 16) {
                const mve_pred16_t pred = vctp8q((uint32_t)(depth - k));
                const int8x16_t va = vldrbq_z_s8(a + k, pred);
                const int8x16_t vb = vldrbq_z_s8(b + k, pred);
                sa = vaddvaq_s8(sa, va);
                acc = vmladavaq_s8(acc, va, vb);
                if (inline_cols) {
                    sb = vaddvaq_s8(sb, vb);
                }
            }
            const int32_t term = inline_cols ? lo * (sb + kro) : col[n];
            out[n] = mcu_output_stage(acc + ro * sa + term, p->multiplier, p->shift, &p->q);
        }
    }
}

void mcu_batch_matmul_s8_mve(const mcu_batch_matmul_params_t *p, const int8_t *lhs, int32_t lhs_row,
                             const int8_t *rhs_t, int32_t rhs_row, const int32_t *col, int8_t *output)
{
    if (col == NULL) {
        run(p, lhs, lhs_row, rhs_t, rhs_row, col, output, 1);
    } else {
        run(p, lhs, lhs_row, rhs_t, rhs_row, col, output, 0);
    }
}

#endif
