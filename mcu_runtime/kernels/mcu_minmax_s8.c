/*
 * mcu_minmax_s8.c - element-wise int8 Min/Max (ONNX Min/Max, TFLite MINIMUM/MAXIMUM) of two
 * operands with their own quantization, with mcu_bcast_t broadcasting (as mcu_add_s8).
 *
 * For every output element i, with a = input1[(i / in1.inner) % in1.period] and b likewise:
 *   a1  = requant(a + input1_offset, input1_multiplier, input1_shift) + output_offset
 *   a2  = requant(b + input2_offset, input2_multiplier, input2_shift) + output_offset
 *   out = clamp(is_max ? max(a1, a2) : min(a1, a2), act_min, act_max)
 * Each input is brought to the output's scale (multiplier of s_in / s_out) before comparing. With
 * equal quantizations (multiplier 2^30, shift 1) the requantization is exact.
 */
#include "mcu_kernel_util.h"

/* Requantized values are pre-clamped to +-MCU_MINMAX_BOUND before the output offset is added:
 * the bound lies outside every act range whatever the offset, and clamping commutes with min and
 * max, so the result is unchanged while the addition cannot overflow. */
#define MCU_MINMAX_BOUND 512

static int32_t mcu_minmax_scale(int8_t v, int32_t offset, int32_t multiplier, int32_t shift,
                                int32_t output_offset)
{
    const int32_t scaled = mcu_requantize(v + offset, multiplier, shift);
    return mcu_clamp_s32(scaled, -MCU_MINMAX_BOUND, MCU_MINMAX_BOUND) + output_offset;
}

static int8_t mcu_minmax_one(const void *params, int8_t a, int8_t b)
{
    const mcu_minmax_params_t *p = params;
    const int32_t a1 = mcu_minmax_scale(a, p->input1_offset, p->input1_multiplier,
                                        p->input1_shift, p->output_offset);
    const int32_t a2 = mcu_minmax_scale(b, p->input2_offset, p->input2_multiplier,
                                        p->input2_shift, p->output_offset);
    const int32_t raw_out = p->is_max ? (a1 > a2 ? a1 : a2) : (a1 < a2 ? a1 : a2);
    return (int8_t)mcu_clamp_s32(raw_out, p->act_min, p->act_max);
}

mcu_status_t mcu_minmax_s8(const mcu_minmax_params_t *params, const int8_t *input1,
                           const int8_t *input2, int8_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_minmax_params_t *p = params;
    if (p->size < 1 || !bcast_valid(&p->in1) || !bcast_valid(&p->in2) ||
        (p->is_max != 0 && p->is_max != 1) ||
        p->input1_offset < -127 || p->input1_offset > 128 ||
        p->input2_offset < -127 || p->input2_offset > 128 ||
        p->output_offset < MCU_INT8_MIN || p->output_offset > MCU_INT8_MAX ||
        p->input1_multiplier < 0 || p->input2_multiplier < 0 ||
        p->input1_shift < -31 || p->input1_shift > 30 ||
        p->input2_shift < -31 || p->input2_shift > 30 ||
        p->act_min < MCU_INT8_MIN || p->act_max > MCU_INT8_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }

    bcast_run(p, mcu_minmax_one, p->size, &p->in1, &p->in2, input1, input2, output);
    return MCU_OK;
}
