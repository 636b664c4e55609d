/*
 * mcu_sigmoid_s16.c - TFLite int16 LOGISTIC, zero points 0 (twin: emitter/kernels/mcu_sigmoid_s16.py):
 *   x = (in * input_multiplier + round) >> input_shift              the input in 1/(3*4096) units
 *   r = sigmoid(|x|) in Q0.25, the table interpolated over 9 bits (saturated beyond step 255)
 *   mode 0: out = x >= 0 ? (r + 2^9) >> 10 : (2^25 - r + 2^9 - 1) >> 10          Q0.15, TFLite's
 *   mode 1: out = requant(x >= 0 ? r : 2^25 - r, output_multiplier, output_shift)
 * clamped to [act_min, act_max]. Element i is read before it is written.
 */
#include "mcu_nn_s16.h"

mcu_status_t mcu_sigmoid_s16(const mcu_activation_s16_params_t *params, const uint16_t *table, const int16_t *input,
                             int16_t *output)
{
    /* sigmoid(|x|) in Q0.25 over 9 bits; v = x >= 0 ? r : 1.0 - r */
    return mcu_sigmoid_table_s16(params, table, input, output, 9u, 0x7FFFu << 10, 0, 1 << 25, 10);
}
