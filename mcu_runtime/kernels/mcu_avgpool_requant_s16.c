/*
 * mcu_avgpool_requant_s16.c - int16 average with requantization and one rounding (TFLite MEAN for
 * int16), zero points 0:
 *   acc = sum of in over the valid taps (int32, at most 65535 taps: cannot overflow)
 *   out = clamp(requant(acc, multiplier, shift), pool.act_min, pool.act_max)
 * multiplier/shift encode in_scale / (out_scale * filter_h * filter_w); requant is mcu_math.h's.
 * A window with no valid tap is MCU_ERR_ARG (before any output is written). The window loops are
 * pool_run (mcu_kernel_util.h).
 */
#include "mcu_kernel_util.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_avgpool_requant_s16(const mcu_avgpool_requant_params_t *params, const int16_t *input,
                                     int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool_params_t *p = &params->pool;
    if (!pool_geometry_valid(p) || p->filter_h * p->filter_w > 65535 || p->rounding != 0 ||
        params->input_offset != 0 || params->output_offset != 0 || params->shift < -31 ||
        params->shift > 30 || p->act_min < MCU_INT16_MIN || p->act_max > MCU_INT16_MAX ||
        p->act_min > p->act_max || !pool_windows_nonempty(p)) {
        return MCU_ERR_ARG;
    }
    pool_run(p, params, input, output, 1, MCU_POOL_AVG_REQUANT);
    return MCU_OK;
}
