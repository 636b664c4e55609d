/*
 * mcu_avgpool_s8.c - TFLite int8 AVERAGE_POOL_2D (reference_integer_ops::AveragePool).
 *
 * Input and output share scale and zero point, so no requantization:
 *   sum   = sum of the raw int8 values over the taps inside the input (padding is not counted)
 *   count = number of those taps
 *   out   = clamp(round_half_away(sum / count), act_min, act_max)
 * A window with no valid tap is an error (TFLite Micro fails the same way), detected before any
 * output is written.
 */
#include "mcu_math.h"
#include "mcu_nn.h"

static int32_t mcu_avgpool_max(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

static int32_t mcu_avgpool_min(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

/* acc / count rounded half away from zero (C division truncates toward zero) */
#if defined(__GNUC__)
#define MCU_AVGPOOL_INLINE static inline __attribute__((always_inline))
#else
#define MCU_AVGPOOL_INLINE static inline
#endif

/* The pooling loops; even (a constant where inlined): round ties to even, else away from zero. */
MCU_AVGPOOL_INLINE void mcu_avgpool_loops(const mcu_pool_params_t *p, const int8_t *input,
                                          int8_t *output, int even)
{
    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    const int32_t channels = p->input.c;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_batch = input + (size_t)n * (size_t)in_h * (size_t)in_w * (size_t)channels;
        for (int32_t out_y = 0; out_y < p->output.h; ++out_y) {
            const int32_t in_y_origin = out_y * p->stride_h - p->pad_top;
            const int32_t ky_start = mcu_avgpool_max(0, -in_y_origin);
            const int32_t ky_end = mcu_avgpool_min(p->filter_h, in_h - in_y_origin);
            for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
                const int32_t in_x_origin = out_x * p->stride_w - p->pad_left;
                const int32_t kx_start = mcu_avgpool_max(0, -in_x_origin);
                const int32_t kx_end = mcu_avgpool_min(p->filter_w, in_w - in_x_origin);
                const int32_t count = (ky_end - ky_start) * (kx_end - kx_start);
                for (int32_t ch = 0; ch < channels; ++ch) {
                    int32_t acc = 0;
                    for (int32_t ky = ky_start; ky < ky_end; ++ky) {
                        const int32_t in_y = in_y_origin + ky;
                        for (int32_t kx = kx_start; kx < kx_end; ++kx) {
                            const int32_t in_x = in_x_origin + kx;
                            acc += in_batch[((size_t)in_y * (size_t)in_w + (size_t)in_x) *
                                                (size_t)channels +
                                            (size_t)ch];
                        }
                    }
                    const int32_t avg = even ? mcu_div_round_even(acc, count)
                                             : mcu_div_round_away(acc, count);
                    const int32_t out = mcu_clamp_s32(avg, p->act_min, p->act_max);
                    output[(((size_t)n * (size_t)p->output.h + (size_t)out_y) *
                                (size_t)p->output.w +
                            (size_t)out_x) *
                               (size_t)channels +
                           (size_t)ch] = (int8_t)out;
                }
            }
        }
    }
}

mcu_status_t mcu_avgpool_s8(const mcu_pool_params_t *params, const int8_t *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool_params_t *p = params;
    if (p->input.n < 1 || p->input.h < 1 || p->input.w < 1 || p->input.c < 1 ||
        p->output.n != p->input.n || p->output.h < 1 || p->output.w < 1 ||
        p->output.c != p->input.c || p->filter_h < 1 || p->filter_w < 1 || p->stride_h < 1 ||
        p->stride_w < 1 || p->pad_top < 0 || p->pad_left < 0 || p->act_min < MCU_INT8_MIN ||
        p->act_max > MCU_INT8_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }

    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    /* Every window must hold at least one valid tap (TFLite Micro fails otherwise). Checked
     * before anything is written. */
    for (int32_t out_y = 0; out_y < p->output.h; ++out_y) {
        const int32_t in_y_origin = out_y * p->stride_h - p->pad_top;
        if (in_y_origin >= in_h || in_y_origin + p->filter_h <= 0) {
            return MCU_ERR_ARG;
        }
    }
    for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
        const int32_t in_x_origin = out_x * p->stride_w - p->pad_left;
        if (in_x_origin >= in_w || in_x_origin + p->filter_w <= 0) {
            return MCU_ERR_ARG;
        }
    }
    if (p->rounding != MCU_ROUND_TFLITE) { /* onnxruntime numerics: ties to even */
        mcu_avgpool_loops(p, input, output, 1);
    } else {
        mcu_avgpool_loops(p, input, output, 0);
    }
    return MCU_OK;
}
