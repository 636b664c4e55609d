/*
 * mcu_add_s8.c - TFLite int8 ADD (reference_integer_ops::Add), with mcu_bcast_t broadcasting.
 *
 * For every output element i, with a = input1[(i / in1.inner) % in1.period] and b likewise:
 *   x1  = requant((a + input1_offset) << left_shift, input1_multiplier, input1_shift)
 *   x2  = requant((b + input2_offset) << left_shift, input2_multiplier, input2_shift)
 *   out = clamp(requant(x1 + x2, output_multiplier, output_shift) + output_offset,
 *               act_min, act_max)
 * The input shifts are <= 0, so requant is TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp.
 * Sub is Add with input2_multiplier negated.
 */
#include "mcu_kernel_util.h"

static int8_t mcu_add_one(const void *params, int8_t a, int8_t b)
{
    const mcu_add_params_t *p = params;
    /* |a + offset| <= 256, so the shift by left_shift (<= 20) cannot overflow. */
    const int32_t shifted1 = (int32_t)((a + p->input1_offset) * (1 << p->left_shift));
    const int32_t shifted2 = (int32_t)((b + p->input2_offset) * (1 << p->left_shift));
    const int32_t scaled1 = mcu_requantize(shifted1, p->input1_multiplier, p->input1_shift);
    const int32_t scaled2 = mcu_requantize(shifted2, p->input2_multiplier, p->input2_shift);
    /* Each scaled value has magnitude < 2^29: the sum cannot overflow. */
    const int32_t raw_sum = scaled1 + scaled2;
    const int32_t raw_out =
        mcu_requantize(raw_sum, p->output_multiplier, p->output_shift) + p->output_offset;
    return (int8_t)mcu_clamp_s32(raw_out, p->act_min, p->act_max);
}

mcu_status_t mcu_add_s8(const mcu_add_params_t *params, const int8_t *input1,
                        const int8_t *input2, int8_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_add_params_t *p = params;
    if (p->size < 1 || !bcast_valid(&p->in1) || !bcast_valid(&p->in2) ||
        p->left_shift < 0 || p->left_shift > 20 ||
        p->input1_offset < -127 || p->input1_offset > 128 ||
        p->input2_offset < -127 || p->input2_offset > 128 ||
        p->output_offset < MCU_INT8_MIN || p->output_offset > MCU_INT8_MAX ||
        p->input1_shift < -31 || p->input1_shift > 0 ||
        p->input2_shift < -31 || p->input2_shift > 0 ||
        p->output_shift < -31 || p->output_shift > 30 ||
        p->act_min < MCU_INT8_MIN || p->act_max > MCU_INT8_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }

    bcast_run(p, mcu_add_one, p->size, &p->in1, &p->in2, input1, input2, output);
    return MCU_OK;
}
