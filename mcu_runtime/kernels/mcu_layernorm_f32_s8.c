/*
 * mcu_layernorm_f32_s8.c - int8 LayerNormalization over the innermost axis computed in float32
 * (a "float island": ONNX LayerNormalization, stash_type 1, between DequantizeLinear and
 * QuantizeLinear).
 *
 * Per row of n = row_size elements q_0 .. q_{n-1}, in exactly this order:
 *   x_i  = input_scale * (float)(q_i - input_zero_point)
 *   mean = (((0 + x_0) + x_1) + ... + x_{n-1}) / (float)n
 *   var  = (((0 + d_0 * d_0) + d_1 * d_1) + ...) / (float)n,   d_i = x_i - mean
 *   inv  = 1.0f / sqrtf(var + epsilon)
 *   y_i  = ((d_i * inv) * gamma[i]) + beta[i]                  (no addition when beta is NULL)
 *   v    = y_i * output_inv_scale
 *   q    = NaN ? 0 : round_half_away(clamp(v, -256, 256))
 *   out_i = clamp(q + output_zero_point, act_min, act_max)
 * x_i and d_i are recomputed in each pass (no scratch); every pass reads q_i before the last one
 * writes out_i at the same index, so input == output is fine. Only correctly rounded float32
 * operations (+ - * / sqrtf): bit-exact with emitter/kernels/mcu_layernorm_f32_s8.py provided the compiler
 * does not contract a * b + c into an FMA: gcc -std=c99 (-ffp-contract=off), never
 * -ffp-contract=fast (gcc's -std=gnu* default) or -ffast-math. See mcu_nn.h.
 */
#include <float.h>
#include <math.h>

#include "mcu_math.h"
#include "mcu_nn.h"

/** v -> quantized int in [-256, 256], NaN -> 0, rounding half away from zero in float. */
static int32_t mcu_layernorm_f32_round(float v)
{
    if (v != v) {
        return 0;
    }
    const float c = v < -256.0f ? -256.0f : (v > 256.0f ? 256.0f : v);
    return c >= 0.0f ? (int32_t)(c + 0.5f) : (int32_t)(c - 0.5f);
}

mcu_status_t mcu_layernorm_f32_s8(const mcu_layernorm_f32_params_t *params, const int8_t *input,
                                  int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL || params->gamma == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_layernorm_f32_params_t *p = params;
    if (p->rows < 1 || p->row_size < 1 ||
        !(p->input_scale > 0.0f && p->input_scale <= FLT_MAX) ||
        !(p->epsilon >= 0.0f && p->epsilon <= FLT_MAX) ||
        !(p->output_inv_scale > 0.0f && p->output_inv_scale <= FLT_MAX) ||
        p->input_zero_point < MCU_INT8_MIN || p->input_zero_point > MCU_INT8_MAX ||
        p->output_zero_point < MCU_INT8_MIN || p->output_zero_point > MCU_INT8_MAX ||
        p->act_min < MCU_INT8_MIN || p->act_max > MCU_INT8_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }

    const int32_t n = p->row_size;
    const float n_f = (float)n;
    const float s = p->input_scale;
    const int32_t z = p->input_zero_point;
    for (int32_t row = 0; row < p->rows; ++row) {
        const int8_t *in = input + (size_t)row * (size_t)n;
        int8_t *out = output + (size_t)row * (size_t)n;

        /* One rounding per statement: every product is its own statement, so even a compiler that
         * contracts within an expression (clang's default) has no a * b + c to fuse. */
        float sum = 0.0f;
        for (int32_t i = 0; i < n; ++i) {
            const float x = s * (float)(in[i] - z);
            sum = sum + x;
        }
        const float mean = sum / n_f;

        float sq_sum = 0.0f;
        for (int32_t i = 0; i < n; ++i) {
            const float x = s * (float)(in[i] - z);
            const float d = x - mean;
            const float d2 = d * d;
            sq_sum = sq_sum + d2;
        }
        const float var = sq_sum / n_f;
        const float inv = 1.0f / sqrtf(var + p->epsilon);

        for (int32_t i = 0; i < n; ++i) {
            const float x = s * (float)(in[i] - z);
            const float d = x - mean;
            const float dn = d * inv;
            float y = dn * p->gamma[i];
            if (p->beta != NULL) {
                y = y + p->beta[i];
            }
            const float v = y * p->output_inv_scale;
            const int32_t raw_out = mcu_layernorm_f32_round(v) + p->output_zero_point;
            out[i] = (int8_t)mcu_clamp_s32(raw_out, p->act_min, p->act_max);
        }
    }
    return MCU_OK;
}
