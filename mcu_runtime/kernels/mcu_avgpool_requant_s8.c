/*
 * mcu_avgpool_requant_s8.c - int8 average pool with requantization and one rounding (the TFLite
 * MEAN scheme), for ONNX AveragePool count_include_pad=1, GlobalAveragePool and ReduceMean:
 *   acc = sum of (in + input_offset) over the taps inside the input (padding taps are skipped,
 *         which is padding with the input zero point)
 *   out = clamp(requant(acc, multiplier, shift) + output_offset, pool.act_min, pool.act_max)
 * The divisor is the fixed filter_h * filter_w, folded by the caller into multiplier/shift
 * (in_scale / (out_scale * filter_h * filter_w)). A window with no valid tap is an error (as in
 * mcu_avgpool_s8), detected before any output is written. The int32 accumulator cannot overflow:
 * every term is in [-255, 255] and a window holds at most MCU_AVGPOOL_REQUANT_MAX_TAPS valid taps.
 */
#include "mcu_math.h"
#include "mcu_nn.h"

/** 255 * 2^23 < 2^31: the largest valid window whose int32 sum cannot overflow. */
#define MCU_AVGPOOL_REQUANT_MAX_TAPS ((int64_t)1 << 23)

static int32_t mcu_avgpool_requant_max(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

static int32_t mcu_avgpool_requant_min(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

mcu_status_t mcu_avgpool_requant_s8(const mcu_avgpool_requant_params_t *params,
                                    const int8_t *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool_params_t *p = &params->pool;
    if (p->input.n < 1 || p->input.h < 1 || p->input.w < 1 || p->input.c < 1 ||
        p->output.n != p->input.n || p->output.h < 1 || p->output.w < 1 ||
        p->output.c != p->input.c || p->filter_h < 1 || p->filter_w < 1 || p->stride_h < 1 ||
        p->stride_w < 1 || p->pad_top < 0 || p->pad_left < 0 || p->act_min < MCU_INT8_MIN ||
        p->act_max > MCU_INT8_MAX || p->act_min > p->act_max || params->input_offset < -127 ||
        params->input_offset > 128 || params->output_offset < MCU_INT8_MIN ||
        params->output_offset > MCU_INT8_MAX || params->shift < -31 || params->shift > 30) {
        return MCU_ERR_ARG;
    }

    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    const int32_t channels = p->input.c;
    /* The valid part of a window is at most min(filter, input) on each axis. */
    if ((int64_t)mcu_avgpool_requant_min(p->filter_h, in_h) *
            (int64_t)mcu_avgpool_requant_min(p->filter_w, in_w) >
        MCU_AVGPOOL_REQUANT_MAX_TAPS) {
        return MCU_ERR_ARG;
    }
    /* Every window must hold at least one valid tap. Checked before anything is written. */
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
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int8_t *in_batch = input + (size_t)n * (size_t)in_h * (size_t)in_w * (size_t)channels;
        for (int32_t out_y = 0; out_y < p->output.h; ++out_y) {
            const int32_t in_y_origin = out_y * p->stride_h - p->pad_top;
            const int32_t ky_start = mcu_avgpool_requant_max(0, -in_y_origin);
            const int32_t ky_end = mcu_avgpool_requant_min(p->filter_h, in_h - in_y_origin);
            for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
                const int32_t in_x_origin = out_x * p->stride_w - p->pad_left;
                const int32_t kx_start = mcu_avgpool_requant_max(0, -in_x_origin);
                const int32_t kx_end = mcu_avgpool_requant_min(p->filter_w, in_w - in_x_origin);
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
                    /* sum(in + offset) = sum(in) + count * offset: one multiply per output. */
                    acc += count * params->input_offset;
                    /* A large left shift can bring the requantized value near INT32_MAX;
                     * pre-clamping it to [-256, 256] keeps the offset add from overflowing and
                     * changes no output (the offset is in [-128, 127], the clamp in int8). */
                    const int32_t scaled = mcu_clamp_s32(
                        mcu_requantize_mode(acc, params->multiplier, params->shift, p->rounding),
                        -256, 256);
                    const int32_t raw_out = scaled + params->output_offset;
                    const int32_t out = mcu_clamp_s32(raw_out, p->act_min, p->act_max);
                    output[(((size_t)n * (size_t)p->output.h + (size_t)out_y) *
                                (size_t)p->output.w +
                            (size_t)out_x) *
                               (size_t)channels +
                           (size_t)ch] = (int8_t)out;
                }
            }
        }
    }
    return MCU_OK;
}
