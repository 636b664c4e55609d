/*
 * mcu_resize_nearest_s8.c - nearest-neighbour resize of an NHWC int8 map (ONNX Resize
 * mode=nearest, TFLite RESIZE_NEAREST_NEIGHBOR), source indices precomputed at build time:
 *   out[n, y, x, c] = in[n, y_index[y], x_index[x], c]
 * Each output pixel is one memcpy of C bytes; an output row whose source row equals the previous
 * one's is a copy of the previous output row. Not in place: input == output is rejected.
 */
#include <string.h>

#include "mcu_nn.h"

static int32_t mcu_resize_nearest_table_valid(const int32_t *table, int32_t count, int32_t limit)
{
    for (int32_t i = 0; i < count; ++i) {
        if (table[i] < 0 || table[i] >= limit) {
            return 0;
        }
    }
    return 1;
}

mcu_status_t mcu_resize_nearest_s8(const mcu_resize_params_t *params, const int8_t *input,
                                   int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL || input == output) {
        return MCU_ERR_ARG;
    }
    const mcu_resize_params_t *p = params;
    if (p->y_index == NULL || p->x_index == NULL || p->input.n < 1 || p->input.h < 1 ||
        p->input.w < 1 || p->input.c < 1 || p->output.n != p->input.n ||
        p->output.c != p->input.c || p->output.h < 1 || p->output.w < 1 ||
        !mcu_resize_nearest_table_valid(p->y_index, p->output.h, p->input.h) ||
        !mcu_resize_nearest_table_valid(p->x_index, p->output.w, p->input.w)) {
        return MCU_ERR_ARG;
    }

    const size_t channels = (size_t)p->input.c;
    const size_t in_row = (size_t)p->input.w * channels;
    const size_t in_image = (size_t)p->input.h * in_row;
    const size_t out_row = (size_t)p->output.w * channels;
    int8_t *dst = output;
    for (int32_t n = 0; n < p->input.n; ++n) {
        const int8_t *image = input + (size_t)n * in_image;
        for (int32_t y = 0; y < p->output.h; ++y) {
            if (y > 0 && p->y_index[y] == p->y_index[y - 1]) {
                memcpy(dst, dst - out_row, out_row);
                dst += out_row;
                continue;
            }
            const int8_t *src_row = image + (size_t)p->y_index[y] * in_row;
            for (int32_t x = 0; x < p->output.w; ++x) {
                memcpy(dst, src_row + (size_t)p->x_index[x] * channels, channels);
                dst += channels;
            }
        }
    }
    return MCU_OK;
}
