/*
 * mcu_depthwise_conv2d_s16.c - TFLite int16x8 depthwise convolution (reference_integer_ops
 * DepthwiseConvPerChannel, int16 input).
 *
 *   out[y,x,oc] = clamp(requantize_s64(sum_{ky,kx} in[iy,ix,oc / depth_multiplier] * w[0,ky,kx,oc]
 *                 + bias[oc], multiplier[oc], shift[oc]), act_min, act_max)
 * Taps and padding as mcu_conv2d_s16; one int64 accumulator per output; zero points are 0.
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_depthwise_conv2d_s16(const mcu_depthwise_conv_params_t *params, const int16_t *input,
                                      const int8_t *filter, const int64_t *bias, int16_t *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_depthwise_conv_params_t *p = params;
    if (p->input.n < 1 || p->input.h < 1 || p->input.w < 1 || p->input.c < 1 || p->depth_multiplier < 1 ||
        p->filter.n != 1 || p->filter.c != p->output.c || p->output.c != p->input.c * p->depth_multiplier ||
        p->output.n != p->input.n || p->output.h < 1 || p->output.w < 1 || p->filter.h < 1 ||
        p->filter.w < 1 || p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1 ||
        p->q.input_offset != 0 || p->q.output_offset != 0 || p->q.act_min < MCU_INT16_MIN ||
        p->q.act_max > MCU_INT16_MAX || p->q.act_min > p->q.act_max) {
        return MCU_ERR_ARG;
    }
    for (int32_t oc = 0; oc < p->output.c; ++oc) {
        if (p->multiplier[oc] < 0 || p->shift[oc] < MCU_S16_SHIFT_MIN || p->shift[oc] > MCU_S16_SHIFT_MAX) {
            return MCU_ERR_ARG;
        }
    }
    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    const int32_t in_c = p->input.c;
    const int32_t out_c = p->output.c;
    size_t out_index = 0;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int16_t *in_batch = input + (size_t)n * (size_t)in_h * (size_t)in_w * (size_t)in_c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t y_origin = y * p->stride_h - p->pad_top;
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int32_t x_origin = x * p->stride_w - p->pad_left;
                for (int32_t oc = 0; oc < out_c; ++oc) {
                    const int32_t ic = oc / p->depth_multiplier;
                    int64_t acc = bias != NULL ? bias[oc] : 0;
                    for (int32_t ky = 0; ky < p->filter.h; ++ky) {
                        const int32_t iy = y_origin + ky * p->dilation_h;
                        if (iy < 0 || iy >= in_h) {
                            continue;
                        }
                        for (int32_t kx = 0; kx < p->filter.w; ++kx) {
                            const int32_t ix = x_origin + kx * p->dilation_w;
                            if (ix < 0 || ix >= in_w) {
                                continue;
                            }
                            const int16_t v = in_batch[((size_t)iy * (size_t)in_w + (size_t)ix) * (size_t)in_c + (size_t)ic];
                            const int8_t w = filter[((size_t)ky * (size_t)p->filter.w + (size_t)kx) * (size_t)out_c + (size_t)oc];
                            acc += (int64_t)v * (int64_t)w;
                        }
                    }
                    const int32_t out = mcu_requantize_s64(acc, p->multiplier[oc], p->shift[oc]);
                    output[out_index++] = (int16_t)mcu_clamp_s32(out, p->q.act_min, p->q.act_max);
                }
            }
        }
    }
    return MCU_OK;
}
