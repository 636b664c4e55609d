/*
 * mcu_pad_s8.c - constant padding of an N-D int8 tensor (ONNX Pad mode=constant, TFLite PAD/PADV2):
 *   out_shape[d] = pad_before[d] + in_shape[d] + pad_after[d]
 *   out[i_0 + pad_before[0], ..., i_{r-1} + pad_before[r-1]] = in[i_0, ..., i_{r-1}]
 *   every other output element = pad_value
 * Shapes are the physical (memory) shapes, outermost axis first. Not in place.
 */
#include <string.h>

#include "mcu_math.h"
#include "mcu_nn.h"

mcu_status_t mcu_pad_s8(const mcu_pad_params_t *params, const int8_t *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pad_params_t *p = params;
    if (p->rank < 1 || p->rank > MCU_MAX_RANK || p->pad_value < MCU_INT8_MIN ||
        p->pad_value > MCU_INT8_MAX) {
        return MCU_ERR_ARG;
    }
    const int32_t rank = p->rank;
    int32_t out_shape[MCU_MAX_RANK];
    for (int32_t d = 0; d < rank; ++d) {
        if (p->in_shape[d] < 1 || p->pad_before[d] < 0 || p->pad_after[d] < 0) {
            return MCU_ERR_ARG;
        }
        const int64_t extent = (int64_t)p->pad_before[d] + p->in_shape[d] + p->pad_after[d];
        if (extent > INT32_MAX) {
            return MCU_ERR_ARG;
        }
        out_shape[d] = (int32_t)extent;
    }

    /* Row-major strides of the output, in elements. */
    size_t out_stride[MCU_MAX_RANK];
    size_t out_total = 1;
    for (int32_t d = rank - 1; d >= 0; --d) {
        out_stride[d] = out_total;
        out_total *= (size_t)out_shape[d];
    }

    /* 1. The whole output gets the pad value. */
    memset(output, (int)(int8_t)p->pad_value, out_total);

    /* 2. Each innermost input row lands at its shifted position. An odometer walks the outer
     *    indices (axes 0..rank-2) in row-major order; rows of the input are contiguous. */
    const size_t row_len = (size_t)p->in_shape[rank - 1];
    size_t rows = 1;
    for (int32_t d = 0; d < rank - 1; ++d) {
        rows *= (size_t)p->in_shape[d];
    }
    int32_t idx[MCU_MAX_RANK] = {0};
    for (size_t r = 0; r < rows; ++r) {
        size_t out_offset = (size_t)p->pad_before[rank - 1];
        for (int32_t d = 0; d < rank - 1; ++d) {
            out_offset += (size_t)(idx[d] + p->pad_before[d]) * out_stride[d];
        }
        memcpy(output + out_offset, input + r * row_len, row_len);
        for (int32_t d = rank - 2; d >= 0; --d) {
            if (++idx[d] < p->in_shape[d]) {
                break;
            }
            idx[d] = 0;
        }
    }
    return MCU_OK;
}
