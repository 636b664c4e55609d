/*
 * mcu_avgpool_s8.c - TFLite int8 AVERAGE_POOL_2D (reference_integer_ops::AveragePool).
 *
 * Input and output share scale and zero point, so no requantization:
 *   sum   = sum of the raw int8 values over the taps inside the input (padding is not counted)
 *   count = number of those taps
 *   out   = clamp(round_half_away(sum / count), act_min, act_max)
 * A window with no valid tap is an error (TFLite Micro fails the same way), detected before any
 * output is written. The window loops are pool_run (mcu_kernel_util.h).
 */
#include "mcu_kernel_util.h"

mcu_status_t mcu_avgpool_s8(const mcu_pool_params_t *params, const int8_t *input, int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_pool_params_t *p = params;
    if (!pool_geometry_valid(p) || p->act_min < MCU_INT8_MIN || p->act_max > MCU_INT8_MAX ||
        p->act_min > p->act_max || !pool_windows_nonempty(p)) {
        return MCU_ERR_ARG;
    }
    if (p->rounding != MCU_ROUND_TFLITE) { /* onnxruntime numerics: ties to even */
        pool_run(p, NULL, input, output, 0, MCU_POOL_AVG_EVEN);
    } else {
        pool_run(p, NULL, input, output, 0, MCU_POOL_AVG_AWAY);
    }
    return MCU_OK;
}
