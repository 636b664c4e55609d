/*
 * mcu_transpose_s16.c - general N-D transpose of int16 elements: mcu_transpose() of
 * mcu_transpose_s8.c with 2-byte elements (numpy semantics on physical shapes). Not in place.
 */
#include "mcu_nn.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_transpose_s16(const mcu_transpose_params_t *params, const int16_t *input,
                               int16_t *output)
{
    return mcu_transpose(params, input, output, 2);
}
