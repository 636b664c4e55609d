/*
 * mcu_tanh_s16.c - TFLite int16 TANH, zero points 0 (twin: emitter/kernels/mcu_tanh_s16.py), through the
 * sigmoid table: tanh(x) = 2 * sigmoid(2x) - 1.
 *   x = (in * input_multiplier + round) >> input_shift              the input in 1/(3*4096) units
 *   r = sigmoid(2|x|) in Q0.24, the table interpolated over 8 bits (saturated beyond step 255)
 *   mode 0: out = x >= 0 ? (r - 2^23 + 2^7) >> 8 : (2^23 - r + 2^7 - 1) >> 8      Q0.15, TFLite's
 *   mode 1: out = requant(x >= 0 ? r - 2^23 : 2^23 - r, output_multiplier, output_shift)   (tanh in Q0.23)
 * clamped to [act_min, act_max]. Element i is read before it is written.
 */
#include "mcu_nn_s16.h"

mcu_status_t mcu_tanh_s16(const mcu_activation_s16_params_t *params, const uint16_t *table, const int16_t *input,
                          int16_t *output)
{
    /* sigmoid(2|x|) in Q0.24 over 8 bits; v = x >= 0 ? r - 1/2 : 1/2 - r (tanh in Q0.23) */
    return mcu_sigmoid_table_s16(params, table, input, output, 8u, 0xFFFFu << 8, 1 << 23, 1 << 23, 8);
}
