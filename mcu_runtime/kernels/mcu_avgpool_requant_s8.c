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
 * The window loops are pool_run (mcu_kernel_util.h).
 */
#include "mcu_kernel_util.h"

/** 255 * 2^23 < 2^31: the largest valid window whose int32 sum cannot overflow. */
#define MCU_AVGPOOL_REQUANT_MAX_TAPS ((int64_t)1 << 23)

mcu_status_t mcu_avgpool_requant_s8(const mcu_avgpool_requant_params_t *params,
                                    const int8_t *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool_params_t *p = &params->pool;
    if (!pool_geometry_valid(p) || p->act_min < MCU_INT8_MIN || p->act_max > MCU_INT8_MAX ||
        p->act_min > p->act_max || params->input_offset < -127 || params->input_offset > 128 ||
        params->output_offset < MCU_INT8_MIN || params->output_offset > MCU_INT8_MAX ||
        params->shift < -31 || params->shift > 30) {
        return MCU_ERR_ARG;
    }
    /* The valid part of a window is at most min(filter, input) on each axis. */
    const int32_t rows = p->filter_h < p->input.h ? p->filter_h : p->input.h;
    const int32_t cols = p->filter_w < p->input.w ? p->filter_w : p->input.w;
    if ((int64_t)rows * (int64_t)cols > MCU_AVGPOOL_REQUANT_MAX_TAPS || !pool_windows_nonempty(p)) {
        return MCU_ERR_ARG;
    }
    pool_run(p, params, input, output, 0, MCU_POOL_AVG_REQUANT);
    return MCU_OK;
}
