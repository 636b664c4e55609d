/*
 * mcu_fully_connected_s16.c - TFLite int16x8 FULLY_CONNECTED (reference_integer_ops FullyConnected,
 * int16 input).
 *
 *   out[b,n] = clamp(requantize_s64(sum_k in[b,k] * w[n,k] + bias[n], multiplier[c], shift[c]),
 *              act_min, act_max),   c = n if per_channel else 0
 * One int64 accumulator per output; zero points are 0.
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_fully_connected_s16(const mcu_fc_params_t *params, const int16_t *input,
                                     const int8_t *weights, const int64_t *bias, int16_t *output)
{
    if (params == NULL || input == NULL || weights == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_fc_params_t *p = params;
    if (p->batches < 1 || p->in_features < 1 || p->out_features < 1 || p->q.input_offset != 0 ||
        p->q.output_offset != 0 || p->q.act_min < MCU_INT16_MIN || p->q.act_max > MCU_INT16_MAX ||
        p->q.act_min > p->q.act_max) {
        return MCU_ERR_ARG;
    }
    const int32_t channels = p->per_channel ? p->out_features : 1;
    for (int32_t c = 0; c < channels; ++c) {
        if (p->multiplier[c] < 0 || p->shift[c] < MCU_S16_SHIFT_MIN || p->shift[c] > MCU_S16_SHIFT_MAX) {
            return MCU_ERR_ARG;
        }
    }
    const size_t k_count = (size_t)p->in_features;
    for (int32_t b = 0; b < p->batches; ++b) {
        const int16_t *in_row = input + (size_t)b * k_count;
        int16_t *out_row = output + (size_t)b * (size_t)p->out_features;
        for (int32_t n = 0; n < p->out_features; ++n) {
            const int8_t *w_row = weights + (size_t)n * k_count;
            int64_t acc = bias != NULL ? bias[n] : 0;
            for (size_t k = 0; k < k_count; ++k) {
                acc += (int64_t)in_row[k] * (int64_t)w_row[k];
            }
            const int32_t c = p->per_channel ? n : 0;
            const int32_t out = mcu_requantize_s64(acc, p->multiplier[c], p->shift[c]);
            out_row[n] = (int16_t)mcu_clamp_s32(out, p->q.act_min, p->q.act_max);
        }
    }
    return MCU_OK;
}
