/*
 * mcu_fully_connected_s4.c - int8 x int4 fully connected layer: in [batches, K], weights [N, K]
 * packed two per byte in the layout of mcu_nn_s4.h, kernel sums [N] or NULL, out [batches, N].
 * The dispatcher: parameter checks, the choice of code path, the call.
 *
 * Semantics of mcu_fully_connected_s8 (TFLite's int8 fully connected, weights in [-8, 7]); the
 * weights stay packed where they are (flash), each path unpacks the nibbles in registers:
 * - MVE (mcu_fully_connected_s4_mve.c): 16 bytes = 32 weights per load, VAND / VSHR to two
 *   vectors of nibbles, two VMLADAVA.S8 against the chunk's two input vectors, four rows per pass;
 * - DSP (mcu_fully_connected_s4_dsp.c): a weight word = 8 nibbles, four ANDs (one with the word
 *   shifted) give four pairs of 16-bit lanes, four SMLAD against the SXTB16-unpacked inputs;
 * - generic (mcu_fully_connected_s4_generic.c): pure C99, four rows per pass.
 * No scratch.
 */
#include <stdint.h>

#include "mcu_fully_connected_s4_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_nn.h"
#include "mcu_nn_s4.h"

static int32_t plan(int32_t isa)
{
    return isa == MCU_ISA_MVE ? MCU_PATH_MVE : isa == MCU_ISA_DSP ? MCU_PATH_DSP : MCU_PATH_GENERIC;
}

int32_t mcu_fully_connected_s4_get_buffer_size(const mcu_fc_params_t *params,
                                               const int32_t *kernel_sums, int32_t isa)
{
    (void)params;
    (void)kernel_sums;
    (void)isa;
    return 0;
}

int32_t mcu_fully_connected_s4_path(const mcu_fc_params_t *params, const int32_t *kernel_sums,
                                    int32_t isa)
{
    (void)params;
    (void)kernel_sums;
    return plan(isa);
}

mcu_status_t mcu_fully_connected_s4(const mcu_context_t *ctx, const mcu_fc_params_t *params,
                                    const int8_t *input, const uint8_t *weights,
                                    const int32_t *kernel_sums, int8_t *output)
{
    (void)ctx; /* no scratch on any path */
    if (params == NULL || input == NULL || weights == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL || params->batches < 1 ||
        params->in_features < 1 || params->in_features > 65535 || params->out_features < 1 ||
        (params->per_channel != 0 && params->per_channel != 1) ||
        !quant_io_valid(&params->q)) {
        return MCU_ERR_ARG;
    }
    const int32_t channels = params->per_channel ? params->out_features : 1;
#if MCU_ISA_PLAN == MCU_ISA_MVE
    if (!mcu_fc_s4_mve_shifts_ok(params->shift, channels)) { /* four shifts per instruction */
#else
    if (!shifts_valid(params->shift, channels)) {
#endif
        return MCU_ERR_ARG;
    }
#if MCU_ISA_PLAN == MCU_ISA_MVE
    mcu_fully_connected_s4_mve(params, input, weights, kernel_sums, output);
#elif MCU_ISA_PLAN == MCU_ISA_DSP
    mcu_fully_connected_s4_dsp(params, input, weights, kernel_sums, output);
#else
    mcu_fully_connected_s4_generic(params, input, weights, kernel_sums, output);
#endif
    return MCU_OK;
}
