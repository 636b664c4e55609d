/*
 * mcu_transpose_conv_s4.c - int8 transposed 2-D convolution with 4-bit weights (ONNX
 * ConvTranspose group 1), NHWC input/output; filter per (oc, ky, kx): its C_in weights two a
 * byte, input channel 2j in byte j's low nibble, 2j + 1 in its high nibble (mcu_nn_s4.h).
 *
 * mcu_transpose_conv_s8's gather, the same terms: output row y receives filter row ky from input
 * row iy exactly when y + pad_top - ky * dilation_h = iy * stride_h, 0 <= iy < H_in (likewise the
 * columns); one int32 sum per output element, then mcu_output_stage. No scratch.
 *
 * The sum over C_in of one tap (dot) unpacks in registers: on MVE 32 weights a step (16 bytes: the
 * low nibbles by VSHL/VSHR #4, the high by VSHR #4; the inputs split into even and odd channels by
 * VLD2), two VMLADAVA and the weights' sum for the input offset; on the DSP extension four a step
 * (two bytes spread into two int16 lanes, each nibble sign-extended as (n ^ 8) - 8 by SSUB16, the
 * inputs plus offset by SXTAB16), two SMLAD; the C_in tail, and every other target, in C.
 */
#include <stdint.h>

#include "mcu_kernel_util.h"
#include "mcu_nn.h"
#include "mcu_nn_s4.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>
#elif MCU_ISA_NATIVE == MCU_ISA_DSP
#include <arm_acle.h>
#endif

/* The input index a tap reads for output index `out`, or -1 (mcu_transpose_conv_s8.c). */
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

/* sum_ic (x[ic] + offset) * w[ic], C_in = n packed weights */
static int32_t dot(const int8_t *x, const uint8_t *w, int32_t n, int32_t offset)
{
    int32_t acc = 0;
    int32_t ic = 0;
#if MCU_ISA_NATIVE == MCU_ISA_MVE
    int32_t wsum = 0;
    for (; ic + 32 <= n; ic += 32, w += 16) {
        const int8x16x2_t xv = vld2q_s8(x + ic); /* channels 2j, 2j + 1 */
        const int8x16_t wb = vreinterpretq_s8_u8(vld1q_u8(w));
        const int8x16_t lo = vshrq_n_s8(vshlq_n_s8(wb, 4), 4);
        const int8x16_t hi = vshrq_n_s8(wb, 4);
        acc = vmladavaq_s8(acc, xv.val[0], lo);
        acc = vmladavaq_s8(acc, xv.val[1], hi);
        wsum = vaddvaq_s8(wsum, lo);
        wsum = vaddvaq_s8(wsum, hi);
    }
    acc += offset * wsum;
#elif MCU_ISA_NATIVE == MCU_ISA_DSP
    const int32_t off2 = (int32_t)(((uint32_t)offset & 0xFFFFu) | ((uint32_t)offset << 16));
    const int32_t eight = 0x00080008;
    for (; ic + 4 <= n; ic += 4, w += 2) {
        const uint32_t xw = read_s8x4(x + ic);
        const int32_t x02 = __sxtab16(off2, (int32_t)xw);              /* x0, x2 plus offset */
        const int32_t x13 = sxtab16_ror8(off2, xw);                    /* x1, x3 */
        const uint32_t b = (uint32_t)w[0] | ((uint32_t)w[1] << 16);     /* bytes in int16 lanes */
        const int32_t lo = __ssub16((int32_t)((b & 0x000F000Fu) ^ 0x00080008u), eight);
        const int32_t hi = __ssub16((int32_t)(((b >> 4) & 0x000F000Fu) ^ 0x00080008u), eight);
        acc = __smlad(x02, lo, acc);
        acc = __smlad(x13, hi, acc);
    }
#endif
    for (; ic + 2 <= n; ic += 2, ++w) {
        const uint32_t b = *w;
        acc += (x[ic] + offset) * ((int32_t)(b << 28) >> 28) +
               (x[ic + 1] + offset) * ((int32_t)(b << 24) >> 28);
    }
    if (ic < n) {
        acc += (x[ic] + offset) * ((int32_t)((uint32_t)*w << 28) >> 28);
    }
    return acc;
}

mcu_status_t mcu_transpose_conv_s4(const mcu_transpose_conv_params_t *params, const int8_t *input,
                                   const uint8_t *filter, const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL ||
        !params_valid(params)) {
        return MCU_ERR_ARG;
    }
    const mcu_transpose_conv_params_t *p = params;
    const mcu_dims_t in = p->input;
    const mcu_dims_t f = p->filter;
    const mcu_dims_t out = p->output;
    const int32_t row = (f.c + 1) / 2;
    int8_t *dst = output;
    for (int32_t b = 0; b < in.n; ++b) {
        const int8_t *image = input + (size_t)b * (size_t)(in.h * in.w * in.c);
        for (int32_t oy = 0; oy < out.h; ++oy) {
            for (int32_t ox = 0; ox < out.w; ++ox) {
                for (int32_t oc = 0; oc < out.c; ++oc) {
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
                            const uint8_t *w = filter + ((oc * f.h + ky) * f.w + kx) * row;
                            acc += dot(x, w, in.c, p->q.input_offset);
                        }
                    }
                    *dst++ = mcu_output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q);
                }
            }
        }
    }
    return MCU_OK;
}
