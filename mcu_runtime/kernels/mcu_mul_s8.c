/*
 * mcu_mul_s8.c - TFLite int8 MUL (reference_integer_ops::MulElementwise), with mcu_bcast_t
 * broadcasting.
 *
 * For every output element i, with a = input1[(i / in1.inner) % in1.period] and b likewise:
 *   out = clamp(requant((a + input1_offset) * (b + input2_offset), output_multiplier,
 *               output_shift) + output_offset, act_min, act_max)
 */
#include "mcu_math.h"
#include "mcu_nn.h"

static int32_t mcu_mul_bcast_valid(const mcu_bcast_t *b)
{
    return b->inner >= 1 && b->period >= 1;
}

static int8_t mcu_mul_one(const mcu_mul_params_t *p, int8_t a, int8_t b)
{
    const int32_t input1_val = a + p->input1_offset;
    const int32_t input2_val = b + p->input2_offset;
    /* |product| <= 256 * 256: no overflow. */
    const int32_t product = input1_val * input2_val;
    const int32_t raw_out =
        mcu_requantize(product, p->output_multiplier, p->output_shift) + p->output_offset;
    return (int8_t)mcu_clamp_s32(raw_out, p->act_min, p->act_max);
}

mcu_status_t mcu_mul_s8(const mcu_mul_params_t *params, const int8_t *input1,
                        const int8_t *input2, int8_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_mul_params_t *p = params;
    if (p->size < 1 || !mcu_mul_bcast_valid(&p->in1) || !mcu_mul_bcast_valid(&p->in2) ||
        p->input1_offset < -127 || p->input1_offset > 128 ||
        p->input2_offset < -127 || p->input2_offset > 128 ||
        p->output_offset < MCU_INT8_MIN || p->output_offset > MCU_INT8_MAX ||
        p->output_shift < -31 || p->output_shift > 30 ||
        p->act_min < MCU_INT8_MIN || p->act_max > MCU_INT8_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }

    const int32_t size = p->size;
    const int32_t full1 = p->in1.inner == 1 && p->in1.period == size;
    const int32_t full2 = p->in2.inner == 1 && p->in2.period == size;
    if (full1 && full2) {
        /* Fast path: both operands are full tensors. */
        for (int32_t i = 0; i < size; ++i) {
            output[i] = mcu_mul_one(p, input1[i], input2[i]);
        }
        return MCU_OK;
    }
    for (int32_t i = 0; i < size; ++i) {
        const int32_t i1 = (i / p->in1.inner) % p->in1.period;
        const int32_t i2 = (i / p->in2.inner) % p->in2.period;
        output[i] = mcu_mul_one(p, input1[i1], input2[i2]);
    }
    return MCU_OK;
}
