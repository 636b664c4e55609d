/*
 * mcu_conv2d_s8_ref.c - the reference of mcu_conv2d_s8: the spec, written for reading, not speed
 * (tests only; not shipped in bundles). NHWC input/output, OHWI filter, bias may be NULL.
 */
#include <stdint.h>

#include "mcu_math.h"
#include "mcu_nn.h"

mcu_status_t mcu_conv2d_s8_ref(const mcu_conv_params_t *params, const int8_t *input,
                               const int8_t *filter, const int32_t *bias, int8_t *output);

mcu_status_t mcu_conv2d_s8_ref(const mcu_conv_params_t *params, const int8_t *input,
                               const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const mcu_dims_t in = params->input;
    const mcu_dims_t f = params->filter;
    const mcu_dims_t out = params->output;
    for (int32_t b = 0; b < in.n; ++b) {
        for (int32_t oy = 0; oy < out.h; ++oy) {
            for (int32_t ox = 0; ox < out.w; ++ox) {
                for (int32_t oc = 0; oc < out.c; ++oc) {
                    /* acc = sum over the taps inside the input of
                     *       (in[b,iy,ix,ic] + input_offset) * w[oc,ky,kx,ic], + bias[oc] */
                    int32_t acc = bias != NULL ? bias[oc] : 0;
                    for (int32_t ky = 0; ky < f.h; ++ky) {
                        const int32_t iy = oy * params->stride_h - params->pad_top +
                                           ky * params->dilation_h;
                        for (int32_t kx = 0; kx < f.w; ++kx) {
                            const int32_t ix = ox * params->stride_w - params->pad_left +
                                               kx * params->dilation_w;
                            if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) {
                                continue; /* padding: the input zero point adds nothing */
                            }
                            for (int32_t ic = 0; ic < in.c; ++ic) {
                                const int32_t x_at = ((b * in.h + iy) * in.w + ix) * in.c + ic;
                                const int32_t w_at = ((oc * f.h + ky) * f.w + kx) * f.c + ic;
                                const int32_t x = (int32_t)input[x_at] + params->q.input_offset;
                                const int32_t w = (int32_t)filter[w_at];
                                acc += x * w;
                            }
                        }
                    }
                    int32_t v = mcu_requantize_mode(acc, params->multiplier[oc], params->shift[oc],
                                                    params->q.rounding);
                    v += params->q.output_offset;
                    output[((b * out.h + oy) * out.w + ox) * out.c + oc] =
                        (int8_t)mcu_clamp_s32(v, params->q.act_min, params->q.act_max);
                }
            }
        }
    }
    return MCU_OK;
}
