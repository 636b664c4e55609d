/*
 * mcu_batch_matmul_s8_generic.c - the generic path of mcu_batch_matmul_s8 (and the spec of the
 * others): one batch, one int32 sum per output, both operands read in their stored byte order.
 */
#include <stdint.h>

#include "mcu_batch_matmul_s8_internal.h"

/* out[m, n] for every m, n; `rounding_tflite` is a constant in each inlined copy. */
MCU_ALWAYS_INLINE void run(const mcu_batch_matmul_params_t *p, const int8_t *lhs, const int8_t *rhs,
                           int8_t *output, int rounding_tflite)
{
    const int32_t rows = p->lhs.w;  /* M */
    const int32_t depth = p->lhs.c; /* K */
    const int32_t cols = p->rhs.c;  /* N */
    /* element strides: lhs(m, k) = lhs[m * lhs_m + k * lhs_k], rhs(k, n) = rhs[k * rhs_k + n * rhs_n] */
    const int32_t lhs_m = p->lhs_transposed ? 1 : p->lhs_strides.row;
    const int32_t lhs_k = p->lhs_transposed ? p->lhs_strides.row : 1;
    const int32_t rhs_k = p->rhs_transposed ? 1 : p->rhs_strides.row;
    const int32_t rhs_n = p->rhs_transposed ? p->rhs_strides.row : 1;
    const int32_t lhs_offset = p->q.input_offset;
    const int32_t rhs_offset = p->rhs_offset;
    for (int32_t m = 0; m < rows; ++m) {
        for (int32_t n = 0; n < cols; ++n) {
            const int8_t *a = lhs + m * lhs_m;
            const int8_t *b = rhs + n * rhs_n;
            int32_t acc = 0;
            for (int32_t k = 0; k < depth; ++k) {
                acc += ((int32_t)a[k * lhs_k] + lhs_offset) * ((int32_t)b[k * rhs_k] + rhs_offset);
            }
            output[m * cols + n] =
                rounding_tflite ? mcu_output_stage_tflite(acc, p->multiplier, p->shift, &p->q)
                                : mcu_output_stage_rne(acc, p->multiplier, p->shift, &p->q);
        }
    }
}

void mcu_batch_matmul_s8_generic(const mcu_batch_matmul_params_t *p, const int8_t *lhs,
                                 const int8_t *rhs, int8_t *output)
{
    if (p->q.rounding == MCU_ROUND_TFLITE) {
        run(p, lhs, rhs, output, 1);
    } else {
        run(p, lhs, rhs, output, 0);
    }
}
