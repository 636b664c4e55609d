/*
 * mcu_fully_connected_s8.c - int8 fully connected layer: in [batches, K], weights [N, K] in the
 * block layout of mcu_nn.h, kernel sums [N] or NULL, out [batches, N]. The dispatcher: parameter
 * checks, the choice of code path, the call.
 *
 * Semantics of TFLite Micro's int8 fully connected (per-tensor or per-channel) and CMSIS-NN's
 * arm_fully_connected_s8 (the spec: mcu_fully_connected_s8_ref.c): one int32 sum per output.
 * What is known at build time is done there: the input offset enters as the kernel sum
 * bias[n] + input_offset * sum_k w[n, k] (so no offset is added in any loop), and the weights are
 * stored in the order the loops read them: four rows interleaved in 16-input chunks, so that a
 * block of four rows is one stream of loads sharing every input word.
 * Paths (each exact: every output's sum has exactly the reference's terms):
 * - MVE (mcu_fully_connected_s8_mve.c): VMLADAVA.S8, 16 MACs per instruction, four rows per pass,
 *   four outputs requantized per vector;
 * - DSP (mcu_fully_connected_s8_dsp.c): SXTB16 + SMLAD, the input word unpacked once for four
 *   rows; mcu_requant2 (TFLite rounding, shift in [-20, -1], multiplier >= 0 on every output);
 * - generic (mcu_fully_connected_s8_generic.c): pure C99, four rows per pass (two on Armv6-M).
 * No scratch.
 */
#include <stdint.h>

#include "mcu_fully_connected_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

/* Every multiplier/shift valid (shift in [-31, 30]); through *fast, whether all also allow
 * mcu_requant2 (shift in [-20, -1], multiplier >= 0). */
static int quant_valid(const mcu_fc_params_t *p, int *fast)
{
    const int32_t count = p->per_channel ? p->out_features : 1;
    int all_fast = 1;
    for (int32_t i = 0; i < count; ++i) {
        const int32_t s = p->shift[i];
        if (s < -31 || s > 30) {
            return 0;
        }
        all_fast &= (s >= -20) & (s <= -1) & (p->multiplier[i] >= 0);
    }
    *fast = all_fast;
    return 1;
}

static int32_t plan(const mcu_fc_params_t *p, int32_t isa)
{
    if (isa == MCU_ISA_MVE) {
        return MCU_PATH_MVE;
    }
    int fast = 0;
    if (isa == MCU_ISA_DSP && p->q.rounding == MCU_ROUND_TFLITE && quant_valid(p, &fast) &&
        fast) {
        return MCU_PATH_DSP;
    }
    return MCU_PATH_GENERIC;
}

int32_t mcu_fully_connected_s8_get_buffer_size(const mcu_fc_params_t *params,
                                               const int32_t *kernel_sums, int32_t isa)
{
    (void)params;
    (void)kernel_sums;
    (void)isa;
    return 0;
}

int32_t mcu_fully_connected_s8_path(const mcu_fc_params_t *params, const int32_t *kernel_sums,
                                    int32_t isa)
{
    (void)kernel_sums;
    return plan(params, isa);
}

mcu_status_t mcu_fully_connected_s8(const mcu_context_t *ctx, const mcu_fc_params_t *params,
                                    const int8_t *input, const int8_t *weights,
                                    const int32_t *kernel_sums, int8_t *output)
{
    if (params == NULL || input == NULL || weights == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL || params->batches < 1 ||
        params->in_features < 1 || params->in_features > 65535 || params->out_features < 1 ||
        (params->per_channel != 0 && params->per_channel != 1) ||
        !quant_io_valid(&params->q)) {
        return MCU_ERR_ARG;
    }
#if MCU_ISA_PLAN == MCU_ISA_MVE
    /* shift in [-31, 30] (per channel four at a time; no mcu_requant2 flag needed) */
    if (params->per_channel ? !mcu_fully_connected_s8_mve_shifts_ok(params->shift,
                                                                    params->out_features)
                            : (uint32_t)params->shift[0] + 31u > 61u) {
        return MCU_ERR_ARG;
    }
    return mcu_fully_connected_s8_mve(ctx, params, input, weights, kernel_sums, output);
#else
    (void)ctx; /* no scratch on any path */
    int fast = 0;
    if (!quant_valid(params, &fast)) {
        return MCU_ERR_ARG;
    }
#if MCU_ISA_PLAN == MCU_ISA_DSP
    if (fast && params->q.rounding == MCU_ROUND_TFLITE) {
        mcu_fully_connected_s8_dsp(params, input, weights, kernel_sums, output);
    } else {
        mcu_fully_connected_s8_generic(params, input, weights, kernel_sums, output);
    }
#else
    (void)fast;
    mcu_fully_connected_s8_generic(params, input, weights, kernel_sums, output);
#endif
    return MCU_OK;
#endif
}
