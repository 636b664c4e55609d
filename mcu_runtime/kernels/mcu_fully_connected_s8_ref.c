/*
 * mcu_fully_connected_s8_ref.c - the reference of mcu_fully_connected_s8: the spec, written for
 * reading, not speed (tests only; not shipped in bundles).
 */
#include <stdint.h>

#include "mcu_math.h"
#include "mcu_nn.h"

mcu_status_t mcu_fully_connected_s8_ref(const mcu_fc_params_t *params, const int8_t *input,
                                        const int8_t *weights, const int32_t *bias,
                                        int8_t *output);

mcu_status_t mcu_fully_connected_s8_ref(const mcu_fc_params_t *params, const int8_t *input,
                                        const int8_t *weights, const int32_t *bias,
                                        int8_t *output)
{
    const int32_t in_features = params->in_features;
    const int32_t out_features = params->out_features;
    for (int32_t b = 0; b < params->batches; ++b) {
        for (int32_t n = 0; n < out_features; ++n) {
            /* acc = sum_k (in[b,k] + input_offset) * w[n,k] + bias[n] */
            int32_t acc = bias != NULL ? bias[n] : 0;
            for (int32_t k = 0; k < in_features; ++k) {
                const int32_t x = (int32_t)input[b * in_features + k] + params->q.input_offset;
                acc += x * (int32_t)weights[n * in_features + k];
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
