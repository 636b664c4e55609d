/*
 * mcu_fully_connected_s8_internal.h - what the dispatcher mcu_fully_connected_s8.c and its path
 * files (mcu_fully_connected_s8_generic.c, _dsp.c, _mve.c) share: the path entry points and the
 * output stage of the rows that are not in a block. Internal to mcu_runtime.
 *
 * Each path computes out[b, n] = output_stage(sum_k in[b, k] * w[n, k] + kernel_sums[n]) over the
 * weight layout of mcu_nn.h (MCU_FC_BLOCK_ROWS rows per block in MCU_FC_CHUNK-input chunks, then
 * the last N % 4 rows row-major).
 */
#ifndef MCU_FULLY_CONNECTED_S8_INTERNAL_H
#define MCU_FULLY_CONNECTED_S8_INTERNAL_H

#include <stdint.h>

#include "../support/mcu_dot_s8.h"
#include "mcu_kernel_util.h"
#include "mcu_nn.h"

/* mcu_fully_connected_s8_generic.c: pure C99, every target (the host included). */
void mcu_fully_connected_s8_generic(const mcu_fc_params_t *p, const int8_t *input,
                                    const int8_t *weights, const int32_t *sums, int8_t *output);

#if MCU_ISA_NATIVE == MCU_ISA_DSP
/* mcu_fully_connected_s8_dsp.c: mcu_fully_connected_s8_path() chose MCU_PATH_DSP. */
void mcu_fully_connected_s8_dsp(const mcu_fc_params_t *p, const int8_t *input,
                                const int8_t *weights, const int32_t *sums, int8_t *output);
#endif

#if MCU_ISA_NATIVE == MCU_ISA_MVE
/* mcu_fully_connected_s8_mve.c */
void mcu_fully_connected_s8_mve(const mcu_fc_params_t *p, const int8_t *input,
                                const int8_t *weights, const int32_t *sums, int8_t *output);
#endif

/* The rows [first, N) that follow the blocks (row-major, K bytes each) of one input row: every
 * path's last N % 4 outputs. */
static inline void mcu_fc_rows(const mcu_fc_params_t *p, const int8_t *in_row,
                               const int8_t *weights, const int32_t *sums, int32_t first,
                               int8_t *out_row)
{
    const int32_t k = p->in_features;
    for (int32_t n = first; n < p->out_features; ++n) {
        const int32_t c = p->per_channel ? n : 0;
        /* |sum of products| <= K * 2^14 < 2^29; + kernel sum: the int32 TFLite accumulator */
        const int32_t acc = (int32_t)((uint32_t)mcu_dot1_s8(in_row, weights + n * k, k) +
                                      (uint32_t)(sums != NULL ? sums[n] : 0));
        out_row[n] = output_stage(acc, p->multiplier[c], p->shift[c], &p->q);
    }
}

#endif /* MCU_FULLY_CONNECTED_S8_INTERNAL_H */
