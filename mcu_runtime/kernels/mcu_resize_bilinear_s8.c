/*
 * mcu_resize_bilinear_s8.c - bilinear resize of an NHWC int8 map (ONNX Resize mode=linear,
 * TFLite RESIZE_BILINEAR), TFLite's ResizeBilinearInteger arithmetic with per-row/column source
 * pairs and 10-bit fractions precomputed at build time:
 *   fy = y_frac[y], fx = x_frac[x]                                   (in [0, 1024])
 *   acc = in[y_lo, x_lo] * (1024 - fy) * (1024 - fx) + in[y_lo, x_hi] * (1024 - fy) * fx
 *       + in[y_hi, x_lo] * fy * (1024 - fx)          + in[y_hi, x_hi] * fy * fx
 *   out = acc / 2^20, rounded half away from zero
 * The four weights are non-negative and sum to 2^20, so |acc| <= 128 * 2^20 = 2^27 fits int32
 * and the result lies in [-128, 127]. Not in place: input == output is rejected.
 */
#include "mcu_math.h"
#include "mcu_nn.h"

#define MCU_BILINEAR_ONE 1024          /* 1.0 with 10 fractional bits */
#define MCU_BILINEAR_HALF (1 << 19)    /* 0.5 of the 20-fractional-bit accumulator */
#define MCU_BILINEAR_OUT_SHIFT 20

static int32_t mcu_resize_bilinear_axis_valid(const int32_t *lo, const int32_t *hi,
                                              const int32_t *frac, int32_t count, int32_t limit)
{
    for (int32_t i = 0; i < count; ++i) {
        if (lo[i] < 0 || lo[i] >= limit || hi[i] < 0 || hi[i] >= limit || frac[i] < 0 ||
            frac[i] > MCU_BILINEAR_ONE) {
            return 0;
        }
    }
    return 1;
}

mcu_status_t mcu_resize_bilinear_s8(const mcu_resize_bilinear_params_t *params,
                                    const int8_t *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL || input == output) {
        return MCU_ERR_ARG;
    }
    const mcu_resize_bilinear_params_t *p = params;
    if (p->y_lo == NULL || p->y_hi == NULL || p->y_frac == NULL || p->x_lo == NULL ||
        p->x_hi == NULL || p->x_frac == NULL || p->input.n < 1 || p->input.h < 1 ||
        p->input.w < 1 || p->input.c < 1 || p->output.n != p->input.n ||
        p->output.c != p->input.c || p->output.h < 1 || p->output.w < 1 ||
        !mcu_resize_bilinear_axis_valid(p->y_lo, p->y_hi, p->y_frac, p->output.h, p->input.h) ||
        !mcu_resize_bilinear_axis_valid(p->x_lo, p->x_hi, p->x_frac, p->output.w, p->input.w)) {
        return MCU_ERR_ARG;
    }

    const int32_t channels = p->input.c;
    const size_t in_row = (size_t)p->input.w * (size_t)channels;
    const size_t in_image = (size_t)p->input.h * in_row;
    int8_t *dst = output;
    for (int32_t n = 0; n < p->input.n; ++n) {
        const int8_t *image = input + (size_t)n * in_image;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t fy = p->y_frac[y];
            const int8_t *row_lo = image + (size_t)p->y_lo[y] * in_row;
            const int8_t *row_hi = image + (size_t)p->y_hi[y] * in_row;
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int32_t fx = p->x_frac[x];
                /* Each weight is at most 2^20. */
                const int32_t w_ll = (MCU_BILINEAR_ONE - fy) * (MCU_BILINEAR_ONE - fx);
                const int32_t w_lh = (MCU_BILINEAR_ONE - fy) * fx;
                const int32_t w_hl = fy * (MCU_BILINEAR_ONE - fx);
                const int32_t w_hh = fy * fx;
                const size_t col_lo = (size_t)p->x_lo[x] * (size_t)channels;
                const size_t col_hi = (size_t)p->x_hi[x] * (size_t)channels;
                for (int32_t c = 0; c < channels; ++c) {
                    const int32_t acc = row_lo[col_lo + (size_t)c] * w_ll +
                                        row_lo[col_hi + (size_t)c] * w_lh +
                                        row_hi[col_lo + (size_t)c] * w_hl +
                                        row_hi[col_hi + (size_t)c] * w_hh;
                    /* Round half away from zero on the magnitude (shifts, no division: the
                     * M0+ has no divide instruction). |acc| <= 2^27, so -acc cannot overflow. */
                    const int32_t value =
                        acc >= 0 ? (acc + MCU_BILINEAR_HALF) >> MCU_BILINEAR_OUT_SHIFT
                                 : -((MCU_BILINEAR_HALF - acc) >> MCU_BILINEAR_OUT_SHIFT);
                    *dst++ = (int8_t)mcu_clamp_s32(value, MCU_INT8_MIN, MCU_INT8_MAX);
                }
            }
        }
    }
    return MCU_OK;
}
