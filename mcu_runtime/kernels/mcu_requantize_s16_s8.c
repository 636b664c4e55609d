/*
 * mcu_requantize_s16_s8.c - element-wise requantization int16 -> int8: mcu_requantize_mixed_s16() of
 * mcu_requantize_s16.c (TFLite's QUANTIZE between activation types).
 */
#include "mcu_nn_s16.h"

mcu_status_t mcu_requantize_s16_s8(const mcu_requantize_params_t *params, const int16_t *input, int8_t *output)
{
    return mcu_requantize_mixed_s16(params, input, 2, output, 1);
}
