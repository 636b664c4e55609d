/*
 * mcu_nn.h - mcugen portable int8 kernels: types and prototypes.
 *
 * Every kernel follows the TFLite int8 quantization spec bit-exactly (see mcu_math.h for the
 * requantization primitives and sign conventions). Activations are int8, layout NHWC for 4-D
 * feature maps. No kernel allocates, prints or uses floating point. Each kernel lives in its own
 * file mcu_runtime/kernels/<function>.c (a kernel with several paths: <function>.c dispatches to
 * <function>_generic.c, _dsp.c, _mve.c). The Python mirror of every struct is the params dataclass
 * in the kernel's twin, emitter/kernels/<function>.py (same field names, same order; checked by
 * tests/test_kernel_structs.py).
 */
#ifndef MCU_NN_H
#define MCU_NN_H

#include <stddef.h>
#include <stdint.h>

#include "mcu_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Status returned by every kernel and by the generated <model>_run(). */
typedef enum {
    MCU_OK = 0,
    MCU_ERR_ARG = 1,     /**< a parameter is out of its valid range */
    MCU_ERR_SCRATCH = 2, /**< the scratch buffer given is smaller than the kernel needs */
    MCU_ERR_GUARD = 3    /**< debug builds: a guard byte around an arena buffer was overwritten */
} mcu_status_t;

/**
 * Scratch memory of one kernel call (as CMSIS-NN's cmsis_nn_context): `size` bytes at `buf`, at
 * least 4-byte aligned, from the planned arena. A kernel that needs scratch takes it as its first
 * argument, asks `mcu_<kernel>_get_buffer_size()` how much, and returns MCU_ERR_SCRATCH when
 * `size` is smaller (buf may be NULL when it needs none).
 */
typedef struct {
    void *buf;
    int32_t size;
} mcu_context_t;

/* Instruction sets a kernel has a code path for. The `_get_buffer_size()` and `_path()` queries
 * take one of them, so that a host tool can ask for any target; a kernel runs on MCU_ISA_NATIVE,
 * the one of the compile target (MVE on Armv8.1-M with MVE, DSP on Armv7E-M/Armv8-M Mainline with
 * the DSP extension, else plain C). */
#define MCU_ISA_C 0
#define MCU_ISA_DSP 1
#define MCU_ISA_MVE 2
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(__ARM_BIG_ENDIAN)
#define MCU_ISA_NATIVE MCU_ISA_MVE
#elif defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#define MCU_ISA_NATIVE MCU_ISA_DSP
#else
#define MCU_ISA_NATIVE MCU_ISA_C
#endif
/* The instruction set a kernel dispatcher plans its path for: MCU_ISA_NATIVE, or MCU_ISA_C (the
 * generic path, whose dot products still use the target's instructions) when the bundle is built
 * for size (MCU_OPTIMIZE_SIZE, mcu_config.h). */
#ifdef MCU_OPTIMIZE_SIZE
#define MCU_ISA_PLAN MCU_ISA_C
#else
#define MCU_ISA_PLAN MCU_ISA_NATIVE
#endif

/* Code paths a `_path()` query returns: the portable algorithm (its dot products in the target's
 * instructions), or the DSP / MVE path of the kernel. */
#define MCU_PATH_GENERIC 0
#define MCU_PATH_DSP 1
#define MCU_PATH_MVE 2

/** Dimensions of a 4-D tensor. Feature maps are [N, H, W, C]; conv filters [C_out, KH, KW, C_in]. */
typedef struct {
    int32_t n;
    int32_t h;
    int32_t w;
    int32_t c;
} mcu_dims_t;

/** Offsets and clamp range shared by the requantizing kernels. */
typedef struct {
    int32_t input_offset;  /**< -input_zero_point, in [-127, 128] */
    int32_t output_offset; /**< +output_zero_point, in [-128, 127] */
    int32_t act_min;       /**< lower clamp in the output's quantized domain, >= -128 */
    int32_t act_max;       /**< upper clamp in the output's quantized domain, <= 127, >= act_min */
    int32_t rounding;      /**< MCU_ROUND_TFLITE, MCU_ROUND_NEAREST_EVEN or _NO_TIE */
} mcu_quant_io_t;

/** mcu_quant_io_t.rounding: TFLite's double rounding (mcu_requantize), or onnxruntime's one
 * rounding of the exact product, half to even (mcu_requantize_rne; the multiplier holds the
 * float32 scale exactly). _NO_TIE is the latter where mcugen proved at build time that no
 * accumulator the layer can reach is a tie and |acc| < 2^29 - 2^23: the fast DSP/MVE paths then
 * run it too (mcu_requant2_lift in mcu_requant.h); _NEAREST_EVEN runs the generic loops. */
#define MCU_ROUND_TFLITE 0
#define MCU_ROUND_NEAREST_EVEN 1
#define MCU_ROUND_NEAREST_NO_TIE 2

/* ------------------------------------------------------------------------------------------- */
/* Convolution                                                                                 */

/** Regular 2-D convolution (group == 1). */
typedef struct {
    mcu_dims_t input;   /**< [1, H_in, W_in, C_in] */
    mcu_dims_t filter;  /**< [C_out, KH, KW, C_in] (OHWI) */
    mcu_dims_t output;  /**< [1, H_out, W_out, C_out] */
    int32_t stride_h;   /**< >= 1 */
    int32_t stride_w;   /**< >= 1 */
    int32_t dilation_h; /**< >= 1 */
    int32_t dilation_w; /**< >= 1 */
    int32_t pad_top;    /**< implicit zero-point padding above; bottom follows from output.h */
    int32_t pad_left;   /**< implicit zero-point padding left; right follows from output.w */
    mcu_quant_io_t q;
    const int32_t *multiplier; /**< per output channel, Q31 */
    const int32_t *shift;      /**< per output channel, > 0 = left shift */
    /** NULL, or per output channel bias + input_offset * (the sum of its weights), mod 2^32: the
     * call's offset corrections, which it then does not compute (mcugen writes them for a layer it
     * calls band by band, where each call would sum the whole filter again) */
    const int32_t *kernel_sums;
    /** NULL, or per output channel the requantization base mcu_requant2_base_q(multiplier, shift, q)
     * (channels_fast 1: mcugen writes them with kernel_sums for a layer it calls by bands or by
     * mcu_conv2d_s8_lean), which the MVE path then does not derive per call */
    const int32_t *requant_bases;
    /** 1: mcu_conv2d_s8_channels_fast() holds (mcugen checked it at build time, for a layer it calls
     * band by band): the call does not check the per-channel constants again; 0: it checks them */
    int32_t channels_fast;
} mcu_conv_params_t;

/**
 * @brief int8 convolution, NHWC input/output, OHWI filter, int32 bias (may be NULL).
 * out[y,x,oc] = clamp(requant(sum_{ky,kx,ic} (in[iy,ix,ic] + input_offset) * w[oc,ky,kx,ic]
 *               + bias[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max);
 * taps outside the input contribute nothing (padding with the input zero point).
 * Scratch: mcu_conv2d_s8_get_buffer_size(params, bias, MCU_ISA_NATIVE) bytes in ctx (else
 * MCU_ERR_SCRATCH); MCU_ERR_ARG for parameters out of range.
 */
mcu_status_t mcu_conv2d_s8(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                           const int8_t *input, const int8_t *filter, const int32_t *bias,
                           int8_t *output);

/**
 * @brief mcu_conv2d_s8 from little scratch (a layer run by rows in a tight memory plan): the same
 * results through a lean variant of the target's fast path (DSP: at most two positions a pass;
 * MVE: with kernel_sums and requant_bases every channel in groups of 8 where ctx holds them, 16
 * where it holds mcu_conv2d_s8_lean_wide_buffer_size, else blocks of 8 channels) where it needs at most
 * MCU_CONV_LEAN_EXTRA bytes more than the generic path, else the generic path; scratch:
 * mcu_conv2d_s8_lean_buffer_size(params, bias, MCU_ISA_NATIVE) bytes (mcu_conv2d_s8_internal.h).
 * Where ctx->size holds the fast path's own
 * scratch (mcu_conv2d_s8_get_buffer_size), it runs mcu_conv2d_s8 itself: a streamed plan passes
 * a band the scratch and the input rows the bands before it have passed.
 */
mcu_status_t mcu_conv2d_s8_lean(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                                const int8_t *input, const int8_t *filter, const int32_t *bias,
                                int8_t *output);

/**
 * @brief Whether mcu_conv2d_s8 on `isa` may write its output over its input in one call, and
 * where: the output starts at least this many bytes below the input, or -1 where it may not. Only
 * a pointwise layer (1x1, stride 1, no padding, C_out == C_in) on a path that reads every input
 * byte of a group of positions before it writes their outputs: the DSP path (one pass lower where
 * its last pass steps back over written positions), the MVE path with all channels in one block;
 * beyond 128 channels never less than one position (C_out bytes), where the same bundle built for
 * plain C (a host build) runs position by position. -1 on the generic path: it does not plan this.
 */
int32_t mcu_conv2d_s8_in_place_down(const mcu_conv_params_t *params, const int32_t *bias,
                                    int32_t isa);

/** @brief Scratch bytes mcu_conv2d_s8 needs for these (valid) parameters on `isa` (MCU_ISA_*). */
int32_t mcu_conv2d_s8_get_buffer_size(const mcu_conv_params_t *params, const int32_t *bias,
                                      int32_t isa);

/** @brief The code path (MCU_PATH_*) mcu_conv2d_s8 takes for these parameters on `isa`. */
int32_t mcu_conv2d_s8_path(const mcu_conv_params_t *params, const int32_t *bias, int32_t isa);

/** @brief 1 where every output channel's constants allow the fast paths' requantization
 * (mcu_requant2_ok(multiplier, shift, bias): so a valid shift), else 0; what a call checks unless
 * params->channels_fast says it holds. */
int mcu_conv2d_s8_channels_fast(const mcu_conv_params_t *params, const int32_t *bias);

/** Depthwise 2-D convolution (group == C_in), C_out = C_in * depth_multiplier. */
typedef struct {
    mcu_dims_t input;         /**< [1, H_in, W_in, C_in] */
    mcu_dims_t filter;        /**< [1, KH, KW, C_out] */
    mcu_dims_t output;        /**< [1, H_out, W_out, C_out] */
    int32_t depth_multiplier; /**< C_out / C_in, >= 1; output channel oc reads ic = oc / mult */
    int32_t stride_h;
    int32_t stride_w;
    int32_t dilation_h;
    int32_t dilation_w;
    int32_t pad_top;
    int32_t pad_left;
    mcu_quant_io_t q;
    const int32_t *multiplier; /**< per output channel */
    const int32_t *shift;      /**< per output channel */
    /** 1: mcu_depthwise_conv2d_s8_channels_fast() holds (mcugen checked it at build time, for a layer
     * it calls band by band): the call does not check the per-channel constants again; 0: it does */
    int32_t channels_fast;
    /** NULL, or the DSP lean variant's groups of four channels prepared at build time (mcugen gives
     * them to a layer it calls lean on a DSP core): each mcu_dw_group4_t's 16 words then its taps'
     * weights (mcu_depthwise_conv2d_s8_internal.h, DW_DSP_GROUP_WORDS), so that the lean call
     * prepares nothing per call and needs no scratch; other paths do not read them */
    const int32_t *dsp_groups;
    /** NULL, or the MVE path's groups of eight channels prepared at build time for the lean call
     * (mcu_dw_mve_scratch_t's layout, MCU_DW_MVE_GROUP_BYTES(KH * KW) bytes a group, ceil(C / 8)
     * groups; a 3x3 filter's then each group's edge sums, MCU_DW_MVE_EDGE_BYTES): the lean call
     * then runs the MVE path from them without scratch (else the generic loops); other calls do
     * not read them */
    const int32_t *mve_groups;
} mcu_depthwise_conv_params_t;

/**
 * @brief int8 depthwise convolution, NHWC input/output, filter [1, KH, KW, C_out], int32 bias
 * [C_out] (may be NULL).
 * out[y,x,oc] = clamp(requant(sum_{ky,kx} (in[iy,ix,oc / depth_multiplier] + input_offset)
 *               * w[0,ky,kx,oc] + bias[oc], multiplier[oc], shift[oc]) + output_offset,
 *               act_min, act_max); taps outside the input contribute nothing.
 * ctx: scratch of mcu_depthwise_conv2d_s8_get_buffer_size(params, bias, MCU_ISA_NATIVE) bytes
 * (may be NULL when that is 0), else MCU_ERR_SCRATCH. Invalid params: MCU_ERR_ARG.
 */
mcu_status_t mcu_depthwise_conv2d_s8(const mcu_context_t *ctx,
                                     const mcu_depthwise_conv_params_t *params,
                                     const int8_t *input, const int8_t *filter,
                                     const int32_t *bias, int8_t *output);

/**
 * @brief mcu_depthwise_conv2d_s8 with the least scratch (a layer run by rows in a tight memory plan),
 * the same results: on DSP cores the DSP path's single rows and lines, its scratch only the four
 * channels' constants and the layer's taps' weights (3x3: 136 bytes; not more than 256; none when
 * params->dsp_groups holds them); on MVE cores the MVE path from params->mve_groups without scratch;
 * else the generic loops without scratch (ctx may be NULL). ctx: mcu_depthwise_conv2d_s8_lean_buffer_size()
 * bytes, else MCU_ERR_SCRATCH.
 */
mcu_status_t mcu_depthwise_conv2d_s8_lean(const mcu_context_t *ctx,
                                          const mcu_depthwise_conv_params_t *params,
                                          const int8_t *input, const int8_t *filter,
                                          const int32_t *bias, int8_t *output);

/**
 * @brief The code path (MCU_PATH_*) and the scratch bytes of mcu_depthwise_conv2d_s8_lean on `isa`
 * (MCU_ISA_*).
 */
int32_t mcu_depthwise_conv2d_s8_lean_path(const mcu_depthwise_conv_params_t *params,
                                          const int32_t *bias, int32_t isa);
int32_t mcu_depthwise_conv2d_s8_lean_buffer_size(const mcu_depthwise_conv_params_t *params,
                                                 const int32_t *bias, int32_t isa);

/* Channels a block of mcu_depthwise_conv2d_s8_in_place: two of the DSP path's four-channel groups,
 * one of the MVE path's eight int16 lanes. Fewer need less scratch but more calls (KWS's 64
 * channels on cortex-m7, a layer's cost over its plain call: 4 channels a block +10.7 %, 8 +8.6 %,
 * 16 +7.5 %; the copies alone about 16 instructions a pixel and block). */
#define MCU_DW_IN_PLACE_CHANNELS 8

/**
 * @brief mcu_depthwise_conv2d_s8 whose output may lie exactly on its input (output == input; the
 * output dims equal the input dims, depth_multiplier 1), the same results: channel block by channel
 * block (8 channels), each block's input channels and weights copied into the scratch,
 * the block computed there by mcu_depthwise_conv2d_s8's own path, its output copied back into
 * those channels. ctx: mcu_depthwise_conv2d_s8_in_place_get_buffer_size(params, bias,
 * MCU_ISA_NATIVE) bytes, else MCU_ERR_SCRATCH; other output dims: MCU_ERR_ARG.
 */
mcu_status_t mcu_depthwise_conv2d_s8_in_place(const mcu_context_t *ctx,
                                              const mcu_depthwise_conv_params_t *params,
                                              const int8_t *input, const int8_t *filter,
                                              const int32_t *bias, int8_t *output);

/**
 * @brief How far below its input the output of one whole mcu_depthwise_conv2d_s8 call on `isa`
 * (MCU_ISA_*) may start, in bytes (0: exactly on it): the fewest whole pixels the path's order of
 * writes allows against the windows still to read (3x3, stride 1, padding 1: one row and one pixel).
 * Exactly there: the fast paths run groups of channels over the whole output, so a start in between
 * pixels would put a group's writes on the input of a group still to run. -1 where it may not
 * (depth_multiplier != 1, a batch > 1). The planner's question.
 */
int32_t mcu_depthwise_conv2d_s8_overlap_down(const mcu_depthwise_conv_params_t *params,
                                             const int32_t *bias, int32_t isa);
/** @brief The same of one whole mcu_depthwise_conv2d_s8_lean call (its path never runs row pairs). */
int32_t mcu_depthwise_conv2d_s8_lean_overlap_down(const mcu_depthwise_conv_params_t *params,
                                                  const int32_t *bias, int32_t isa);

/**
 * @brief Scratch bytes of mcu_depthwise_conv2d_s8_in_place on `isa` (MCU_ISA_*): the most one
 * block's call needs, then the block's weights, input and output (each rounded up to 4 bytes).
 */
int32_t mcu_depthwise_conv2d_s8_in_place_get_buffer_size(const mcu_depthwise_conv_params_t *params,
                                                         const int32_t *bias, int32_t isa);

/**
 * @brief The code path (MCU_PATH_*) mcu_depthwise_conv2d_s8 takes for these (valid) parameters on
 * `isa` (MCU_ISA_*): MCU_PATH_MVE / MCU_PATH_DSP for that ISA's fast path (depth_multiplier 1, a
 * filter of at most 25 taps, requantization in mcu_requant2's range), else MCU_PATH_GENERIC.
 */
int32_t mcu_depthwise_conv2d_s8_path(const mcu_depthwise_conv_params_t *params,
                                     const int32_t *bias, int32_t isa);

/** @brief 1 where every output channel's constants allow the fast paths' requantization
 * (mcu_requant2_ok_q(multiplier, shift, bias, rounding): so a valid shift), else 0; what a call
 * checks unless params->channels_fast says it holds. */
int mcu_depthwise_conv2d_s8_channels_fast(const mcu_depthwise_conv_params_t *params,
                                          const int32_t *bias);

/** @brief Scratch bytes mcu_depthwise_conv2d_s8 needs for these parameters on `isa` (MCU_ISA_*). */
int32_t mcu_depthwise_conv2d_s8_get_buffer_size(const mcu_depthwise_conv_params_t *params,
                                                const int32_t *bias, int32_t isa);

/** Transposed 2-D convolution (ONNX ConvTranspose group 1, TFLite TRANSPOSE_CONV). */
typedef struct {
    mcu_dims_t input;   /**< [N, H_in, W_in, C_in] */
    mcu_dims_t filter;  /**< [C_out, KH, KW, C_in] (OHWI, not flipped) */
    mcu_dims_t output;  /**< [N, H_out, W_out, C_out] */
    int32_t stride_h;   /**< >= 1 */
    int32_t stride_w;   /**< >= 1 */
    int32_t dilation_h; /**< >= 1 */
    int32_t dilation_w; /**< >= 1 */
    int32_t pad_top;    /**< rows of the scatter cropped above (negative: bias-only rows first) */
    int32_t pad_left;   /**< columns cropped left; bottom/right follow from output.h/w */
    mcu_quant_io_t q;
    const int32_t *multiplier; /**< per output channel, Q31 */
    const int32_t *shift;      /**< per output channel, > 0 = left shift */
} mcu_transpose_conv_params_t;

/**
 * @brief int8 transposed convolution, NHWC input/output, OHWI filter, int32 bias (may be NULL).
 * out[y,x,oc] = clamp(requant(sum over (iy,ky,ix,kx,ic) with y = iy*stride_h - pad_top +
 *               ky*dilation_h and x = ix*stride_w - pad_left + kx*dilation_w of
 *               (in[iy,ix,ic] + input_offset) * w[oc,ky,kx,ic], + bias[oc], multiplier[oc],
 *               shift[oc]) + output_offset, act_min, act_max).
 * No scratch; MCU_ERR_ARG for parameters out of range.
 */
mcu_status_t mcu_transpose_conv_s8(const mcu_transpose_conv_params_t *params, const int8_t *input,
                                   const int8_t *filter, const int32_t *bias, int8_t *output);

/* ------------------------------------------------------------------------------------------- */
/* Fully connected                                                                             */

/* The weight layout of mcu_fully_connected_s8 (build time, emitter/kernels/mcu_fully_connected_s8.py
 * pack_weights()): rows [0, N - N % 4) in blocks of MCU_FC_BLOCK_ROWS = 4 rows, each block 4 * K
 * bytes: chunk after chunk of MCU_FC_CHUNK = 16 inputs, row 0's 16 weights, then row 1's, row 2's,
 * row 3's; then the last K % 16 inputs, row 0's K % 16 weights, then rows 1, 2, 3. The last N % 4
 * rows follow, row-major. N * K bytes in all. */
#define MCU_FC_BLOCK_ROWS 4
#define MCU_FC_CHUNK 16

typedef struct {
    int32_t batches;      /**< rows of the input, >= 1 */
    int32_t in_features;  /**< K, 1..65535 */
    int32_t out_features; /**< N */
    mcu_quant_io_t q;     /**< q.input_offset only documents the sums: it is in kernel_sums */
    int32_t per_channel;       /**< 0: multiplier[0]/shift[0] for every output; 1: one per output */
    const int32_t *multiplier;
    const int32_t *shift;
} mcu_fc_params_t;

/**
 * @brief int8 fully connected: in [batches, K], weights [N, K] in the MCU_FC_BLOCK_ROWS layout
 * above, out [batches, N]:
 *   out[b,n] = mcu_output_stage(sum_k in[b,k] * w[n,k] + kernel_sums[n]),
 *   kernel_sums[n] = bias[n] + input_offset * sum_k w[n,k] (build time; may be NULL: all 0),
 * which is TFLite's sum_k (in[b,k] + input_offset) * w[n,k] + bias[n], as integers.
 */
mcu_status_t mcu_fully_connected_s8(const mcu_context_t *ctx, const mcu_fc_params_t *params,
                                    const int8_t *input, const int8_t *weights,
                                    const int32_t *kernel_sums, int8_t *output);

/** @brief Scratch bytes mcu_fully_connected_s8 needs on `isa` (MCU_ISA_*): none on any. */
int32_t mcu_fully_connected_s8_get_buffer_size(const mcu_fc_params_t *params,
                                               const int32_t *kernel_sums, int32_t isa);

/** @brief The code path (MCU_PATH_*) mcu_fully_connected_s8 takes on `isa`: MCU_PATH_MVE on MVE;
 * MCU_PATH_DSP on DSP for TFLite rounding and mcu_requant2_ok() constants (mcu_requant.h) on every
 * output, with the kernel sums as bias; else MCU_PATH_GENERIC. */
int32_t mcu_fully_connected_s8_path(const mcu_fc_params_t *params, const int32_t *kernel_sums,
                                    int32_t isa);

/* ------------------------------------------------------------------------------------------- */
/* Batch matrix multiplication of two activations (TFLite BATCH_MATMUL int8)                   */

/** Where an operand's elements are, as stored: a stored row's elements are contiguous. */
typedef struct {
    int32_t n;   /**< elements between batches n, >= 0 */
    int32_t h;   /**< elements between batches h, >= 0 */
    int32_t row; /**< elements between stored rows, >= a row's length */
} mcu_bmm_strides_t;

typedef struct {
    mcu_dims_t lhs;    /**< logical [B0, B1, M, K]: n, h the batch (1 = broadcast), w = M, c = K */
    mcu_dims_t rhs;    /**< logical [B0, B1, K, N]: n, h the batch (1 = broadcast), w = K, c = N */
    mcu_dims_t output; /**< [B0, B1, M, N]: each batch dim the larger operand's */
    int32_t lhs_transposed; /**< 0: lhs bytes [.., M, K]; 1: [.., K, M] (a folded Transpose) */
    int32_t rhs_transposed; /**< 0: rhs bytes [.., K, N]; 1: [.., N, K] (CMSIS-NN's layout) */
    int32_t rhs_offset;     /**< -rhs zero point, in [-127, 128] */
    mcu_quant_io_t q;       /**< q.input_offset = -lhs zero point */
    int32_t multiplier;     /**< Q31, per tensor: lhs_scale * rhs_scale / output_scale */
    int32_t shift;          /**< in [-31, 30], > 0 = left shift */
    mcu_bmm_strides_t lhs_strides; /**< rows of K (of M when transposed); dense: {h*M*K, M*K, K},
                                        others where lhs is a view (a multi-head split) */
    mcu_bmm_strides_t rhs_strides; /**< rows of N (of K when transposed) */
} mcu_batch_matmul_params_t;

/**
 * @brief int8 batch matmul of two activations, with batch broadcast (each batch dim of lhs and
 * rhs equal, or 1), K in [1, 16384]:
 *   out[b, m, n] = mcu_output_stage(sum_k (lhs[b, m, k] + input_offset) * (rhs[b, k, n] + rhs_offset)).
 * Scratch (mcu_batch_matmul_s8_get_buffer_size): K * N bytes where a DSP/MVE path first stores
 * an rhs [.., K, N] as [.., N, K], and on MVE 4 * N bytes of column terms when M > 2.
 */
mcu_status_t mcu_batch_matmul_s8(const mcu_context_t *ctx, const mcu_batch_matmul_params_t *params,
                                 const int8_t *lhs, const int8_t *rhs, int8_t *output);

/** @brief Scratch bytes mcu_batch_matmul_s8 needs on `isa` (MCU_ISA_*). */
int32_t mcu_batch_matmul_s8_get_buffer_size(const mcu_batch_matmul_params_t *params, int32_t isa);

/** @brief The code path (MCU_PATH_*) mcu_batch_matmul_s8 takes on `isa`: for lhs in [.., M, K]
 * (not transposed) and rhs transposed or M >= 2, MCU_PATH_MVE on MVE and MCU_PATH_DSP on DSP for
 * TFLite rounding or MCU_ROUND_NEAREST_NO_TIE with shift in [-20, -1] and multiplier >= 0; else
 * MCU_PATH_GENERIC. */
int32_t mcu_batch_matmul_s8_path(const mcu_batch_matmul_params_t *params, int32_t isa);

/* ------------------------------------------------------------------------------------------- */
/* Pooling (input and output share scale and zero point)                                       */

typedef struct {
    mcu_dims_t input;  /**< [1, H_in, W_in, C] */
    mcu_dims_t output; /**< [1, H_out, W_out, C] */
    int32_t filter_h;
    int32_t filter_w;
    int32_t stride_h;
    int32_t stride_w;
    int32_t pad_top;
    int32_t pad_left;
    int32_t act_min; /**< clamp in the quantized domain */
    int32_t act_max;
    int32_t rounding; /**< average pools: MCU_ROUND_TFLITE or MCU_ROUND_NEAREST_EVEN */
} mcu_pool_params_t;

/** @brief Average of the valid (non-padding) taps of raw int8 values, rounded half away from zero. */
mcu_status_t mcu_avgpool_s8(const mcu_pool_params_t *params, const int8_t *input, int8_t *output);

/** @brief Maximum of the valid taps, then clamped. */
mcu_status_t mcu_maxpool_s8(const mcu_pool_params_t *params, const int8_t *input, int8_t *output);

/** Average pool with requantization (fixed divisor folded into the multiplier). */
typedef struct {
    mcu_pool_params_t pool;  /**< geometry; act_min/act_max clamp the output */
    int32_t input_offset;    /**< -input_zero_point */
    int32_t output_offset;   /**< +output_zero_point */
    int32_t multiplier;      /**< Q31 of in_scale / (out_scale * filter_h * filter_w) */
    int32_t shift;
} mcu_avgpool_requant_params_t;

/**
 * @brief Average pool with a scale/zero-point change and one rounding (TFLite MEAN style):
 * out[y,x,c] = clamp(requant(sum over the valid taps of (in + input_offset), multiplier, shift)
 *              + output_offset, pool.act_min, pool.act_max).
 * Padding taps are skipped (padding with the input zero point); the divisor is the fixed
 * filter_h * filter_w folded into the multiplier (ONNX count_include_pad=1, GlobalAveragePool,
 * ReduceMean). shift in [-31, 30]. A window with no valid tap is MCU_ERR_ARG. No scratch.
 */
mcu_status_t mcu_avgpool_requant_s8(const mcu_avgpool_requant_params_t *params,
                                    const int8_t *input, int8_t *output);

/* ------------------------------------------------------------------------------------------- */
/* Element-wise                                                                                */

/**
 * How a (possibly broadcast) operand is indexed for output element i:
 * index = (i / inner) % period. Full tensor: inner = 1, period = size. Scalar: inner = 1,
 * period = 1. Per-channel of an NHWC map: inner = 1, period = C.
 */
typedef struct {
    int32_t inner;  /**< >= 1 */
    int32_t period; /**< >= 1 */
} mcu_bcast_t;

/** TFLite int8 ADD (left_shift 20, per-input multipliers). */
typedef struct {
    int32_t size; /**< output elements */
    mcu_bcast_t in1;
    mcu_bcast_t in2;
    int32_t input1_offset;
    int32_t input2_offset;
    int32_t output_offset;
    int32_t left_shift; /**< 20 for int8 */
    int32_t input1_multiplier;
    int32_t input1_shift; /**< <= 0 */
    int32_t input2_multiplier;
    int32_t input2_shift; /**< <= 0 */
    int32_t output_multiplier;
    int32_t output_shift;
    int32_t act_min;
    int32_t act_max;
} mcu_add_params_t;

/**
 * @brief out = clamp(requant(requant((a+off1)<<ls, m1, s1) + requant((b+off2)<<ls, m2, s2),
 * mo, so) + out_off). Sub is Add with input2_multiplier negated.
 */
mcu_status_t mcu_add_s8(const mcu_add_params_t *params, const int8_t *input1,
                        const int8_t *input2, int8_t *output);

/** A convolution whose output feeds only a residual Add: one layer, mcugen's own fused kernel. */
typedef struct {
    mcu_conv_params_t conv; /**< the convolution, as mcu_conv2d_s8 runs it (its int8 value) */
    mcu_add_params_t add;   /**< the Add of that value and the skip operand: size = the conv's output
                                 elements, no broadcast (in1/in2 = {1, size}); every shift <= 0 */
    int32_t skip_first;     /**< 1: the skip operand is the Add's input1, the conv value input2;
                                 0: the conv value is input1 */
} mcu_conv_add_params_t;

/**
 * @brief mcu_conv2d_s8 with a residual Add in its output stage: every output element is
 * add(conv value, skip) (operands in the Add's order, skip_first), bit for bit mcu_conv2d_s8 then
 * mcu_add_s8, without the intermediate tensor. skip and output are NHWC [N, H_out, W_out, C_out];
 * output may lie exactly on skip (element i is read just before element i is written), never on
 * input. Scratch: mcu_conv2d_s8_get_buffer_size(&params->conv) on MCU_ISA_C where the target has MVE
 * (a fused call takes the generic path there), on the target's ISA elsewhere.
 */
mcu_status_t mcu_conv2d_add_s8(const mcu_context_t *ctx, const mcu_conv_add_params_t *params,
                               const int8_t *input, const int8_t *filter, const int32_t *bias,
                               const int8_t *skip, int8_t *output);

/** int8 MUL: TFLite's (double rounding) or onnxruntime's (one rounding, half to even). */
typedef struct {
    int32_t size;
    mcu_bcast_t in1;
    mcu_bcast_t in2;
    int32_t input1_offset;
    int32_t input2_offset;
    int32_t output_offset;
    int32_t output_multiplier;
    int32_t output_shift;
    int32_t act_min;
    int32_t act_max;
    int32_t rounding; /**< MCU_ROUND_TFLITE or MCU_ROUND_NEAREST_EVEN (int8 only; int16 ignores it) */
} mcu_mul_params_t;

/** @brief out = clamp(requant((a+off1)*(b+off2), mo, so) + out_off). */
mcu_status_t mcu_mul_s8(const mcu_mul_params_t *params, const int8_t *input1,
                        const int8_t *input2, int8_t *output);

/** Element-wise requantization (scale/zero-point change, standalone Relu/Clip). */
typedef struct {
    int32_t size;
    mcu_quant_io_t q;
    int32_t multiplier;
    int32_t shift;
} mcu_requantize_params_t;

/** @brief out = clamp(requant(in + input_offset, multiplier, shift) + output_offset). In place OK. */
mcu_status_t mcu_requantize_s8(const mcu_requantize_params_t *params, const int8_t *input,
                               int8_t *output);

/** @brief out[i] = table[(uint8_t)(in[i] + 128)]: Sigmoid, Tanh and any unary int8 function. In place OK. */
mcu_status_t mcu_lut_s8(int32_t size, const int8_t *table, const int8_t *input, int8_t *output);

/* ------------------------------------------------------------------------------------------- */
/* Softmax                                                                                     */

typedef struct {
    int32_t rows;
    int32_t row_size;
    int32_t input_multiplier; /**< from beta * input_scale * 2^(31-5), QuantizeMultiplierGreaterThanOne */
    int32_t input_left_shift;
    int32_t diff_min;         /**< -CalculateInputRadius(5, input_left_shift, 31) */
    int32_t output_mode;      /**< 0: TFLite (scale 1/256, zp -128); 1: requantize the Q31 probability */
    int32_t output_multiplier; /**< mode 1: Q31 multiplier of 2^-31 / output_scale */
    int32_t output_shift;
    int32_t output_offset;     /**< mode 1: +output zero point; mode 0: -128 */
} mcu_softmax_params_t;

/** @brief TFLite int8 softmax over the innermost axis (gemmlowp fixed-point exp, 5 integer bits). */
mcu_status_t mcu_softmax_s8(const mcu_softmax_params_t *params, const int8_t *input,
                            int8_t *output);

/* ------------------------------------------------------------------------------------------- */
/* Data movement                                                                               */

#define MCU_MAX_RANK 6

/** @brief Concatenate: for each of `outer` rows, copy chunk[k] bytes of input k in turn. */
mcu_status_t mcu_concat_s8(int32_t num_inputs, const int8_t *const *inputs, const int32_t *chunk,
                           int32_t outer, int8_t *output);

typedef struct {
    int32_t rank;                     /**< 1..MCU_MAX_RANK */
    int32_t in_shape[MCU_MAX_RANK];   /**< physical input shape, outermost first */
    int32_t pad_before[MCU_MAX_RANK];
    int32_t pad_after[MCU_MAX_RANK];
    int32_t pad_value;                /**< int8 value written into the border */
} mcu_pad_params_t;

/** @brief Constant padding of an N-D tensor. */
mcu_status_t mcu_pad_s8(const mcu_pad_params_t *params, const int8_t *input, int8_t *output);

typedef struct {
    int32_t rank;                   /**< 1..MCU_MAX_RANK */
    int32_t in_shape[MCU_MAX_RANK]; /**< physical input shape */
    int32_t perm[MCU_MAX_RANK];     /**< output axis k takes input axis perm[k] */
} mcu_transpose_params_t;

/** @brief General N-D transpose of elem_bytes-byte elements (1 or 2): out = in.transpose(perm),
 * the one odometer behind mcu_transpose_s8 and mcu_transpose_s16. Not in place. */
mcu_status_t mcu_transpose(const mcu_transpose_params_t *params, const void *input, void *output,
                           int32_t elem_bytes);

/** @brief General N-D transpose: out = in.transpose(perm). Not in place. */
mcu_status_t mcu_transpose_s8(const mcu_transpose_params_t *params, const int8_t *input,
                              int8_t *output);

/* ------------------------------------------------------------------------------------------- */
/* Slice (ONNX Slice, Split)                                                                   */

typedef struct {
    int32_t rank;                    /**< 1..MCU_MAX_RANK */
    int32_t in_shape[MCU_MAX_RANK];  /**< physical input shape, outermost first, each >= 1 */
    int32_t begin[MCU_MAX_RANK];     /**< first input index per axis, in [0, in_shape[d] - 1] */
    int32_t step[MCU_MAX_RANK];      /**< input index stride per axis, != 0, may be negative */
    int32_t out_shape[MCU_MAX_RANK]; /**< output shape, each >= 1, every index visited in range:
                                          0 <= begin[d] + (out_shape[d]-1)*step[d] < in_shape[d] */
} mcu_slice_params_t;

/**
 * @brief N-D strided slice of an int8 tensor (physical shapes, row-major):
 * out[i_0, ..., i_{r-1}] = in[begin[0] + i_0 * step[0], ..., begin[r-1] + i_{r-1} * step[r-1]].
 * ONNX Slice after start/end clamping and Split (one call per output). Empty outputs are not
 * supported (out_shape >= 1). The input element count must fit in int32. Not in place
 * (input == output is MCU_ERR_ARG). No scratch.
 */
mcu_status_t mcu_slice_s8(const mcu_slice_params_t *params, const int8_t *input, int8_t *output);

/* ------------------------------------------------------------------------------------------- */
/* Resize (input and output share scale and zero point)                                        */

/** Nearest-neighbour resize with source indices precomputed at build time. */
typedef struct {
    mcu_dims_t input;       /**< [N, H_in, W_in, C], each >= 1 */
    mcu_dims_t output;      /**< [N, H_out, W_out, C]: N and C as the input; H_out, W_out >= 1 */
    const int32_t *y_index; /**< [H_out] source row of each output row, in [0, H_in - 1] */
    const int32_t *x_index; /**< [W_out] source column of each output column, in [0, W_in - 1] */
} mcu_resize_params_t;

/**
 * @brief int8 nearest-neighbour resize, NHWC: out[n,y,x,c] = in[n, y_index[y], x_index[x], c].
 * Every ONNX coordinate_transformation_mode / nearest_mode is folded into the index tables
 * (emitter/ops/resize.py nearest_indices). An index out of range is MCU_ERR_ARG. Not in place.
 * No scratch.
 */
mcu_status_t mcu_resize_nearest_s8(const mcu_resize_params_t *params, const int8_t *input,
                                   int8_t *output);

/** Bilinear resize with source index pairs and 10-bit fractions precomputed at build time. */
typedef struct {
    mcu_dims_t input;       /**< [N, H_in, W_in, C], each >= 1 */
    mcu_dims_t output;      /**< [N, H_out, W_out, C]: N and C as the input; H_out, W_out >= 1 */
    const int32_t *y_lo;    /**< [H_out] source row weighted 1024 - y_frac, in [0, H_in - 1] */
    const int32_t *y_hi;    /**< [H_out] source row weighted y_frac, in [0, H_in - 1] */
    const int32_t *y_frac;  /**< [H_out] in [0, 1024] (10 fractional bits) */
    const int32_t *x_lo;    /**< [W_out] source column weighted 1024 - x_frac, in [0, W_in - 1] */
    const int32_t *x_hi;    /**< [W_out] source column weighted x_frac, in [0, W_in - 1] */
    const int32_t *x_frac;  /**< [W_out] in [0, 1024] (10 fractional bits) */
} mcu_resize_bilinear_params_t;

/**
 * @brief int8 bilinear resize, NHWC, TFLite ResizeBilinearInteger arithmetic on raw int8 values
 * with per-row/column tables (emitter/ops/resize.py bilinear_tables):
 *   fy = y_frac[y], fx = x_frac[x], a = in[n, y_lo[y], x_lo[x], c], b = in[n, y_lo[y], x_hi[x], c],
 *   d = in[n, y_hi[y], x_lo[x], c], e = in[n, y_hi[y], x_hi[x], c],
 *   acc = a*(1024-fy)*(1024-fx) + b*(1024-fy)*fx + d*fy*(1024-fx) + e*fy*fx     (|acc| <= 2^27)
 *   out[n,y,x,c] = acc / 2^20 rounded half away from zero (TFLite's default double-rounding mode).
 * The weights sum to 2^20, so out stays in [-128, 127]. A table entry out of range is MCU_ERR_ARG.
 * Not in place. No scratch.
 */
mcu_status_t mcu_resize_bilinear_s8(const mcu_resize_bilinear_params_t *params,
                                    const int8_t *input, int8_t *output);

/* ------------------------------------------------------------------------------------------- */
/* Element-wise Min / Max                                                                      */

/** Min/Max of two operands, each requantized to the output's scale and zero point. */
typedef struct {
    int32_t size; /**< output elements, >= 1 */
    mcu_bcast_t in1;
    mcu_bcast_t in2;
    int32_t is_max;            /**< 1: Max, 0: Min */
    int32_t input1_offset;     /**< -input1_zero_point, in [-127, 128] */
    int32_t input1_multiplier; /**< Q31 of input1_scale / output_scale, >= 0 */
    int32_t input1_shift;      /**< in [-31, 30] */
    int32_t input2_offset;     /**< -input2_zero_point, in [-127, 128] */
    int32_t input2_multiplier; /**< Q31 of input2_scale / output_scale, >= 0 */
    int32_t input2_shift;      /**< in [-31, 30] */
    int32_t output_offset;     /**< +output_zero_point, in [-128, 127] */
    int32_t act_min;           /**< >= -128 */
    int32_t act_max;           /**< <= 127, >= act_min */
} mcu_minmax_params_t;

/**
 * @brief Element-wise int8 Min/Max with mcu_bcast_t broadcasting (as mcu_add_s8): with
 * a = input1[(i / in1.inner) % in1.period] and b likewise,
 *   a1 = requant(a + input1_offset, input1_multiplier, input1_shift) + output_offset
 *   a2 = requant(b + input2_offset, input2_multiplier, input2_shift) + output_offset
 *   out[i] = clamp(is_max ? max(a1, a2) : min(a1, a2), act_min, act_max).
 * In place OK when the output aliases a full (inner 1, period size) operand. No scratch.
 */
mcu_status_t mcu_minmax_s8(const mcu_minmax_params_t *params, const int8_t *input1,
                           const int8_t *input2, int8_t *output);

/* ------------------------------------------------------------------------------------------- */
/* Float islands (FPU recommended; soft-float elsewhere)                                       */
/*
 * Ops that onnxruntime leaves in float between DequantizeLinear and QuantizeLinear (Div of two
 * activations, LayerNormalization) run as int8-in / float-compute / int8-out kernels: the only
 * kernels that use floating point. Their numpy goldens (emitter/kernels/mcu_eltwise_f32_s8.py,
 * mcu_layernorm_f32_s8.py) are bit-exact because the kernels use only correctly rounded IEEE-754 binary32
 * operations (+ - * / and sqrtf) in the fixed order documented on each prototype.
 * Assumptions: FLT_EVAL_METHOD == 0 (no excess precision: true for SSE2 hosts, Cortex-M FPUs and
 * soft-float), round-to-nearest-even, no flush-to-zero (the Cortex-M FPSCR reset default), and NO
 * FMA contraction: compile with gcc -std=c99 (ISO modes default to -ffp-contract=off, as the
 * bundles do) or pass -ffp-contract=off explicitly. gcc's -std=gnu99 default
 * (-ffp-contract=fast) and -ffast-math fuse a * b + c into vfma on Cortex-M4F/M7 and break
 * bit-exactness. Every product is its own statement, so clang's default (-ffp-contract=on, within
 * one expression only) has nothing to fuse; -ffp-contract=off is still the safe choice there.
 * sqrtf is the only library function (<math.h>; link -lm on hosts and with newlib): with an FPU
 * gcc emits vsqrt.f32 (plus an errno fallback call unless -fno-math-errno), soft-float calls
 * newlib's sqrtf; both are correctly rounded.
 *
 * Quantization of a float result r, shared by both kernels ("quantize" below):
 *   v = r * output_inv_scale;  v != v (NaN) -> q = 0;  else clamp v to [-256.0f, 256.0f] and
 *   q = v >= 0.0f ? (int32_t)(v + 0.5f) : (int32_t)(v - 0.5f)      (half away from zero, in float)
 *   out = clamp(q + output_zero_point, act_min, act_max)
 * so +-inf saturate, NaN gives the output zero point (then clamped), no cast is ever undefined.
 * v + 0.5f is itself rounded (v = 0.49999997f gives 1): within 1 quantum of exact rounding.
 */

/** mcu_eltwise_f32_params_t.op */
#define MCU_F32_ADD 0 /**< a + b */
#define MCU_F32_SUB 1 /**< a - b */
#define MCU_F32_MUL 2 /**< a * b */
#define MCU_F32_DIV 3 /**< a / b (b == 0 gives IEEE +-inf or NaN, handled by quantize) */
#define MCU_F32_MIN 4 /**< a < b ? a : b */
#define MCU_F32_MAX 5 /**< a > b ? a : b */

/** Binary element-wise op computed in float on dequantized int8 operands. */
typedef struct {
    int32_t size;              /**< output elements, >= 1 */
    mcu_bcast_t in1;           /**< operand 1 index of element i: (i / inner) % period */
    mcu_bcast_t in2;           /**< operand 2 index, likewise */
    int32_t op;                /**< MCU_F32_ADD .. MCU_F32_MAX */
    float input1_scale;        /**< finite, > 0 */
    int32_t input1_zero_point; /**< in [-128, 127] */
    float input2_scale;        /**< finite, > 0 */
    int32_t input2_zero_point; /**< in [-128, 127] */
    float output_inv_scale;    /**< 1 / output_scale rounded to float32 at build time; finite, > 0 */
    int32_t output_zero_point; /**< in [-128, 127] */
    int32_t act_min;           /**< >= -128 */
    int32_t act_max;           /**< <= 127, >= act_min */
} mcu_eltwise_f32_params_t;

/**
 * @brief Element-wise int8 binary op in float32 with mcu_bcast_t broadcasting (as mcu_add_s8):
 * with x1 = input1[(i / in1.inner) % in1.period] and x2 likewise, in this order:
 *   a = input1_scale * (float)(x1 - input1_zero_point)
 *   b = input2_scale * (float)(x2 - input2_zero_point)
 *   r = a op b
 *   out[i] = quantize(r)   (see the section comment: v = r * output_inv_scale, ...)
 * ONNX Add/Sub/Mul/Div/Min/Max between DequantizeLinear and QuantizeLinear. A parameter out of
 * range (including a NaN scale or an unknown op) is MCU_ERR_ARG with the output untouched.
 * In place OK when the output aliases a full (inner 1, period size) operand. No scratch.
 */
mcu_status_t mcu_eltwise_f32_s8(const mcu_eltwise_f32_params_t *params, const int8_t *input1,
                                const int8_t *input2, int8_t *output);

/** Layer normalization over the innermost axis, computed in float. */
typedef struct {
    int32_t rows;              /**< >= 1 */
    int32_t row_size;          /**< n, elements normalized together, >= 1 */
    float input_scale;         /**< finite, > 0 */
    int32_t input_zero_point;  /**< in [-128, 127] */
    float epsilon;             /**< finite, >= 0 */
    float output_inv_scale;    /**< 1 / output_scale rounded to float32 at build time; finite, > 0 */
    int32_t output_zero_point; /**< in [-128, 127] */
    int32_t act_min;           /**< >= -128 */
    int32_t act_max;           /**< <= 127, >= act_min */
    const float *gamma;        /**< [row_size] scale, required */
    const float *beta;         /**< [row_size] bias, or NULL for none (no addition at all) */
} mcu_layernorm_f32_params_t;

/**
 * @brief int8 LayerNormalization over the last axis (ONNX opset 17, stash_type 1: float32),
 * input and output [rows, row_size]. Per row, in exactly this order (sums left to right,
 * i = 0 .. n-1, accumulators start at 0.0f, n = (float)row_size):
 *   x_i  = input_scale * (float)(q_i - input_zero_point)
 *   mean = (x_0 + x_1 + ... + x_{n-1}) / n
 *   var  = ((x_0 - mean) * (x_0 - mean) + ... ) / n
 *   inv  = 1.0f / sqrtf(var + epsilon)
 *   y_i  = (((x_i - mean) * inv) * gamma[i]) + beta[i]      (no "+ beta[i]" when beta is NULL)
 *   out_i = quantize(y_i)   (see the section comment)
 * var + epsilon == 0 (a row all at the zero point, epsilon 0) gives 0 * inf = NaN -> output
 * zero point.
 * A parameter out of range or gamma NULL is MCU_ERR_ARG with the output untouched. In place OK
 * (input == output). No scratch.
 */
mcu_status_t mcu_layernorm_f32_s8(const mcu_layernorm_f32_params_t *params, const int8_t *input,
                                  int8_t *output);

/* ------------------------------------------------------------------------------------------- */
/* LayerNormalization in integer arithmetic                                                    */

typedef struct {
    int32_t rows;               /**< >= 1 */
    int32_t row_size;           /**< n, in [1, 8192] */
    int32_t var_shift;          /**< F: even, in [0, 60] */
    int32_t eps_mantissa;       /**< >= 0: epsilon term E = eps_mantissa << eps_shift */
    int32_t eps_shift;          /**< in [0, 30] */
    int32_t output_zero_point;  /**< in [-128, 127] */
    int32_t act_min;            /**< >= -128 */
    int32_t act_max;            /**< <= 127, >= act_min */
    const int32_t *multiplier;  /**< [row_size] gamma_i / s_out = multiplier_i * 2^(shift_i - 31) */
    const int32_t *shift;       /**< [row_size] each in [-23, 38] */
    const int32_t *bias;        /**< [row_size] beta_i / s_out in Q16, or NULL for none */
} mcu_layernorm_params_t;

/**
 * @brief int8 LayerNormalization over the last axis without floating point, input and output
 * [rows, row_size]. Per row of raw int8 q_0 .. q_{n-1} (the input zero point cancels), with
 * rshift(a, k) = (a + 2^(k-1)) >> k (int64, arithmetic shift: rounds half up):
 *   S = sum q_i,  V = n * sum q_i^2 - S^2 (int64),  D_i = n * q_i - S
 *   W = (V << var_shift) + E (< 2^62),  t = (62 - bitlength(W)) / 2,  r = floor(sqrt(W << 2t))
 *   inv = (2^60 + r / 2) / r,  u_i = rshift(D_i * inv, 36 - var_shift / 2 - t)   (Q24; 0 if V == 0)
 *   y_i = rshift(u_i * multiplier_i, 39 - shift_i)                              (Q16)
 *   out_i = clamp(output_zero_point + rshift(y_i + bias_i, 16), act_min, act_max)
 * E = n^2 * epsilon / s_in^2 << var_shift and var_shift are chosen at build time so that
 * (n^2 * 2^14 << var_shift) + E < 2^62 (checked: else MCU_ERR_ARG with the output untouched).
 * One 64-bit division per row (__aeabi_uldivmod on Arm). In place OK (input == output). No scratch.
 */
mcu_status_t mcu_layernorm_s8(const mcu_layernorm_params_t *params, const int8_t *input,
                              int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* MCU_NN_H */
