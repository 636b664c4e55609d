/*
 * mcu_fully_connected_s8.c - int8 fully connected layer: in [batches, K], weights [N, K] row-major
 * (symmetric, zero point 0), bias [N] or NULL, out [batches, N].
 *
 * Semantics of TFLite Micro's int8 fully connected (per-tensor or per-channel) and CMSIS-NN's
 * arm_fully_connected_s8 (the spec: mcu_fully_connected_s8_ref.c): one int32 sum per output.
 *
 * How it is fast and still bit-exact: four weight rows are computed together (two per pass on
 * Armv6-M, whose eight low registers hold no more), so every input byte is loaded (and offset)
 * once for several MACs. The one algorithm runs on every target; its paths are the shared dot
 * products (support/mcu_dot_s8.c) in the target's instructions: pure C99; with
 * __ARM_FEATURE_DSP, SXTAB16 adds the input offset to two inputs at once and SMLAD does two 16x16
 * MACs; with __ARM_FEATURE_MVE, VMLADAVA.S8 does 16 8x8 MACs (the input offset entering as
 * input_offset * sum(w), VADDVA.S8) and four outputs are requantized per vector. Each output's sum
 * has exactly the reference's terms (integer sums, only the order differs). No scratch.
 */
#include <stdint.h>

#include "../support/mcu_dot_s8.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

/* store4: out[n + r] = output_stage(acc[r] + bias[n + r]) with output n + r's (per-channel) or
 * the (per-tensor) multiplier and shift, r = 0..3 */
#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

/* + bias, requantized per lane (output_stage4: CMSIS-NN's arm_requantize_mve). */
static void store4(const int32_t acc[4], const int32_t *bias, int32_t n,
                   const mcu_fc_params_t *params, int8_t *out)
{
    int32x4_t v = vldrwq_s32(acc);
    if (bias != NULL) {
        v = vaddq_s32(v, vld1q_s32(bias + n));
    }
    int32x4_t multiplier, shift;
    if (params->per_channel) {
        multiplier = vld1q_s32(params->multiplier + n);
        shift = vld1q_s32(params->shift + n);
    } else {
        multiplier = vdupq_n_s32(params->multiplier[0]);
        shift = vdupq_n_s32(params->shift[0]);
    }
    vstrbq_s32(out + n, output_stage4(v, multiplier, shift, &params->q));
}

#else

static void store4(const int32_t acc[4], const int32_t *bias, int32_t n,
                   const mcu_fc_params_t *params, int8_t *out)
{
    /* local copies: an int8_t store may alias anything, which would reload them per output */
    const mcu_quant_io_t q = params->q;
    const int32_t step = params->per_channel; /* 1: per-channel, 0: per-tensor */
    const int32_t *const multiplier = params->multiplier + step * n;
    const int32_t *const shift = params->shift + step * n;
    for (int32_t r = 0; r < 4; ++r) {
        const int32_t a = acc[r] + (bias != NULL ? bias[n + r] : 0);
        out[n + r] = q.rounding == MCU_ROUND_TFLITE
                         ? output_stage_tflite(a, multiplier[step * r], shift[step * r], &q)
                         : output_stage_rne(a, multiplier[step * r], shift[step * r], &q);
    }
}

#endif

int32_t mcu_fully_connected_s8_get_buffer_size(const mcu_fc_params_t *params,
                                               const int32_t *bias, int32_t isa)
{
    (void)params;
    (void)bias;
    (void)isa;
    return 0;
}

int32_t mcu_fully_connected_s8_path(const mcu_fc_params_t *params, const int32_t *bias,
                                    int32_t isa)
{
    (void)params;
    (void)bias;
    if (isa == MCU_ISA_MVE) {
        return MCU_PATH_MVE;
    }
    return isa == MCU_ISA_DSP ? MCU_PATH_DSP : MCU_PATH_GENERIC;
}

mcu_status_t mcu_fully_connected_s8(const mcu_context_t *ctx, const mcu_fc_params_t *params,
                                    const int8_t *input, const int8_t *weights,
                                    const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || weights == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->batches < 1 || params->in_features < 1 || params->out_features < 1 ||
        (params->per_channel != 0 && params->per_channel != 1) || !quant_io_valid(&params->q) ||
        !shifts_valid(params->shift, params->per_channel ? params->out_features : 1)) {
        return MCU_ERR_ARG;
    }
    if (!scratch_ok(ctx, mcu_fully_connected_s8_get_buffer_size(params, bias, MCU_ISA_PLAN))) {
        return MCU_ERR_SCRATCH;
    }

    const int32_t batches = params->batches;
    const int32_t in_features = params->in_features;
    const int32_t out_features = params->out_features;
    const int32_t input_offset = params->q.input_offset;

    for (int32_t b = 0; b < batches; ++b) {
        const int8_t *const in_row = input + b * in_features;
        int8_t *const out_row = output + b * out_features;
        /* acc[n] = sum_k (in[b,k] + input_offset) * w[n,k] + bias[n], four rows n at a time */
        int32_t n = 0;
        for (; n + 4 <= out_features; n += 4) {
            int32_t acc[4];
            mcu_dot4_offset_s8(in_row, weights + n * in_features, in_features, input_offset, acc);
            store4(acc, bias, n, params, out_row);
        }
        for (; n < out_features; ++n) {
            const int32_t q_index = params->per_channel ? n : 0;
            const int32_t acc =
                mcu_dot1_offset_s8(in_row, weights + n * in_features, in_features, input_offset) +
                (bias != NULL ? bias[n] : 0);
            out_row[n] = output_stage(acc, params->multiplier[q_index], params->shift[q_index],
                                      &params->q);
        }
    }
    return MCU_OK;
}
