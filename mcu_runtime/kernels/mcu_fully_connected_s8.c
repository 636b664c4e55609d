/*
 * mcu_fully_connected_s8.c - int8 fully connected layer: in [batches, K], weights [N, K] row-major
 * (symmetric, zero point 0), bias [N] or NULL, out [batches, N].
 *
 * Reference kernel with the semantics of TFLite Micro's int8 fully connected (per-tensor or
 * per-channel) and CMSIS-NN's arm_fully_connected_s8: one int32 accumulator per output.
 */
#include "mcu_math.h"
#include "mcu_nn.h"

static int quant_io_valid(const mcu_quant_io_t *q)
{
    return q->input_offset >= -MCU_INT8_MAX && q->input_offset <= -MCU_INT8_MIN &&
           q->output_offset >= MCU_INT8_MIN && q->output_offset <= MCU_INT8_MAX &&
           q->act_min >= MCU_INT8_MIN && q->act_max <= MCU_INT8_MAX && q->act_min <= q->act_max;
}

/* Every shift must keep mcu_requantize's shifts in range: shift in [-31, 30]. */
static int shifts_valid(const int32_t *shift, int32_t count)
{
    for (int32_t i = 0; i < count; ++i) {
        if (shift[i] < -31 || shift[i] > 30) {
            return 0;
        }
    }
    return 1;
}

mcu_status_t mcu_fully_connected_s8(const mcu_fc_params_t *params, const int8_t *input,
                                    const int8_t *weights, const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || weights == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->batches < 1 || params->in_features < 1 || params->out_features < 1 ||
        (params->per_channel != 0 && params->per_channel != 1) || !quant_io_valid(&params->q) ||
        !shifts_valid(params->shift, params->per_channel ? params->out_features : 1)) {
        return MCU_ERR_ARG;
    }

    const int32_t batches = params->batches;
    const int32_t in_features = params->in_features;
    const int32_t out_features = params->out_features;
    const int32_t per_channel = params->per_channel;
    const int32_t input_offset = params->q.input_offset;
    const int32_t output_offset = params->q.output_offset;
    const int32_t act_min = params->q.act_min;
    const int32_t act_max = params->q.act_max;

    for (int32_t b = 0; b < batches; ++b) {
        const int8_t *const in_row = input + b * in_features;
        for (int32_t n = 0; n < out_features; ++n) {
            const int8_t *const w_row = weights + n * in_features;
            const int32_t q_index = per_channel ? n : 0;
            /* acc = sum_k (in[b,k] + input_offset) * w[n,k] + bias[n] */
            int32_t acc = 0;
            for (int32_t k = 0; k < in_features; ++k) {
                const int32_t in_val = (int32_t)in_row[k] + input_offset;
                const int32_t w_val = (int32_t)w_row[k];
                acc += in_val * w_val;
            }
            if (bias != NULL) {
                acc += bias[n];
            }
            acc = mcu_requantize(acc, params->multiplier[q_index], params->shift[q_index]);
            acc += output_offset;
            acc = mcu_clamp_s32(acc, act_min, act_max);
            output[b * out_features + n] = (int8_t)acc;
        }
    }
    return MCU_OK;
}
