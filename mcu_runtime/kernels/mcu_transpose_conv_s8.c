/*
 * mcu_transpose_conv_s8.c - int8 transposed 2-D convolution (ONNX ConvTranspose with group 1,
 * TFLite TRANSPOSE_CONV), NHWC input/output, OHWI filter [C_out, KH, KW, C_in], bias may be NULL.
 *
 * The operation scatters every input position's window into the output; this kernel gathers the
 * same terms per output element instead, so it keeps one int32 accumulator and needs no scratch:
 * output row y receives filter row ky from input row iy exactly when
 *   y + pad_top - ky * dilation_h = iy * stride_h,  0 <= iy < H_in
 * (likewise the columns). Then requantize with the output channel's multiplier and shift, add the
 * output offset and clamp, as the convolution kernels do.
 */
#include <stdint.h>

#include "mcu_kernel_util.h"
#include "mcu_nn.h"

/* The input index a tap of the window reads for output index `out`, or -1: out + pad - k * dilation
 * must be a multiple of the stride landing inside [0, size). */
static int32_t source_index(int32_t out, int32_t pad, int32_t k, int32_t dilation, int32_t stride,
                            int32_t size)
{
    const int32_t t = out + pad - k * dilation;
    if (t < 0 || t % stride != 0) {
        return -1;
    }
    const int32_t i = t / stride;
    return i < size ? i : -1;
}

static int params_valid(const mcu_transpose_conv_params_t *p)
{
    return dims_valid(&p->input) && dims_valid(&p->filter) && dims_valid(&p->output) &&
           p->filter.c == p->input.c && p->filter.n == p->output.c && p->output.n == p->input.n &&
           p->stride_h >= 1 && p->stride_w >= 1 && p->dilation_h >= 1 && p->dilation_w >= 1 &&
           quant_io_valid(&p->q) && p->multiplier != NULL && p->shift != NULL &&
           shifts_valid(p->shift, p->output.c);
}

mcu_status_t mcu_transpose_conv_s8(const mcu_transpose_conv_params_t *params, const int8_t *input,
                                   const int8_t *filter, const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL ||
        !params_valid(params)) {
        return MCU_ERR_ARG;
    }
    const mcu_transpose_conv_params_t *p = params;
    const mcu_dims_t in = p->input;
    const mcu_dims_t f = p->filter;
    const mcu_dims_t out = p->output;
    const int32_t input_offset = p->q.input_offset;
    int8_t *dst = output;
    for (int32_t b = 0; b < in.n; ++b) {
        const int8_t *image = input + (size_t)b * (size_t)(in.h * in.w * in.c);
        for (int32_t oy = 0; oy < out.h; ++oy) {
            for (int32_t ox = 0; ox < out.w; ++ox) {
                for (int32_t oc = 0; oc < out.c; ++oc) {
                    /* acc = bias[oc] + sum over the taps landing here of
                     *       (in[iy,ix,ic] + input_offset) * w[oc,ky,kx,ic] */
                    int32_t acc = bias != NULL ? bias[oc] : 0;
                    for (int32_t ky = 0; ky < f.h; ++ky) {
                        const int32_t iy =
                            source_index(oy, p->pad_top, ky, p->dilation_h, p->stride_h, in.h);
                        if (iy < 0) {
                            continue;
                        }
                        for (int32_t kx = 0; kx < f.w; ++kx) {
                            const int32_t ix =
                                source_index(ox, p->pad_left, kx, p->dilation_w, p->stride_w, in.w);
                            if (ix < 0) {
                                continue;
                            }
                            const int8_t *x = image + (iy * in.w + ix) * in.c;
                            const int8_t *w = filter + ((oc * f.h + ky) * f.w + kx) * f.c;
                            for (int32_t ic = 0; ic < in.c; ++ic) {
                                acc += ((int32_t)x[ic] + input_offset) * (int32_t)w[ic];
                            }
                        }
                    }
                    *dst++ = mcu_output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q);
                }
            }
        }
    }
    return MCU_OK;
}
