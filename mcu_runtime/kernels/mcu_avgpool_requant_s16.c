/*
 * mcu_avgpool_requant_s16.c - int16 average with requantization and one rounding (TFLite MEAN for
 * int16), zero points 0:
 *   acc = sum of in over the valid taps (int32, at most 65535 taps: cannot overflow)
 *   out = clamp(requant(acc, multiplier, shift), pool.act_min, pool.act_max)
 * multiplier/shift encode in_scale / (out_scale * filter_h * filter_w); requant is mcu_math.h's.
 * A window with no valid tap is MCU_ERR_ARG.
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_avgpool_requant_s16(const mcu_avgpool_requant_params_t *params, const int16_t *input,
                                     int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool_params_t *p = &params->pool;
    if (p->input.n < 1 || p->input.h < 1 || p->input.w < 1 || p->input.c < 1 || p->output.n != p->input.n ||
        p->output.h < 1 || p->output.w < 1 || p->output.c != p->input.c || p->filter_h < 1 ||
        p->filter_w < 1 || p->stride_h < 1 || p->stride_w < 1 || p->pad_top < 0 || p->pad_left < 0 ||
        p->filter_h * p->filter_w > 65535 || p->rounding != 0 || params->input_offset != 0 ||
        params->output_offset != 0 || params->shift < -31 || params->shift > 30 ||
        p->act_min < MCU_INT16_MIN || p->act_max > MCU_INT16_MAX || p->act_min > p->act_max) {
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
                    int32_t acc = 0;
                    int32_t count = 0;
                    for (int32_t iy = y0 < 0 ? 0 : y0; iy < y0 + p->filter_h && iy < in_h; ++iy) {
                        for (int32_t ix = x0 < 0 ? 0 : x0; ix < x0 + p->filter_w && ix < in_w; ++ix) {
                            acc += in_batch[((size_t)iy * (size_t)in_w + (size_t)ix) * (size_t)channels + (size_t)ch];
                            ++count;
                        }
                    }
                    if (count == 0) {
                        return MCU_ERR_ARG;
                    }
                    const int32_t out = mcu_requantize(acc, params->multiplier, params->shift);
                    output[out_index++] = (int16_t)mcu_clamp_s32(out, p->act_min, p->act_max);
                }
            }
        }
    }
    return MCU_OK;
}
