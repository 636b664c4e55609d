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

/* ------------------------------------------------------------------------------------------- */
/* Convolution (regular and 1-D), depthwise and transposed convolution, 4-bit weights          */

/* Weights are stored as signed nibbles (two's complement, -8..7), the params structs are
 * mcu_nn.h's, the output stage mcu_output_stage.
 *
 * mcu_conv2d_s4: output channel oc's K = KH * KW * C_in weights (OHWI order) take (K + 1) / 2
 * bytes from byte oc * ((K + 1) / 2): blocks of MCU_S4_BLOCK = 32 weights in 16 bytes, byte j
 * holding weight j (low nibble) and weight 16 + j (high nibble); then the last T = K % 32 weights
 * in H = (T + 1) / 2 bytes, byte j holding weight j low and weight H + j high (0 when T is odd).
 * C_out * ((K + 1) / 2) bytes in all. */
#define MCU_S4_BLOCK 32

/**
 * @brief int8 convolution with 4-bit weights (group 1; 1-D as H = 1), NHWC input/output:
 *   out[y,x,oc] = mcu_output_stage(sum_{ky,kx,ic} in[iy,ix,ic] * w[oc,ky,kx,ic] + sums[oc]),
 *   sums[oc] = bias[oc] + input_offset * sum of w[oc] (build time; never NULL); a padding tap
 * reads the input zero point, so the result is mcu_conv2d_s8's for the same weights and bias.
 * Scratch: mcu_conv2d_s4_get_buffer_size(params, MCU_ISA_NATIVE) bytes in ctx (else
 * MCU_ERR_SCRATCH); MCU_ERR_ARG for parameters out of range (K at most 65535).
 */
mcu_status_t mcu_conv2d_s4(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                           const int8_t *input, const uint8_t *filter, const int32_t *sums,
                           int8_t *output);

/** @brief mcu_conv2d_s4 on its generic path whatever the target, blocks of 4 output channels
 * (the least scratch: mcu_conv2d_s4_lean_get_buffer_size(params) bytes). */
mcu_status_t mcu_conv2d_s4_lean(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                                const int8_t *input, const uint8_t *filter, const int32_t *sums,
                                int8_t *output);

/** @brief Scratch bytes mcu_conv2d_s4 needs for these (valid) parameters on `isa` (MCU_ISA_*). */
int32_t mcu_conv2d_s4_get_buffer_size(const mcu_conv_params_t *params, int32_t isa);

/** @brief Scratch bytes mcu_conv2d_s4_lean needs: 4 n + n K (+ K when some window is gathered and
 * K <= 576), n = min(4, C_out, max(1, 2048 / K)). */
int32_t mcu_conv2d_s4_lean_get_buffer_size(const mcu_conv_params_t *params);

/** @brief The code path (MCU_PATH_*) mcu_conv2d_s4 takes for these parameters on `isa`. */
int32_t mcu_conv2d_s4_path(const mcu_conv_params_t *params, int32_t isa);

/* mcu_depthwise_conv2d_s4: per tap (ky, kx), the C_out weights of that tap in (C_out + 1) / 2
 * bytes: groups of 8 channels in 4 bytes, byte j holding channel j (low nibble) and channel 4 + j
 * (high nibble); then the last R = C_out % 8 channels in H = (R + 1) / 2 bytes, byte j holding
 * channel j low and channel H + j high (0 when R is odd). KH * KW * ((C_out + 1) / 2) bytes. */

/**
 * @brief int8 depthwise convolution with 4-bit weights, NHWC, any depth multiplier: the results
 * of mcu_depthwise_conv2d_s8 (mcu_nn.h) for the same weights and bias (may be NULL). A filter of
 * at most 2048 weights (KH * KW * C_out) is unpacked to int8 in scratch once a call and runs
 * through mcu_depthwise_conv2d_s8; a larger one reads its nibbles in the s4 loops. Scratch:
 * mcu_depthwise_conv2d_s4_get_buffer_size(params, MCU_ISA_NATIVE) bytes in ctx (unpacked:
 * mcu_depthwise_conv2d_s8's scratch plus KH * KW * C_out; else 8 * C_out on the DSP and MVE
 * paths, none on the generic one: ctx may then be NULL), else MCU_ERR_SCRATCH; MCU_ERR_ARG for
 * parameters out of range.
 */
mcu_status_t mcu_depthwise_conv2d_s4(const mcu_context_t *ctx,
                                     const mcu_depthwise_conv_params_t *params,
                                     const int8_t *input, const uint8_t *filter,
                                     const int32_t *bias, int8_t *output);

/** @brief Scratch bytes mcu_depthwise_conv2d_s4 needs on `isa` (MCU_ISA_*). */
int32_t mcu_depthwise_conv2d_s4_get_buffer_size(const mcu_depthwise_conv_params_t *params,
                                                int32_t isa);

/** @brief The code path (MCU_PATH_*) mcu_depthwise_conv2d_s4 takes on `isa`: an unpacked filter
 * mcu_depthwise_conv2d_s8_path(params, NULL, isa) (its bias is checked per call); else
 * MCU_PATH_MVE on MVE and MCU_PATH_DSP on DSP with depth multiplier 1, else MCU_PATH_GENERIC. */
int32_t mcu_depthwise_conv2d_s4_path(const mcu_depthwise_conv_params_t *params, int32_t isa);

/* mcu_transpose_conv_s4: per (oc, ky, kx), the C_in weights of that tap in (C_in + 1) / 2 bytes,
 * byte j holding input channel 2j (low nibble) and 2j + 1 (high nibble; 0 when C_in is odd).
 * C_out * KH * KW * ((C_in + 1) / 2) bytes in all. */

/**
 * @brief int8 transposed convolution with 4-bit weights: the results of mcu_transpose_conv_s8
 * (mcu_nn.h) for the same weights and bias (may be NULL). No scratch; MCU_ERR_ARG for parameters
 * out of range.
 */
mcu_status_t mcu_transpose_conv_s4(const mcu_transpose_conv_params_t *params, const int8_t *input,
                                   const uint8_t *filter, const int32_t *bias, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* MCU_NN_S4_H */
