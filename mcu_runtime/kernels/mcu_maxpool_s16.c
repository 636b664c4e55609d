/*
 * mcu_maxpool_s16.c - TFLite int16 MAX_POOL_2D; input and output share scale (zero point 0).
 *
 *   out = clamp(max over the taps inside the input of in[...], act_min, act_max)
 * Padding taps are skipped; a window with no valid tap yields clamp(-32768). The window loops are
 * pool_run (mcu_kernel_util.h).
 */
#include "mcu_kernel_util.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_maxpool_s16(const mcu_pool_params_t *params, const int16_t *input, int16_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool_params_t *p = params;
    if (!pool_geometry_valid(p) || p->act_min < MCU_INT16_MIN || p->act_max > MCU_INT16_MAX ||
        p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }
    pool_run(p, NULL, input, output, 1, MCU_POOL_MAX);
    return MCU_OK;
}
