/*
 * mcu_add_s8.c - TFLite int8 ADD (reference_integer_ops::Add), with mcu_bcast_t broadcasting.
 *
 * For every output element i, with a = input1[(i / in1.inner) % in1.period] and b likewise:
 *   x1  = requant((a + input1_offset) << left_shift, input1_multiplier, input1_shift)
 *   x2  = requant((b + input2_offset) << left_shift, input2_multiplier, input2_shift)
 *   out = clamp(requant(x1 + x2, output_multiplier, output_shift) + output_offset,
 *               act_min, act_max)
 * The input shifts are <= 0, so requant is TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp.
 * Sub is Add with input2_multiplier negated.
 * Full operands with every shift in [-30, 0] (realistic constants: TFLite's input shifts are <= -1,
 * its output shift <= 0 unless the output scale is below the inputs') take mcu_conv_fuse_one's
 * arithmetic (mcu_requant.h: SMMULR-based, exact for int8 operands), four lanes a vector on MVE:
 * 10.5 instructions an element on cortex-m55, 53 on cortex-m4/m7, against 133-137 for the loop below.
 */
#include "mcu_kernel_util.h"

static int8_t mcu_add_one(const void *params, int8_t a, int8_t b)
{
    const mcu_add_params_t *p = params;
    /* |a + offset| <= 256, so the shift by left_shift (<= 20) cannot overflow. */
    const int32_t shifted1 = (int32_t)((a + p->input1_offset) * (1 << p->left_shift));
    const int32_t shifted2 = (int32_t)((b + p->input2_offset) * (1 << p->left_shift));
    const int32_t scaled1 = mcu_requantize(shifted1, p->input1_multiplier, p->input1_shift);
    const int32_t scaled2 = mcu_requantize(shifted2, p->input2_multiplier, p->input2_shift);
    /* Each scaled value has magnitude < 2^29: the sum cannot overflow. */
    const int32_t raw_sum = scaled1 + scaled2;
    const int32_t raw_out =
        mcu_requantize(raw_sum, p->output_multiplier, p->output_shift) + p->output_offset;
    return (int8_t)mcu_clamp_s32(raw_out, p->act_min, p->act_max);
}

/* Full operands (no broadcast) and every shift in [-30, 0]: add_fast() computes them. */
static int add_fast_ok(const mcu_add_params_t *p)
{
    return p->in1.inner == 1 && p->in1.period == p->size && p->in2.inner == 1 &&
           p->in2.period == p->size && p->input1_shift >= -30 && p->input2_shift >= -30 &&
           p->output_shift >= -30 && p->output_shift <= 0;
}

/* output[i] = the Add of input1[i] and input2[i], with input1 in mcu_conv_fuse_t's conv role and
 * input2 in its skip role; output may lie exactly on either operand. */
static void add_fast(const mcu_add_params_t *p, const int8_t *input1, const int8_t *input2,
                     int8_t *output)
{
    mcu_conv_fuse_t f;
    f.skip = input2;
    f.output = output;
    f.conv_offset = p->input1_offset;
    f.conv_mult = p->input1_multiplier;
    f.conv_exp = -p->input1_shift;
    f.skip_offset = p->input2_offset;
    f.skip_mult = p->input2_multiplier;
    f.skip_exp = -p->input2_shift;
    f.shift1 = p->left_shift + 1;
    f.out_mult = p->output_multiplier;
    f.out_exp = -p->output_shift;
    f.out_offset = p->output_offset;
    f.act_min = p->act_min;
    f.act_max = p->act_max;
    f.conv_mask = (int32_t)((1u << f.conv_exp) - 1u);
    f.skip_mask = (int32_t)((1u << f.skip_exp) - 1u);
    f.out_mask = (int32_t)((1u << f.out_exp) - 1u);
    const int32_t n = p->size;
#if MCU_ISA_NATIVE == MCU_ISA_MVE
    const mcu_conv_fuse4_t v4 = {
        vdupq_n_s32(f.shift1),     vdupq_n_s32(f.conv_mult),  vdupq_n_s32(f.skip_mult),
        vdupq_n_s32(f.out_mult),   vdupq_n_s32(-f.conv_exp),  vdupq_n_s32(-f.skip_exp),
        vdupq_n_s32(-f.out_exp),   vdupq_n_s32(f.act_min),    vdupq_n_s32(f.act_max),
        f.conv_offset,             f.skip_offset,             f.out_offset};
    int32_t j = 0;
    for (; j + 4 <= n; j += 4) {
        vstrbq_s32(output + j, mcu_conv_fuse4(&v4, vldrbq_s32(input1 + j), vldrbq_s32(input2 + j)));
    }
    if (j < n) {
        const mve_pred16_t pr = vctp32q((uint32_t)(n - j));
        vstrbq_p_s32(output + j,
                     mcu_conv_fuse4(&v4, vldrbq_z_s32(input1 + j, pr), vldrbq_z_s32(input2 + j, pr)),
                     pr);
    }
#else
    for (int32_t i = 0; i < n; ++i) {
        output[i] = mcu_conv_fuse_one(&f, input1[i], input2[i]);
    }
#endif
}

mcu_status_t mcu_add_s8(const mcu_add_params_t *params, const int8_t *input1,
                        const int8_t *input2, int8_t *output)
{
    if (params == NULL || input1 == NULL || input2 == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_add_params_t *p = params;
    if (p->size < 1 || !bcast_valid(&p->in1) || !bcast_valid(&p->in2) ||
        p->left_shift < 0 || p->left_shift > 20 ||
        p->input1_offset < -127 || p->input1_offset > 128 ||
        p->input2_offset < -127 || p->input2_offset > 128 ||
        p->output_offset < MCU_INT8_MIN || p->output_offset > MCU_INT8_MAX ||
        p->input1_shift < -31 || p->input1_shift > 0 ||
        p->input2_shift < -31 || p->input2_shift > 0 ||
        p->output_shift < -31 || p->output_shift > 30 ||
        p->act_min < MCU_INT8_MIN || p->act_max > MCU_INT8_MAX || p->act_min > p->act_max) {
        return MCU_ERR_ARG;
    }

    if (add_fast_ok(p)) {
        add_fast(p, input1, input2, output);
        return MCU_OK;
    }
    bcast_run(p, mcu_add_one, p->size, &p->in1, &p->in2, input1, input2, output);
    return MCU_OK;
}
