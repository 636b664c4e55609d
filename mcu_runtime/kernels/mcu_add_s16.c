/*
 * mcu_add_s16.c - TFLite int16 ADD: the general ADD recipe with left_shift 15 (TFLite Micro's
 * Prepare for int16 outputs), two same-size operands, zero points 0.
 *
 *   x1  = requant(a << left_shift, input1_multiplier, input1_shift)      (shifts <= 0)
 *   x2  = requant(b << left_shift, input2_multiplier, input2_shift)
 *   out = clamp(requant(x1 + x2, output_multiplier, output_shift), act_min, act_max)
 * requant is the 32-bit double rounding of mcu_math.h. Element i is read before it is written.
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_add_s16(const mcu_add_params_t *params, const int16_t *input1, const int16_t *input2,
                         int16_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_add_params_t *p = params;
    if (p->size < 1 || p->in1.inner != 1 || p->in1.period != p->size || p->in2.inner != 1 ||
        p->in2.period != p->size || p->left_shift < 0 || p->left_shift > 15 || p->input1_offset != 0 ||
        p->input2_offset != 0 || p->output_offset != 0 || p->input1_shift < -31 || p->input1_shift > 0 ||
        p->input2_shift < -31 || p->input2_shift > 0 || p->output_shift < -31 || p->output_shift > 30 ||
        p->act_min < MCU_INT16_MIN || p->act_max > MCU_INT16_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t shifted1 = (int32_t)input1[i] * (1 << p->left_shift);
        const int32_t shifted2 = (int32_t)input2[i] * (1 << p->left_shift);
        const int32_t scaled1 = mcu_requantize(shifted1, p->input1_multiplier, p->input1_shift);
        const int32_t scaled2 = mcu_requantize(shifted2, p->input2_multiplier, p->input2_shift);
        const int32_t raw = mcu_requantize(scaled1 + scaled2, p->output_multiplier, p->output_shift);
        output[i] = (int16_t)mcu_clamp_s32(raw, p->act_min, p->act_max);
    }
    return MCU_OK;
}
