/*
 * mcu_transpose_s16.c - general N-D transpose of int16 elements (as mcu_transpose_s8.c) with numpy semantics on physical shapes:
 *   out_shape[k] = in_shape[perm[k]]
 *   out[j_0, ..., j_{r-1}] = in[i] with i[perm[k]] = j_k
 * The output is written in order while an odometer over the output index keeps the matching
 * input offset up to date. Not in place: input == output is rejected.
 */
#include "mcu_nn_s16.h"

mcu_status_t mcu_transpose_s16(const mcu_transpose_params_t *params, const int16_t *input,
                               int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL || input == output) {
        return MCU_ERR_ARG;
    }
    const mcu_transpose_params_t *p = params;
    if (p->rank < 1 || p->rank > MCU_MAX_RANK) {
        return MCU_ERR_ARG;
    }
    const int32_t rank = p->rank;
    int32_t seen[MCU_MAX_RANK] = {0};
    for (int32_t d = 0; d < rank; ++d) {
        const int32_t axis = p->perm[d];
        if (p->in_shape[d] < 1 || axis < 0 || axis >= rank || seen[axis]) {
            return MCU_ERR_ARG;
        }
        seen[axis] = 1;
    }

    /* Row-major strides of the input, in elements. */
    size_t in_stride[MCU_MAX_RANK];
    size_t total = 1;
    for (int32_t d = rank - 1; d >= 0; --d) {
        in_stride[d] = total;
        total *= (size_t)p->in_shape[d];
    }
    /* Output axis k walks input axis perm[k]. */
    int32_t out_shape[MCU_MAX_RANK];
    size_t step[MCU_MAX_RANK];
    for (int32_t k = 0; k < rank; ++k) {
        out_shape[k] = p->in_shape[p->perm[k]];
        step[k] = in_stride[p->perm[k]];
    }

    int32_t idx[MCU_MAX_RANK] = {0};
    size_t in_offset = 0;
    for (size_t o = 0; o < total; ++o) {
        output[o] = input[in_offset];
        for (int32_t k = rank - 1; k >= 0; --k) {
            if (++idx[k] < out_shape[k]) {
                in_offset += step[k];
                break;
            }
            idx[k] = 0;
            in_offset -= (size_t)(out_shape[k] - 1) * step[k];
        }
    }
    return MCU_OK;
}
