/*
 * mcu_requantize_s8_s16.c - element-wise requantization int8 -> int16: mcu_requantize_mixed_s16() of
 * mcu_requantize_s16.c (TFLite's QUANTIZE between activation types).
 */
#include "mcu_nn_s16.h"

mcu_status_t mcu_requantize_s8_s16(const mcu_requantize_params_t *params, const int8_t *input, int16_t *output)
{
    return mcu_requantize_mixed_s16(params, input, 1, output, 2);
}
