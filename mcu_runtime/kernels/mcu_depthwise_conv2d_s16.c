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
    if (p->depth_multiplier < 1 || p->filter.n != 1 || p->filter.c != p->output.c ||
        p->output.c != p->input.c * p->depth_multiplier) {
        return MCU_ERR_ARG;
    }
    /* the geometry and output stage as a convolution's; the taps are one channel deep */
    const mcu_conv_params_t conv = {.input = p->input,
                                    .filter = p->filter,
                                    .output = p->output,
                                    .stride_h = p->stride_h,
                                    .stride_w = p->stride_w,
                                    .dilation_h = p->dilation_h,
                                    .dilation_w = p->dilation_w,
                                    .pad_top = p->pad_top,
                                    .pad_left = p->pad_left,
                                    .q = p->q,
                                    .multiplier = p->multiplier,
                                    .shift = p->shift};
    return mcu_conv_s16_run(&conv, p->depth_multiplier, input, filter, bias, output);
}
