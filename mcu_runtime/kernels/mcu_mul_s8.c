/*
 * mcu_mul_s8.c - TFLite int8 MUL (reference_integer_ops::MulElementwise), with mcu_bcast_t
 * broadcasting.
 *
 * For every output element i, with a = input1[(i / in1.inner) % in1.period] and b likewise:
 *   out = clamp(requant((a + input1_offset) * (b + input2_offset), output_multiplier,
 *               output_shift) + output_offset, act_min, act_max)
 * requant: TFLite's double rounding (MCU_ROUND_TFLITE) or, for onnxruntime's numerics, one
 * rounding of the exact product half to even (mcu_requantize_mode).
 */
#include "mcu_kernel_util.h"

static int8_t mcu_mul_one(const void *params, int8_t a, int8_t b)
{
    const mcu_mul_params_t *p = params;
    const int32_t input1_val = a + p->input1_offset;
    const int32_t input2_val = b + p->input2_offset;
    /* |product| <= 256 * 256: no overflow. */
    const int32_t product = input1_val * input2_val;
    const int32_t raw_out =
        mcu_requantize_mode(product, p->output_multiplier, p->output_shift, p->rounding) +
        p->output_offset;
    return (int8_t)mcu_clamp_s32(raw_out, p->act_min, p->act_max);
}

mcu_status_t mcu_mul_s8(const mcu_mul_params_t *params, const int8_t *input1,
                        const int8_t *input2, int8_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_mul_params_t *p = params;
    if (p->size < 1 || !bcast_valid(&p->in1) || !bcast_valid(&p->in2) ||
        p->input1_offset < -127 || p->input1_offset > 128 ||
        p->input2_offset < -127 || p->input2_offset > 128 ||
        p->output_offset < MCU_INT8_MIN || p->output_offset > MCU_INT8_MAX ||
        p->output_shift < -31 || p->output_shift > 30 ||
        (p->rounding != MCU_ROUND_TFLITE && p->rounding != MCU_ROUND_NEAREST_EVEN) ||
        p->act_min < MCU_INT8_MIN || p->act_max > MCU_INT8_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }

    bcast_run(p, mcu_mul_one, p->size, &p->in1, &p->in2, input1, input2, output);
    return MCU_OK;
}
