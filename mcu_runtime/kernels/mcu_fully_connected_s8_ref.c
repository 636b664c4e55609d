/*
 * mcu_fully_connected_s8_ref.c - the reference of mcu_fully_connected_s8: the spec, written for
 * reading, not speed (tests only; not shipped in bundles).
 */
#include <stdint.h>

#include "mcu_math.h"
#include "mcu_nn.h"

mcu_status_t mcu_fully_connected_s8_ref(const mcu_fc_params_t *params, const int8_t *input,
                                        const int8_t *weights, const int32_t *kernel_sums,
                                        int8_t *output);

/* Where weight [n, k] of an [N, K] matrix is in the layout of mcu_nn.h (MCU_FC_BLOCK_ROWS). */
static int32_t weight_index(int32_t n, int32_t k, int32_t rows, int32_t cols)
{
    const int32_t blocked = rows - rows % MCU_FC_BLOCK_ROWS;
    if (n >= blocked) {
        return n * cols + k; /* the last rows, row-major */
    }
    const int32_t block = (n / MCU_FC_BLOCK_ROWS) * MCU_FC_BLOCK_ROWS * cols;
    const int32_t r = n % MCU_FC_BLOCK_ROWS;
    const int32_t full = cols - cols % MCU_FC_CHUNK; /* inputs in whole chunks */
    if (k < full) {
        return block + (k / MCU_FC_CHUNK) * MCU_FC_BLOCK_ROWS * MCU_FC_CHUNK + r * MCU_FC_CHUNK +
               k % MCU_FC_CHUNK;
    }
    const int32_t tail = cols - full;
    return block + full * MCU_FC_BLOCK_ROWS + r * tail + (k - full);
}

mcu_status_t mcu_fully_connected_s8_ref(const mcu_fc_params_t *params, const int8_t *input,
                                        const int8_t *weights, const int32_t *kernel_sums,
                                        int8_t *output)
{
    const int32_t in_features = params->in_features;
    const int32_t out_features = params->out_features;
    for (int32_t b = 0; b < params->batches; ++b) {
        for (int32_t n = 0; n < out_features; ++n) {
            /* acc = sum_k in[b,k] * w[n,k] + kernel_sums[n]
             *     = sum_k (in[b,k] + input_offset) * w[n,k] + bias[n] */
            int32_t acc = kernel_sums != NULL ? kernel_sums[n] : 0;
            for (int32_t k = 0; k < in_features; ++k) {
                const int32_t x = (int32_t)input[b * in_features + k];
                acc += x * (int32_t)weights[weight_index(n, k, out_features, in_features)];
            }
            const int32_t c = params->per_channel ? n : 0;
            int32_t out = mcu_requantize_mode(acc, params->multiplier[c], params->shift[c],
                                              params->q.rounding);
            out += params->q.output_offset;
            output[b * out_features + n] =
                (int8_t)mcu_clamp_s32(out, params->q.act_min, params->q.act_max);
        }
    }
    return MCU_OK;
}
