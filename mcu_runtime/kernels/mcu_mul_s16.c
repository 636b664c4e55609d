/*
 * mcu_mul_s16.c - TFLite int16 MUL, two same-size operands, zero points 0:
 *   out = clamp(requant(a * b, output_multiplier, output_shift), act_min, act_max)
 * requant is the 32-bit double rounding of mcu_math.h; |a * b| <= 2^30. Element i is read before it
 * is written.
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_mul_s16(const mcu_mul_params_t *params, const int16_t *input1, const int16_t *input2,
                         int16_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_mul_params_t *p = params;
    if (p->size < 1 || p->in1.inner != 1 || p->in1.period != p->size || p->in2.inner != 1 ||
        p->in2.period != p->size || p->input1_offset != 0 || p->input2_offset != 0 || p->output_offset != 0 ||
        p->output_shift < -31 || p->output_shift > 30 || p->act_min < MCU_INT16_MIN ||
        p->act_max > MCU_INT16_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t product = (int32_t)input1[i] * (int32_t)input2[i];
        const int32_t raw = mcu_requantize(product, p->output_multiplier, p->output_shift);
        output[i] = (int16_t)mcu_clamp_s32(raw, p->act_min, p->act_max);
    }
    return MCU_OK;
}
