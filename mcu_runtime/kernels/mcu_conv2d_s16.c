/*
 * mcu_conv2d_s16.c - TFLite int16x8 convolution (reference_integer_ops ConvPerChannel, int16 input).
 *
 *   out[y,x,oc] = clamp(requantize_s64(sum_{ky,kx,ic} in[iy,ix,ic] * w[oc,ky,kx,ic] + bias[oc],
 *                 multiplier[oc], shift[oc]), act_min, act_max)
 * with iy = y * stride_h - pad_top + ky * dilation_h (likewise ix); taps outside the input add
 * nothing. One int64 accumulator per output; zero points are 0 (int16 activations are symmetric).
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_conv2d_s16(const mcu_conv_params_t *params, const int16_t *input, const int8_t *filter,
                            const int64_t *bias, int16_t *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_conv_params_t *p = params;
    if (p->filter.c != p->input.c || p->filter.n != p->output.c) {
        return MCU_ERR_ARG;
    }
    return mcu_conv_s16_run(p, 0, input, filter, bias, output);
}
