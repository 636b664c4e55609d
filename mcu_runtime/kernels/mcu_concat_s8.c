/*
 * mcu_concat_s8.c - concatenation along one axis, as a copy of contiguous chunks:
 *   for o in 0..outer-1, for k in 0..num_inputs-1:
 *       copy chunk[k] bytes from inputs[k] + o * chunk[k] to the output, in turn
 * chunk[k] is the product of input k's dimensions from the concatenation axis inward; outer is
 * the product of the dimensions outside it. Same scale and zero point on every input.
 */
#include <string.h>

#include "mcu_nn.h"

mcu_status_t mcu_concat_s8(int32_t num_inputs, const int8_t *const *inputs, const int32_t *chunk,
                           int32_t outer, int8_t *output)
{
    if (num_inputs < 1 || inputs == NULL || chunk == NULL || outer < 1 || output == NULL) {
        return MCU_ERR_ARG;
    }
    for (int32_t k = 0; k < num_inputs; ++k) {
        if (inputs[k] == NULL || chunk[k] < 1) {
            return MCU_ERR_ARG;
        }
    }

    int8_t *dst = output;
    for (int32_t o = 0; o < outer; ++o) {
        for (int32_t k = 0; k < num_inputs; ++k) {
            const size_t bytes = (size_t)chunk[k];
            memcpy(dst, inputs[k] + (size_t)o * bytes, bytes);
            dst += bytes;
        }
    }
    return MCU_OK;
}
