/*
 * mcu_conv2d_s8.c - int8 2-D convolution (group == 1), NHWC input/output, OHWI filter.
 *
 * Reference kernel with the semantics of TFLite Micro's per-channel int8 convolution and
 * CMSIS-NN's arm_convolve_s8: one int32 accumulator per output element, taps that fall outside
 * the input are skipped (the same as padding with the input zero point), then requantize with the
 * output channel's multiplier and shift, add the output offset and clamp.
 */
#include "mcu_math.h"
#include "mcu_nn.h"

static int dims_valid(const mcu_dims_t *d)
{
    return d->n > 0 && d->h > 0 && d->w > 0 && d->c > 0;
}

static int quant_io_valid(const mcu_quant_io_t *q)
{
    return q->input_offset >= -MCU_INT8_MAX && q->input_offset <= -MCU_INT8_MIN &&
           q->output_offset >= MCU_INT8_MIN && q->output_offset <= MCU_INT8_MAX &&
           q->act_min >= MCU_INT8_MIN && q->act_max <= MCU_INT8_MAX && q->act_min <= q->act_max;
}

/* Every shift must keep mcu_requantize's shifts in range: shift in [-31, 30]. */
static int shifts_valid(const int32_t *shift, int32_t count)
{
    for (int32_t i = 0; i < count; ++i) {
        if (shift[i] < -31 || shift[i] > 30) {
            return 0;
        }
    }
    return 1;
}

mcu_status_t mcu_conv2d_s8(const mcu_conv_params_t *params, const int8_t *input,
                           const int8_t *filter, const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_dims_t *const in_dims = &params->input;
    const mcu_dims_t *const f_dims = &params->filter;
    const mcu_dims_t *const out_dims = &params->output;
    if (!dims_valid(in_dims) || !dims_valid(f_dims) || !dims_valid(out_dims) ||
        f_dims->c != in_dims->c || f_dims->n != out_dims->c || out_dims->n != in_dims->n ||
        params->stride_h < 1 || params->stride_w < 1 || params->dilation_h < 1 ||
        params->dilation_w < 1 || params->pad_top < 0 || params->pad_left < 0 ||
        !quant_io_valid(&params->q) || !shifts_valid(params->shift, out_dims->c)) {
        return MCU_ERR_ARG;
    }

    const int32_t batches = in_dims->n;
    const int32_t in_h = in_dims->h;
    const int32_t in_w = in_dims->w;
    const int32_t in_c = in_dims->c;
    const int32_t k_h = f_dims->h;
    const int32_t k_w = f_dims->w;
    const int32_t out_h = out_dims->h;
    const int32_t out_w = out_dims->w;
    const int32_t out_c = out_dims->c;
    const int32_t stride_h = params->stride_h;
    const int32_t stride_w = params->stride_w;
    const int32_t dilation_h = params->dilation_h;
    const int32_t dilation_w = params->dilation_w;
    const int32_t input_offset = params->q.input_offset;
    const int32_t output_offset = params->q.output_offset;
    const int32_t act_min = params->q.act_min;
    const int32_t act_max = params->q.act_max;

    for (int32_t b = 0; b < batches; ++b) {
        for (int32_t out_y = 0; out_y < out_h; ++out_y) {
            const int32_t in_y_origin = out_y * stride_h - params->pad_top;
            for (int32_t out_x = 0; out_x < out_w; ++out_x) {
                const int32_t in_x_origin = out_x * stride_w - params->pad_left;
                for (int32_t oc = 0; oc < out_c; ++oc) {
                    /* acc = sum_{ky,kx,ic} (in[b,iy,ix,ic] + input_offset) * w[oc,ky,kx,ic] + bias[oc]
                     * with iy = in_y_origin + ky * dilation_h, ix = in_x_origin + kx * dilation_w,
                     * over the taps inside the input only. */
                    int32_t acc = 0;
                    for (int32_t ky = 0; ky < k_h; ++ky) {
                        const int32_t in_y = in_y_origin + ky * dilation_h;
                        if (in_y < 0 || in_y >= in_h) {
                            continue;
                        }
                        for (int32_t kx = 0; kx < k_w; ++kx) {
                            const int32_t in_x = in_x_origin + kx * dilation_w;
                            if (in_x < 0 || in_x >= in_w) {
                                continue;
                            }
                            const int8_t *const in_px = input + ((b * in_h + in_y) * in_w + in_x) * in_c;
                            const int8_t *const w_px = filter + ((oc * k_h + ky) * k_w + kx) * in_c;
                            for (int32_t ic = 0; ic < in_c; ++ic) {
                                const int32_t in_val = (int32_t)in_px[ic] + input_offset;
                                const int32_t w_val = (int32_t)w_px[ic];
                                acc += in_val * w_val;
                            }
                        }
                    }
                    if (bias != NULL) {
                        acc += bias[oc];
                    }
                    acc = mcu_requantize(acc, params->multiplier[oc], params->shift[oc]);
                    acc += output_offset;
                    acc = mcu_clamp_s32(acc, act_min, act_max);
                    output[((b * out_h + out_y) * out_w + out_x) * out_c + oc] = (int8_t)acc;
                }
            }
        }
    }
    return MCU_OK;
}
