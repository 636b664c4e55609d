/*
 * mcu_depthwise_conv2d_s8_ref.c - the reference of mcu_depthwise_conv2d_s8, one output element at a
 * time, written to read as the spec (TFLite Micro's reference_integer_ops::DepthwiseConvPerChannel
 * arithmetic). For the tests only: bundles do not ship it. Every path of mcu_depthwise_conv2d_s8
 * equals it bit for bit.
 */
#include <stdint.h>

#include "mcu_depthwise_conv2d_s8_internal.h"
#include "mcu_math.h"

mcu_status_t mcu_depthwise_conv2d_s8_ref(const mcu_depthwise_conv_params_t *params,
                                         const int8_t *input, const int8_t *filter,
                                         const int32_t *bias, int8_t *output)
{
    const mcu_depthwise_conv_params_t *const p = params;
    if (p == NULL || input == NULL || filter == NULL || output == NULL ||
        p->depth_multiplier < 1 || p->output.c != p->input.c * p->depth_multiplier) {
        return MCU_ERR_ARG;
    }
    for (int32_t b = 0; b < p->output.n; ++b) {
        for (int32_t y = 0; y < p->output.h; ++y) {
            for (int32_t x = 0; x < p->output.w; ++x) {
                for (int32_t oc = 0; oc < p->output.c; ++oc) {
                    const int32_t ic = oc / p->depth_multiplier;
                    int32_t acc = bias != NULL ? bias[oc] : 0;
                    for (int32_t ky = 0; ky < p->filter.h; ++ky) {
                        for (int32_t kx = 0; kx < p->filter.w; ++kx) {
                            const int32_t iy = y * p->stride_h - p->pad_top + ky * p->dilation_h;
                            const int32_t ix = x * p->stride_w - p->pad_left + kx * p->dilation_w;
                            if (iy < 0 || iy >= p->input.h || ix < 0 || ix >= p->input.w) {
                                continue; /* padding: the input zero point, adds nothing */
                            }
                            const int32_t in =
                                input[((b * p->input.h + iy) * p->input.w + ix) * p->input.c + ic];
                            const int32_t w = filter[(ky * p->filter.w + kx) * p->output.c + oc];
                            acc += (in + p->q.input_offset) * w;
                        }
                    }
                    int32_t out = mcu_requantize_mode(acc, p->multiplier[oc], p->shift[oc], p->q.rounding);
                    out += p->q.output_offset;
                    out = mcu_clamp_s32(out, p->q.act_min, p->q.act_max);
                    output[((b * p->output.h + y) * p->output.w + x) * p->output.c + oc] =
                        (int8_t)out;
                }
            }
        }
    }
    return MCU_OK;
}
