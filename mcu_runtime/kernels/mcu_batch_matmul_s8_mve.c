/*
 * mcu_batch_matmul_s8_mve.c - the MVE path of mcu_batch_matmul_s8 (Armv8.1-M with MVE): one
 * batch, lhs [M, K] by rhs_t [N, K], one lhs row by four rhs rows per pass, 16 bytes of K per
 * VMLADAVA.S8 (tail-predicated loads read zeros past K). The offsets come out of the sum:
 *   sum_k (a + lo)(b + ro) = sum_k a b + ro * sum_k a + lo * (sum_k b + K ro),
 * the last term per rhs row once per rhs batch (the column terms), sum_k a per lhs row in the same
 * pass (VADDVA). Four outputs are requantized per vector (mcu_output_stage4).
 */
#include <stdint.h>

#include "mcu_batch_matmul_s8_internal.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

void mcu_batch_matmul_s8_mve_columns(const mcu_batch_matmul_params_t *p, const int8_t *rhs_t,
                                     int32_t *col)
{
    const int32_t depth = p->lhs.c;
    for (int32_t n = 0; n < p->rhs.c; ++n) {
        const int8_t *b = rhs_t + n * depth;
        int32_t sum = 0;
        for (int32_t k = 0; k < depth; k += 16) {
            const mve_pred16_t pred = vctp8q((uint32_t)(depth - k));
            sum = vaddvaq_s8(sum, vldrbq_z_s8(b + k, pred));
        }
        col[n] = p->q.input_offset * (sum + depth * p->rhs_offset);
    }
}

void mcu_batch_matmul_s8_mve(const mcu_batch_matmul_params_t *p, const int8_t *lhs,
                             const int8_t *rhs_t, const int32_t *col, int8_t *output)
{
    const int32_t rows = p->lhs.w, cols = p->rhs.c, depth = p->lhs.c;
    const int32_t ro = p->rhs_offset;
    const int32x4_t mult = vdupq_n_s32(p->multiplier);
    const int32x4_t shift = vdupq_n_s32(p->shift);
    for (int32_t m = 0; m < rows; ++m) {
        const int8_t *a = lhs + m * depth;
        int8_t *out = output + m * cols;
        int32_t n = 0;
        for (; n + 4 <= cols; n += 4) {
            const int8_t *b = rhs_t + n * depth;
            int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, sa = 0;
            for (int32_t k = 0; k < depth; k += 16) {
                const mve_pred16_t pred = vctp8q((uint32_t)(depth - k));
                const int8x16_t va = vldrbq_z_s8(a + k, pred);
                sa = vaddvaq_s8(sa, va);
                s0 = vmladavaq_s8(s0, va, vldrbq_z_s8(b + k, pred));
                s1 = vmladavaq_s8(s1, va, vldrbq_z_s8(b + depth + k, pred));
                s2 = vmladavaq_s8(s2, va, vldrbq_z_s8(b + 2 * depth + k, pred));
                s3 = vmladavaq_s8(s3, va, vldrbq_z_s8(b + 3 * depth + k, pred));
            }
            const int32_t sums[4] = {s0, s1, s2, s3};
            int32x4_t acc = vaddq_s32(vld1q_s32(col + n), vld1q_s32(sums));
            acc = vaddq_s32(acc, vdupq_n_s32(ro * sa));
            vstrbq_s32(out + n, mcu_output_stage4(acc, mult, shift, &p->q));
        }
        for (; n < cols; ++n) {
            const int8_t *b = rhs_t + n * depth;
            int32_t s = 0, sa = 0;
            for (int32_t k = 0; k < depth; k += 16) {
                const mve_pred16_t pred = vctp8q((uint32_t)(depth - k));
                const int8x16_t va = vldrbq_z_s8(a + k, pred);
                sa = vaddvaq_s8(sa, va);
                s = vmladavaq_s8(s, va, vldrbq_z_s8(b + k, pred));
            }
            out[n] = mcu_output_stage(s + ro * sa + col[n], p->multiplier, p->shift, &p->q);
        }
    }
}

#endif
