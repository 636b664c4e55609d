/*
 * mcu_avgpool_s16.c - TFLite int16 AVERAGE_POOL_2D; input and output share scale (zero point 0).
 *
 *   out = clamp(round(sum over the valid taps / their count), act_min, act_max)
 * int32 sum (at most 65536 taps), rounding half away from zero as TFLite's reference; padding taps
 * are neither summed nor counted; a window with no valid tap is MCU_ERR_ARG (before any output is
 * written). The window loops are pool_run (mcu_kernel_util.h).
 */
#include "mcu_kernel_util.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_avgpool_s16(const mcu_pool_params_t *params, const int16_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool_params_t *p = params;
    if (!pool_geometry_valid(p) || p->filter_h * p->filter_w > 65536 || p->rounding != 0 ||
        p->act_min < MCU_INT16_MIN || p->act_max > MCU_INT16_MAX || p->act_min > p->act_max ||
        !pool_windows_nonempty(p)) {
        return MCU_ERR_ARG;
    }
    pool_run(p, NULL, input, output, 1, MCU_POOL_AVG_AWAY);
    return MCU_OK;
}
