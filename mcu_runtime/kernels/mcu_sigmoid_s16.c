/*
 * mcu_sigmoid_s16.c - TFLite int16 LOGISTIC, zero points 0 (twin: emitter/kernels/mcu_sigmoid_s16.py):
 *   x = (in * input_multiplier + round) >> input_shift              the input in 1/(3*4096) units
 *   r = sigmoid(|x|) in Q0.25, the table interpolated over 9 bits (saturated beyond step 255)
 *   mode 0: out = x >= 0 ? (r + 2^9) >> 10 : (2^25 - r + 2^9 - 1) >> 10          Q0.15, TFLite's
 *   mode 1: out = requant(x >= 0 ? r : 2^25 - r, output_multiplier, output_shift)
 * clamped to [act_min, act_max]. Element i is read before it is written.
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_sigmoid_s16(const mcu_activation_s16_params_t *params, const uint16_t *table, const int16_t *input,
                             int16_t *output)
{
    if (params == NULL || table == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_activation_s16_params_t *p = params;
    if (!mcu_activation_s16_valid(p)) {
        return MCU_ERR_ARG;
    }
    const int32_t round = p->input_shift > 0 ? (int32_t)(1u << (p->input_shift - 1)) : 0;
    const int32_t one = 1 << 25; /* 1.0 in Q0.25 */
    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t x = ((int32_t)input[i] * p->input_multiplier + round) >> p->input_shift;
        const uint32_t abs_x = (uint32_t)(x < 0 ? -x : x);
        const int32_t r = (int32_t)mcu_sigmoid_interp_u16(table, abs_x, 9u, 0x7FFFu << 10);
        int32_t out;
        if (p->output_mode == 0) {
            out = x >= 0 ? (r + (1 << 9)) >> 10 : (one - r + (1 << 9) - 1) >> 10;
        } else {
            out = mcu_requantize(x >= 0 ? r : one - r, p->output_multiplier, p->output_shift);
        }
        output[i] = (int16_t)mcu_clamp_s32(out, p->act_min, p->act_max);
    }
    return MCU_OK;
}
