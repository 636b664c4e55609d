/*
 * mcu_conv2d_add_s8.c - a convolution whose output feeds only a residual Add, as one layer:
 * mcu_conv2d_s8 computes each int8 value exactly as it would store it (its own requantization,
 * output offset and clamp), and its output stage stores add(value, skip) instead, with the Add's
 * TFLite arithmetic (mcu_add_s8.c, operands in the Add's order). Bit for bit mcu_conv2d_s8 then
 * mcu_add_s8, without writing or reading back the intermediate tensor. Every path applies the
 * Add where it stores (mcu_conv2d_s8_generic.c, _dsp.c, _mve.c), each element's skip value read
 * just before the element is written, so the output may lie exactly on the skip. mcugen's own
 * kernel: CMSIS-NN has none.
 */
#include <stdint.h>

#include "mcu_conv2d_s8_internal.h"
#include "mcu_math.h"
#include "mcu_nn.h"

static int32_t shift_ok(int32_t shift)
{
    return shift >= -30 && shift <= 0;
}

mcu_status_t mcu_conv2d_add_s8(const mcu_context_t *ctx, const mcu_conv_add_params_t *params,
                               const int8_t *input, const int8_t *filter, const int32_t *bias,
                               const int8_t *skip, int8_t *output)
{
    if (params == NULL || skip == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_add_params_t *const a = &params->add;
    const mcu_dims_t *const out = &params->conv.output;
    const int32_t size = out->n * out->h * out->w * out->c;
    if (a->size != size || a->in1.inner != 1 || a->in1.period != size || a->in2.inner != 1 ||
        a->in2.period != size || a->left_shift < 0 || a->left_shift > 20 ||
        a->input1_offset < -127 || a->input1_offset > 128 || a->input2_offset < -127 ||
        a->input2_offset > 128 || a->output_offset < MCU_INT8_MIN ||
        a->output_offset > MCU_INT8_MAX || !shift_ok(a->input1_shift) ||
        !shift_ok(a->input2_shift) || !shift_ok(a->output_shift) || a->act_min < MCU_INT8_MIN ||
        a->act_max > MCU_INT8_MAX || a->act_min > a->act_max ||
        (params->skip_first != 0 && params->skip_first != 1)) {
        return MCU_ERR_ARG;
    }
    const int skip_first = params->skip_first == 1;
    mcu_conv_fuse_t fuse;
    fuse.skip = skip;
    fuse.output = output;
    fuse.conv_offset = skip_first ? a->input2_offset : a->input1_offset;
    fuse.conv_mult = skip_first ? a->input2_multiplier : a->input1_multiplier;
    fuse.conv_exp = -(skip_first ? a->input2_shift : a->input1_shift);
    fuse.skip_offset = skip_first ? a->input1_offset : a->input2_offset;
    fuse.skip_mult = skip_first ? a->input1_multiplier : a->input2_multiplier;
    fuse.skip_exp = -(skip_first ? a->input1_shift : a->input2_shift);
    fuse.shift1 = a->left_shift + 1;
    fuse.out_mult = a->output_multiplier;
    fuse.out_exp = -a->output_shift;
    fuse.out_offset = a->output_offset;
    fuse.act_min = a->act_min;
    fuse.act_max = a->act_max;
    fuse.conv_mask = (int32_t)((1u << fuse.conv_exp) - 1u);
    fuse.skip_mask = (int32_t)((1u << fuse.skip_exp) - 1u);
    fuse.out_mask = (int32_t)((1u << fuse.out_exp) - 1u);
    return mcu_conv2d_s8_run(ctx, &params->conv, input, filter, bias, output, &fuse);
}
