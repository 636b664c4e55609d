/*
 * mcu_fully_connected_s4_internal.h - what the dispatcher mcu_fully_connected_s4.c and its path
 * files (mcu_fully_connected_s4_generic.c, _dsp.c, _mve.c) share. Internal to mcu_runtime.
 *
 * Each path computes, per input row b, out[b, n] = mcu_output_stage(sum_k in[b, k] * u[n, k]
 * + kernel_sums[n] - 8 * sum_k in[b, k]) over the nibbles u = w + 8 of the layout of mcu_nn_s4.h:
 * sum_k in * u - 8 sum_k in is exactly sum_k in * w, and |sum_k in * u| <= K * 128 * 15 < 2^31.
 */
#ifndef MCU_FULLY_CONNECTED_S4_INTERNAL_H
#define MCU_FULLY_CONNECTED_S4_INTERNAL_H

#include <stdint.h>

#include "mcu_kernel_util.h"
#include "mcu_nn.h"
#include "mcu_nn_s4.h"

/* sum_j x[j] * u[j] over one row part of t <= 32 inputs stored in (t + 1) / 2 bytes at w (byte j:
 * input j low, input h + j high, h = (t + 1) / 2), in plain C. */
MCU_ALWAYS_INLINE int32_t mcu_fc_s4_part(const int8_t *x, const uint8_t *w, int32_t t)
{
    const int32_t h = (t + 1) >> 1;
    int32_t s = 0;
    int32_t j = 0;
    for (; j < t - h; ++j) {
        const int32_t b = w[j];
        s += (int32_t)x[j] * (b & 15) + (int32_t)x[h + j] * (b >> 4);
    }
    if (j < h) { /* t odd: the last byte's low nibble only */
        s += (int32_t)x[j] * (w[j] & 15);
    }
    return s;
}

/* mcu_fully_connected_s4_generic.c: sum_k x[k], as an int32 (|sum| <= 128 K) */
int32_t mcu_fc_s4_input_sum(const int8_t *x, int32_t k);

/* mcu_fully_connected_s4_generic.c: pure C99, every target (the host included). */
void mcu_fully_connected_s4_generic(const mcu_fc_params_t *p, const int8_t *input,
                                    const uint8_t *weights, const int32_t *sums, int8_t *output);

/* mcu_fully_connected_s4_generic.c: the rows [first, N) that follow the blocks (one after another,
 * (K + 1) / 2 bytes each) of one input row, every path's last N % 4 outputs; minus8 is
 * -8 * sum_k in_row[k]. */
void mcu_fully_connected_s4_rows(const mcu_fc_params_t *p, const int8_t *in_row,
                                 const uint8_t *weights, const int32_t *sums, int32_t first,
                                 int32_t minus8, int8_t *out_row);

#if MCU_ISA_NATIVE == MCU_ISA_DSP
/* mcu_fully_connected_s4_dsp.c */
void mcu_fully_connected_s4_dsp(const mcu_fc_params_t *p, const int8_t *input,
                                const uint8_t *weights, const int32_t *sums, int8_t *output);
#endif

#if MCU_ISA_NATIVE == MCU_ISA_MVE
/* mcu_fully_connected_s4_mve.c: every shift[i], i < count, in [-31, 30] (four at a time) */
int mcu_fc_s4_mve_shifts_ok(const int32_t *shift, int32_t count);

/* mcu_fully_connected_s4_mve.c */
void mcu_fully_connected_s4_mve(const mcu_fc_params_t *p, const int8_t *input,
                                const uint8_t *weights, const int32_t *sums, int8_t *output);
#endif

#endif /* MCU_FULLY_CONNECTED_S4_INTERNAL_H */
