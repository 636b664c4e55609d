/*
 * mcu_requantize_s8.c - element-wise int8 requantization (scale/zero-point change, standalone
 * Relu/Clip), TFLite's int8 -> int8 Requantize:
 *   out[i] = clamp(requant(in[i] + input_offset, multiplier, shift) + output_offset,
 *                  act_min, act_max)
 * Each element is read before it is written, so input == output is allowed.
 */
#include "mcu_math.h"
#include "mcu_nn.h"

mcu_status_t mcu_requantize_s8(const mcu_requantize_params_t *params, const int8_t *input,
                               int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_requantize_params_t *p = params;
    if (p->size < 1 || p->q.input_offset < -127 || p->q.input_offset > 128 ||
        p->q.output_offset < MCU_INT8_MIN || p->q.output_offset > MCU_INT8_MAX ||
        p->shift < -31 || p->shift > 30 || p->q.act_min < MCU_INT8_MIN ||
        p->q.act_max > MCU_INT8_MAX || p->q.act_min > p->q.act_max) {
        return MCU_ERR_ARG;
    }

    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t in_val = input[i] + p->q.input_offset;
        const int32_t raw_out =
            mcu_requantize_mode(in_val, p->multiplier, p->shift, p->q.rounding) +
            p->q.output_offset;
        output[i] = (int8_t)mcu_clamp_s32(raw_out, p->q.act_min, p->q.act_max);
    }
    return MCU_OK;
}
