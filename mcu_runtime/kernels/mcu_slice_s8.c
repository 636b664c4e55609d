/*
 * mcu_slice_s8.c - N-D strided slice of an int8 tensor (ONNX Slice after clamping, ONNX Split):
 *   out[i_0, ..., i_{r-1}] = in[begin[0] + i_0 * step[0], ..., begin[r-1] + i_{r-1} * step[r-1]]
 * Shapes are the physical (memory) shapes, outermost axis first; steps may be negative.
 *
 * The trailing axes copied whole (begin 0, step 1, out_shape == in_shape) form one contiguous
 * block of `block` bytes. Axis k, the innermost axis that is not copied whole, is walked block by
 * block (one memcpy of out_shape[k] * block bytes when step[k] == 1); an odometer over the axes
 * before k keeps the input offset up to date. Not in place: input == output is rejected.
 */
#include <string.h>

#include "mcu_nn.h"

mcu_status_t mcu_slice_s8(const mcu_slice_params_t *params, const int8_t *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL || input == output) {
        return MCU_ERR_ARG;
    }
    const mcu_slice_params_t *p = params;
    if (p->rank < 1 || p->rank > MCU_MAX_RANK) {
        return MCU_ERR_ARG;
    }
    const int32_t rank = p->rank;
    int64_t in_total = 1;
    for (int32_t d = 0; d < rank; ++d) {
        const int32_t size = p->in_shape[d];
        const int32_t count = p->out_shape[d];
        const int32_t first = p->begin[d];
        const int32_t step = p->step[d];
        if (size < 1 || count < 1 || step == 0 || first < 0 || first >= size) {
            return MCU_ERR_ARG;
        }
        /* |(count - 1) * step| < 2^62: no overflow in int64. */
        const int64_t last = (int64_t)first + (int64_t)(count - 1) * step;
        if (last < 0 || last >= size) {
            return MCU_ERR_ARG;
        }
        in_total *= size;
        if (in_total > INT32_MAX) {
            return MCU_ERR_ARG;
        }
    }

    /* Row-major strides of the input, in elements. Every offset below lies in [0, in_total). */
    int32_t in_stride[MCU_MAX_RANK];
    int32_t stride = 1;
    for (int32_t d = rank - 1; d >= 0; --d) {
        in_stride[d] = stride;
        stride *= p->in_shape[d];
    }
    /* Axis k: the innermost axis not copied whole; the axes after it form one block. */
    int32_t k = rank - 1;
    while (k > 0 && p->begin[k] == 0 && p->step[k] == 1 && p->out_shape[k] == p->in_shape[k]) {
        --k;
    }
    const int32_t block = in_stride[k];
    const int32_t count_k = p->out_shape[k];
    /* Visited indices are distinct and in range, so |step| * (count - 1) < in_shape: the deltas
     * below (only applied when count >= 2) stay within the input size. */
    const int32_t delta_k = count_k > 1 ? p->step[k] * block : 0;

    int32_t in_offset = 0;
    int32_t rows = 1;
    for (int32_t d = 0; d < rank; ++d) {
        in_offset += p->begin[d] * in_stride[d];
        if (d < k) {
            rows *= p->out_shape[d];
        }
    }

    int32_t idx[MCU_MAX_RANK] = {0};
    size_t out_offset = 0;
    for (int32_t r = 0; r < rows; ++r) {
        if (p->step[k] == 1) {
            const size_t bytes = (size_t)count_k * (size_t)block;
            memcpy(output + out_offset, input + in_offset, bytes);
            out_offset += bytes;
        } else if (block == 1) {
            int32_t src = in_offset;
            for (int32_t i = 0; i < count_k; ++i) {
                output[out_offset++] = input[src];
                src += delta_k;
            }
        } else {
            int32_t src = in_offset;
            for (int32_t i = 0; i < count_k; ++i) {
                memcpy(output + out_offset, input + src, (size_t)block);
                out_offset += (size_t)block;
                src += delta_k;
            }
        }
        /* Odometer over the axes before k. */
        for (int32_t d = k - 1; d >= 0; --d) {
            const int32_t delta = p->out_shape[d] > 1 ? p->step[d] * in_stride[d] : 0;
            if (++idx[d] < p->out_shape[d]) {
                in_offset += delta;
                break;
            }
            idx[d] = 0;
            in_offset -= (p->out_shape[d] - 1) * delta;
        }
    }
    return MCU_OK;
}
