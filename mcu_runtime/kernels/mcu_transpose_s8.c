/*
 * mcu_transpose_s8.c - general N-D transpose with numpy semantics on physical shapes:
 *   out_shape[k] = in_shape[perm[k]]
 *   out[j_0, ..., j_{r-1}] = in[i] with i[perm[k]] = j_k
 * The output is written in order while an odometer over the output index keeps the matching
 * input offset up to date. Not in place: input == output is rejected.
 * One odometer for every element size: mcu_transpose() (elem_bytes 1 or 2) serves mcu_transpose_s8
 * here and mcu_transpose_s16 (mcu_transpose_s16.c).
 */
#include "mcu_nn.h"

mcu_status_t mcu_transpose(const mcu_transpose_params_t *params, const void *input, void *output,
                           int32_t elem_bytes)
{
    if (params == NULL || input == NULL || output == NULL || input == output ||
        (elem_bytes != 1 && elem_bytes != 2)) {
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
    const int8_t *const in8 = (const int8_t *)input;
    const int16_t *const in16 = (const int16_t *)input;
    int8_t *const out8 = (int8_t *)output;
    int16_t *const out16 = (int16_t *)output;
    for (size_t o = 0; o < total; ++o) {
        if (elem_bytes == 1) {
            out8[o] = in8[in_offset];
        } else {
            out16[o] = in16[in_offset];
        }
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

mcu_status_t mcu_transpose_s8(const mcu_transpose_params_t *params, const int8_t *input,
                              int8_t *output)
{
    return mcu_transpose(params, input, output, 1);
}
