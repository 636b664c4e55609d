/*
 * mcu_maxpool_s8.c - TFLite int8 MAX_POOL_2D (reference_integer_ops::MaxPool).
 *
 * Input and output share scale and zero point:
 *   out = clamp(max over the taps inside the input of in[...], act_min, act_max)
 * Padding taps are skipped; a window with no valid tap yields clamp(-128), as in TFLite Micro.
 * The window loops are pool_run (mcu_kernel_util.h).
 */
#include "mcu_kernel_util.h"

mcu_status_t mcu_maxpool_s8(const mcu_pool_params_t *params, const int8_t *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool_params_t *p = params;
    if (!pool_geometry_valid(p) || p->act_min < MCU_INT8_MIN || p->act_max > MCU_INT8_MAX ||
        p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }
    pool_run(p, NULL, input, output, 0, MCU_POOL_MAX);
    return MCU_OK;
}
