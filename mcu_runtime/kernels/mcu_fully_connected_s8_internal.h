/*
 * mcu_fully_connected_s8_internal.h - what the dispatcher mcu_fully_connected_s8.c and its path
 * files (mcu_fully_connected_s8_generic.c, _dsp.c, _mve.c) share: the path entry points and the
 * output stage of the rows that are not in a block. Internal to mcu_runtime.
 *
 * Each path computes out[b, n] = mcu_output_stage(sum_k in[b, k] * w[n, k] + kernel_sums[n]) over the
 * weight layout of mcu_nn.h (MCU_FC_BLOCK_ROWS rows per block in MCU_FC_CHUNK-input chunks, then
 * the last N % 4 rows row-major).
 */
#ifndef MCU_FULLY_CONNECTED_S8_INTERNAL_H
#define MCU_FULLY_CONNECTED_S8_INTERNAL_H

#include <stdint.h>

#include "mcu_kernel_util.h"
#include "mcu_nn.h"

/* *a_r += sum_{i in [begin, end)} x[i] * w[r * stride + i], r = 0..3: four rows stride bytes apart
 * of one block, in plain C (the generic path's chunks and tails, the DSP path's last bytes). */
MCU_ALWAYS_INLINE void mcu_fc_mac4_rows(const int8_t *x, const int8_t *w, int32_t stride,
                                        int32_t begin, int32_t end, int32_t *a0, int32_t *a1,
                                        int32_t *a2, int32_t *a3)
{
    int32_t s0 = *a0, s1 = *a1, s2 = *a2, s3 = *a3;
    for (int32_t i = begin; i < end; ++i) {
        const int32_t xv = (int32_t)x[i];
        s0 += xv * (int32_t)w[i];
        s1 += xv * (int32_t)w[stride + i];
        s2 += xv * (int32_t)w[2 * stride + i];
        s3 += xv * (int32_t)w[3 * stride + i];
    }
    *a0 = s0;
    *a1 = s1;
    *a2 = s2;
    *a3 = s3;
}

/* mcu_fully_connected_s8_generic.c: pure C99, every target (the host included). */
void mcu_fully_connected_s8_generic(const mcu_fc_params_t *p, const int8_t *input,
                                    const int8_t *weights, const int32_t *sums, int8_t *output);

#if MCU_ISA_NATIVE == MCU_ISA_DSP
/* mcu_fully_connected_s8_dsp.c: mcu_fully_connected_s8_path() chose MCU_PATH_DSP. */
void mcu_fully_connected_s8_dsp(const mcu_fc_params_t *p, const int8_t *input,
                                const int8_t *weights, const int32_t *sums, int8_t *output);
#endif

#if MCU_ISA_NATIVE == MCU_ISA_MVE
/* mcu_fully_connected_s8_mve.c: every shift[i], i < count, in [-31, 30] */
int mcu_fully_connected_s8_mve_shifts_ok(const int32_t *shift, int32_t count);

/* mcu_fully_connected_s8_mve.c: the dispatcher's own arguments, checked (so that its call is a
 * tail call); returns MCU_OK. */
mcu_status_t mcu_fully_connected_s8_mve(const mcu_context_t *ctx, const mcu_fc_params_t *p,
                                        const int8_t *input, const int8_t *weights,
                                        const int32_t *sums, int8_t *output);
#endif

/* mcu_fully_connected_s8_generic.c: the rows [first, N) that follow the blocks (row-major, K
 * bytes each) of one input row, every path's last N % 4 outputs (out of line: it keeps the paths'
 * loops lean). */
void mcu_fully_connected_s8_rows(const mcu_fc_params_t *p, const int8_t *in_row,
                                 const int8_t *weights, const int32_t *sums, int32_t first,
                                 int8_t *out_row);

#endif /* MCU_FULLY_CONNECTED_S8_INTERNAL_H */
