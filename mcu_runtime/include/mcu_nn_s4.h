/*
 * mcu_nn_s4.h - mcugen's 4-bit-weight kernels (int8 activations, int4 weights in [-8, 7], two
 * per byte, packed at build time in the layout each kernel reads fastest).
 *
 * The numerics are the int8 kernels' (TFLite's int8 spec, mcu_nn.h): the same params structs,
 * the same int32 accumulator and output stage; only the weights' storage differs (each
 * kernel's section below gives its layout). Python twins: emitter/kernels/mcu_*_s4.py.
 */
#ifndef MCU_NN_S4_H
#define MCU_NN_S4_H

#include <stddef.h>
#include <stdint.h>

#include "mcu_nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------- */
/* Fully connected, 4-bit weights                                                              */

/* The weight layout of mcu_fully_connected_s4 (build time, emitter/kernels/mcu_fully_connected_s4.py
 * pack_weights()). A stored nibble is the weight plus MCU_S4_BIAS (0..15, unsigned): the paths
 * multiply inputs by the unsigned nibble and take 8 * sum_k in[b,k] off once per input row:
 * sum_k x[k] * (u[k] - 8), the very integers of sum_k x[k] * w[k]. One row's K weights: chunk after chunk of MCU_FC_S4_CHUNK = 32
 * inputs in 16 bytes, byte j holding input j in its low nibble and input j + 16 in its high one;
 * then the last T = K % 32 inputs in H = (T + 1) / 2 bytes, byte j holding input j low and input
 * H + j high (the last byte's high nibble unused when T is odd: MCU_S4_BIAS). A row is
 * (K + 1) / 2 bytes. Rows [0, N - N % 4) in blocks of MCU_FC_BLOCK_ROWS = 4: chunk after chunk,
 * row 0's 16 bytes, then rows 1, 2, 3; then the four rows' tails of H bytes, one after another.
 * The last N % 4 rows follow, one after another. N * ((K + 1) / 2) bytes in all. */
#define MCU_FC_S4_CHUNK 32
#define MCU_S4_BIAS 8

/**
 * @brief int8 x int4 fully connected: in [batches, K], weights [N, K] packed as above, out
 * [batches, N]; params and kernel sums exactly as mcu_fully_connected_s8 (mcu_nn.h):
 *   out[b,n] = mcu_output_stage(sum_k in[b,k] * w[n,k] + kernel_sums[n]),
 *   kernel_sums[n] = bias[n] + input_offset * sum_k w[n,k] (build time; may be NULL: all 0).
 * No scratch on any path (ctx may be NULL). MCU_ERR_ARG for parameters out of range.
 */
mcu_status_t mcu_fully_connected_s4(const mcu_context_t *ctx, const mcu_fc_params_t *params,
                                    const int8_t *input, const uint8_t *weights,
                                    const int32_t *kernel_sums, int8_t *output);

/** @brief Scratch bytes mcu_fully_connected_s4 needs on `isa` (MCU_ISA_*): none on any. */
int32_t mcu_fully_connected_s4_get_buffer_size(const mcu_fc_params_t *params,
                                               const int32_t *kernel_sums, int32_t isa);

/** @brief The code path (MCU_PATH_*) mcu_fully_connected_s4 takes on `isa`: MCU_PATH_MVE on MVE,
 * MCU_PATH_DSP on DSP, else MCU_PATH_GENERIC. */
int32_t mcu_fully_connected_s4_path(const mcu_fc_params_t *params, const int32_t *kernel_sums,
                                    int32_t isa);

#ifdef __cplusplus
}
#endif

#endif /* MCU_NN_S4_H */
