/*
 * mcu_lut_s8.c - any unary int8 function (Sigmoid, Tanh, HardSwish, ...) through a 256-entry
 * table built at generation time:
 *   out[i] = table[(uint8_t)(in[i] + 128)]      (table[0] is f(-128), table[255] is f(127))
 * Each element is read before it is written, so input == output is allowed.
 */
#include "mcu_nn.h"

mcu_status_t mcu_lut_s8(int32_t size, const int8_t *table, const int8_t *input, int8_t *output)
{
    if (size < 1 || table == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    for (int32_t i = 0; i < size; ++i) {
        const uint8_t index = (uint8_t)(input[i] + 128);
        output[i] = table[index];
    }
    return MCU_OK;
}
