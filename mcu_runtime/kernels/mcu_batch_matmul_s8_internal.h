/*
 * mcu_batch_matmul_s8_internal.h - what the dispatcher mcu_batch_matmul_s8.c and its path files
 * (mcu_batch_matmul_s8_generic.c, _dsp.c, _mve.c) share: the entry point of each path, which
 * computes one batch's [M, N] output. Internal to mcu_runtime.
 */
#ifndef MCU_BATCH_MATMUL_S8_INTERNAL_H
#define MCU_BATCH_MATMUL_S8_INTERNAL_H

#include <stdint.h>

#include "mcu_kernel_util.h"
#include "mcu_nn.h"

/* Up to this many lhs rows, the MVE path sums the column terms in its main pass (col NULL). */
#define MCU_BMM_INLINE_COLS 2

/* mcu_batch_matmul_s8_generic.c: one batch, pure C99, either operand in either byte order:
 *   out[m, n] = mcu_output_stage(sum_k (lhs(m, k) + input_offset) * (rhs(k, n) + rhs_offset)),
 * lhs(m, k) = lhs[m * R + k] (lhs[k * R + m] transposed), rhs(k, n) = rhs[k * R + n]
 * (rhs[n * R + k] transposed), R the operand's row stride. */
void mcu_batch_matmul_s8_generic(const mcu_batch_matmul_params_t *p, const int8_t *lhs,
                                 const int8_t *rhs, int8_t *output);

#if MCU_ISA_NATIVE == MCU_ISA_DSP
/* mcu_batch_matmul_s8_dsp.c: one batch, lhs [M, K] and rhs_t [N, K] (rows of K bytes each,
 * lhs_row / rhs_row bytes apart); mcu_batch_matmul_s8_path() chose MCU_PATH_DSP. */
void mcu_batch_matmul_s8_dsp(const mcu_batch_matmul_params_t *p, const int8_t *lhs, int32_t lhs_row,
                             const int8_t *rhs_t, int32_t rhs_row, int8_t *output);
#endif

#if MCU_ISA_NATIVE == MCU_ISA_MVE
/* mcu_batch_matmul_s8_mve.c: the column terms of one rhs_t [N, K]:
 *   col[n] = input_offset * (sum_k rhs_t[n, k] + K * rhs_offset). */
void mcu_batch_matmul_s8_mve_columns(const mcu_batch_matmul_params_t *p, const int8_t *rhs_t,
                                     int32_t rhs_row, int32_t *col);

/* mcu_batch_matmul_s8_mve.c: one batch, lhs [M, K], rhs_t [N, K] and its column terms (NULL: summed
 * in the same pass). */
void mcu_batch_matmul_s8_mve(const mcu_batch_matmul_params_t *p, const int8_t *lhs, int32_t lhs_row,
                             const int8_t *rhs_t, int32_t rhs_row, const int32_t *col, int8_t *output);
#endif

#endif /* MCU_BATCH_MATMUL_S8_INTERNAL_H */
