/*
 * mcu_requantize_s16.c - element-wise requantization between int8 and int16 activations (TFLite's
 * QUANTIZE between activation types, reference_ops::Requantize):
 *   out = clamp(requant(in + input_offset, multiplier, shift) + output_offset, act_min, act_max)
 * with the 32-bit double rounding of mcu_math.h, shift in [-31, 15]. One loop,
 * mcu_requantize_mixed_s16(), serves int16 -> int16 (here), int8 -> int16
 * (mcu_requantize_s8_s16.c) and int16 -> int8 (mcu_requantize_s16_s8.c).
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

mcu_status_t mcu_requantize_mixed_s16(const mcu_requantize_params_t *params, const void *input,
                                      int32_t in_bytes, void *output, int32_t out_bytes)
{
    if (params == NULL || input == NULL || output == NULL || (in_bytes != 1 && in_bytes != 2) ||
        (out_bytes != 1 && out_bytes != 2)) {
        return MCU_ERR_ARG;
    }
    const mcu_requantize_params_t *p = params;
    const int32_t in_min = in_bytes == 1 ? MCU_INT8_MIN : MCU_INT16_MIN;
    const int32_t in_max = in_bytes == 1 ? MCU_INT8_MAX : MCU_INT16_MAX;
    const int32_t out_min = out_bytes == 1 ? MCU_INT8_MIN : MCU_INT16_MIN;
    const int32_t out_max = out_bytes == 1 ? MCU_INT8_MAX : MCU_INT16_MAX;
    if (p->size < 1 || p->q.input_offset < -in_max || p->q.input_offset > -in_min ||
        p->q.output_offset < out_min || p->q.output_offset > out_max || p->shift < -31 ||
        p->shift > 15 || p->q.rounding != 0 || p->q.act_min < out_min || p->q.act_max > out_max ||
        p->q.act_min > p->q.act_max) {
        return MCU_ERR_ARG;
    }
    const int8_t *const in8 = (const int8_t *)input;
    const int16_t *const in16 = (const int16_t *)input;
    int8_t *const out8 = (int8_t *)output;
    int16_t *const out16 = (int16_t *)output;
    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t x = in_bytes == 1 ? (int32_t)in8[i] : (int32_t)in16[i];
        const int32_t raw = mcu_requantize(x + p->q.input_offset, p->multiplier, p->shift);
        const int32_t v = mcu_clamp_s32(raw + p->q.output_offset, p->q.act_min, p->q.act_max);
        if (out_bytes == 1) {
            out8[i] = (int8_t)v;
        } else {
            out16[i] = (int16_t)v;
        }
    }
    return MCU_OK;
}

mcu_status_t mcu_requantize_s16(const mcu_requantize_params_t *params, const int16_t *input, int16_t *output)
{
    return mcu_requantize_mixed_s16(params, input, 2, output, 2);
}
