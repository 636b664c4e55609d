/*
 * mcu_eltwise_f32_s8.c - int8 binary element-wise op computed in float32 (a "float island":
 * ONNX Add/Sub/Mul/Div/Min/Max left in float between DequantizeLinear and QuantizeLinear).
 *
 * For every output element i, with x1 = input1[(i / in1.inner) % in1.period] and x2 likewise:
 *   a = input1_scale * (float)(x1 - input1_zero_point)
 *   b = input2_scale * (float)(x2 - input2_zero_point)
 *   r = a op b                        (DIV by 0 gives IEEE +-inf or NaN)
 *   v = r * output_inv_scale
 *   q = NaN ? 0 : round_half_away(clamp(v, -256, 256))
 *   out = clamp(q + output_zero_point, act_min, act_max)
 * Only correctly rounded float32 operations, each in its own statement, in this order: bit-exact
 * with emitter/kernels/mcu_eltwise_f32_s8.py provided the compiler does not contract a * b + c into an FMA:
 * gcc -std=c99 (-ffp-contract=off), never -ffp-contract=fast (gcc's -std=gnu* default) or
 * -ffast-math. See mcu_nn.h.
 */
#include <float.h>

#include "mcu_kernel_util.h"

/** finite and > 0 (false for NaN) */
static int32_t mcu_eltwise_f32_scale_valid(float s)
{
    return s > 0.0f && s <= FLT_MAX;
}

/** v -> quantized int in [-256, 256], NaN -> 0, rounding half away from zero in float. */
static int32_t mcu_eltwise_f32_round(float v)
{
    if (v != v) {
        return 0;
    }
    const float c = v < -256.0f ? -256.0f : (v > 256.0f ? 256.0f : v);
    return c >= 0.0f ? (int32_t)(c + 0.5f) : (int32_t)(c - 0.5f);
}

static int8_t mcu_eltwise_f32_one(const void *params, int8_t x1, int8_t x2)
{
    const mcu_eltwise_f32_params_t *p = params;
    const float a = p->input1_scale * (float)(x1 - p->input1_zero_point);
    const float b = p->input2_scale * (float)(x2 - p->input2_zero_point);
    float r;
    switch (p->op) {
    case MCU_F32_ADD: r = a + b; break;
    case MCU_F32_SUB: r = a - b; break;
    case MCU_F32_MUL: r = a * b; break;
    case MCU_F32_DIV: r = a / b; break;
    case MCU_F32_MIN: r = a < b ? a : b; break;
    default: r = a > b ? a : b; break; /* MCU_F32_MAX, checked by the caller */
    }
    const float v = r * p->output_inv_scale;
    const int32_t raw_out = mcu_eltwise_f32_round(v) + p->output_zero_point;
    return (int8_t)mcu_clamp_s32(raw_out, p->act_min, p->act_max);
}

mcu_status_t mcu_eltwise_f32_s8(const mcu_eltwise_f32_params_t *params, const int8_t *input1,
                                const int8_t *input2, int8_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_eltwise_f32_params_t *p = params;
    if (p->size < 1 || !bcast_valid(&p->in1) ||
        !bcast_valid(&p->in2) || p->op < MCU_F32_ADD || p->op > MCU_F32_MAX ||
        !mcu_eltwise_f32_scale_valid(p->input1_scale) ||
        !mcu_eltwise_f32_scale_valid(p->input2_scale) ||
        !mcu_eltwise_f32_scale_valid(p->output_inv_scale) ||
        p->input1_zero_point < MCU_INT8_MIN || p->input1_zero_point > MCU_INT8_MAX ||
        p->input2_zero_point < MCU_INT8_MIN || p->input2_zero_point > MCU_INT8_MAX ||
        p->output_zero_point < MCU_INT8_MIN || p->output_zero_point > MCU_INT8_MAX ||
        p->act_min < MCU_INT8_MIN || p->act_max > MCU_INT8_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }

    bcast_run(p, mcu_eltwise_f32_one, p->size, &p->in1, &p->in2, input1, input2, output);
    return MCU_OK;
}
