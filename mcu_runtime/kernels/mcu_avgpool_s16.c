/*
 * mcu_avgpool_s16.c - TFLite int16 AVERAGE_POOL_2D; input and output share scale (zero point 0).
 *
 *   out = clamp(round(sum over the valid taps / their count), act_min, act_max)
 * int32 sum (at most 65536 taps), rounding half away from zero as TFLite's reference; padding taps
 * are neither summed nor counted; a window with no valid tap is MCU_ERR_ARG.
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_avgpool_s16(const mcu_pool_params_t *params, const int16_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool_params_t *p = params;
    if (p->input.n < 1 || p->input.h < 1 || p->input.w < 1 || p->input.c < 1 || p->output.n != p->input.n ||
        p->output.h < 1 || p->output.w < 1 || p->output.c != p->input.c || p->filter_h < 1 ||
        p->filter_w < 1 || p->stride_h < 1 || p->stride_w < 1 || p->pad_top < 0 || p->pad_left < 0 ||
        p->filter_h * p->filter_w > 65536 || p->rounding != 0 || p->act_min < MCU_INT16_MIN ||
        p->act_max > MCU_INT16_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }
    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    const int32_t channels = p->input.c;
    size_t out_index = 0;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int16_t *in_batch = input + (size_t)n * (size_t)in_h * (size_t)in_w * (size_t)channels;
        for (int32_t out_y = 0; out_y < p->output.h; ++out_y) {
            const int32_t y0 = out_y * p->stride_h - p->pad_top;
            for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
                const int32_t x0 = out_x * p->stride_w - p->pad_left;
                for (int32_t ch = 0; ch < channels; ++ch) {
                    int32_t sum = 0;
                    int32_t count = 0;
                    for (int32_t iy = y0 < 0 ? 0 : y0; iy < y0 + p->filter_h && iy < in_h; ++iy) {
                        for (int32_t ix = x0 < 0 ? 0 : x0; ix < x0 + p->filter_w && ix < in_w; ++ix) {
                            sum += in_batch[((size_t)iy * (size_t)in_w + (size_t)ix) * (size_t)channels + (size_t)ch];
                            ++count;
                        }
                    }
                    if (count == 0) {
                        return MCU_ERR_ARG;
                    }
                    /* round half away from zero: C division truncates toward zero */
                    const int32_t avg = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
                    output[out_index++] = (int16_t)mcu_clamp_s32(avg, p->act_min, p->act_max);
                }
            }
        }
    }
    return MCU_OK;
}
