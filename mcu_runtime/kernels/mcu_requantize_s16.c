/*
 * mcu_requantize_s16.c - element-wise requantization int16 -> int16 (TFLite's QUANTIZE between
 * activation types, reference_ops::Requantize):
 *   out = clamp(requant(in + input_offset, multiplier, shift) + output_offset, act_min, act_max)
 * with the 32-bit double rounding of mcu_math.h, shift in [-31, 15].
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_requantize_s16(const mcu_requantize_params_t *params, const int16_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_requantize_params_t *p = params;
    if (p->size < 1 || p->q.input_offset < -(MCU_INT16_MAX) || p->q.input_offset > -(MCU_INT16_MIN) ||
        p->q.output_offset < MCU_INT16_MIN || p->q.output_offset > MCU_INT16_MAX || p->shift < -31 || p->shift > 15 ||
        p->q.rounding != 0 || p->q.act_min < MCU_INT16_MIN || p->q.act_max > MCU_INT16_MAX || p->q.act_min > p->q.act_max) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t raw = mcu_requantize((int32_t)input[i] + p->q.input_offset, p->multiplier, p->shift);
        output[i] = (int16_t)mcu_clamp_s32(raw + p->q.output_offset, p->q.act_min, p->q.act_max);
    }
    return MCU_OK;
}
