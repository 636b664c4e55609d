/*
 * mcu_sink.h - layers that end a streamed segment by accumulating their input row by row
 * (mcu_sink.c): a fully connected layer over the flattened rows and a global average pool.
 *
 * The segment loop zeroes `acc` (int32, one per output element), adds each input row as soon as
 * it is made (`_acc`), and writes the output once, after the last row (`_finish`). Integer sums
 * are associative, so the output is exactly the whole layer's: the row of a streamed chain that
 * feeds it never needs to exist as a whole tensor. mcugen's Python twins
 * (emitter/kernels/mcu_fully_connected_s8.py, mcu_avgpool_s8.py, mcu_avgpool_requant_s8.py:
 * accumulate() / finish()) state the same arithmetic; a test compares them.
 * Internal to mcu_runtime (the generated code calls it; not part of the public API in mcu_nn.h).
 */
#ifndef MCU_SINK_H
#define MCU_SINK_H

#include <stdint.h>

#include "mcu_nn.h"

/* acc[n] += sum_k x[k] * w[n, k0 + k], k < len (batch 1; weights in mcu_fully_connected_s8's
 * block layout). */
void mcu_fully_connected_s8_acc(const mcu_fc_params_t *params, const int8_t *x, int32_t k0,
                                int32_t len, const int8_t *weights, int32_t *acc);

/* output[n] = the layer's output from acc[n] + kernel_sums[n] (bias + input_offset * row sum). */
mcu_status_t mcu_fully_connected_s8_finish(const mcu_fc_params_t *params, const int32_t *acc,
                                           const int32_t *kernel_sums, int8_t *output);

/* acc[c] += sum of the `pixels` positions of x (NHWC, `channels` per position). */
void mcu_pool_sum_s8(const int8_t *x, int32_t pixels, int32_t channels, int32_t *acc);

/* A global average pool's output from its channel sums (window = the whole input, no padding). */
mcu_status_t mcu_avgpool_s8_finish(const mcu_pool_params_t *params, const int32_t *acc,
                                   int8_t *output);
mcu_status_t mcu_avgpool_requant_s8_finish(const mcu_avgpool_requant_params_t *params,
                                           const int32_t *acc, int8_t *output);

#endif /* MCU_SINK_H */
