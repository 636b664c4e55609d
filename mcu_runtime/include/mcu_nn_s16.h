/*
 * mcu_nn_s16.h - mcugen's int16-activation kernels (TFLite's int16x8 mode).
 *
 * int16 activations with zero point 0 (every input_offset/output_offset is 0), int8 symmetric
 * weights, int64 bias and accumulator. The params structs are the int8 kernels' (mcu_nn.h); the
 * clamp range act_min..act_max lies within int16. The output stage of conv, depthwise and fully
 * connected is TFLite's 64-bit MultiplyByQuantizedMultiplier, mcu_requantize_s64() below; add keeps
 * the 32-bit recipe with left_shift 15. Python twins: emitter/kernels/mcu_*_s16.py, s16.py.
 */
#ifndef MCU_NN_S16_H
#define MCU_NN_S16_H

#include <stddef.h>
#include <stdint.h>

#include "mcu_math.h"
#include "mcu_nn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCU_INT16_MIN (-32768)
#define MCU_INT16_MAX 32767
#define MCU_S16_SHIFT_MIN (-31) /* requantization shift range of the 64-bit rule (TFLite) */
#define MCU_S16_SHIFT_MAX 7

/**
 * TFLite's 64-bit MultiplyByQuantizedMultiplier (CMSIS-NN arm_nn_requantize_s64): the Q31
 * multiplier reduced to 16 bits (rounded), then acc * reduced / 2^(15 - shift) rounded half up.
 * |acc| < 2^47, multiplier >= 0, shift in [-31, 7]; the result is wrapped to int32 as TFLite's is.
 */
static inline int32_t mcu_requantize_s64(int64_t acc, int32_t multiplier, int32_t shift)
{
    const int64_t reduced = multiplier < 0x7FFF0000 ? ((int64_t)multiplier + (1 << 15)) >> 16 : 0x7FFF;
    const int32_t total_shift = 15 - shift;
    const int64_t rounded = acc * reduced + ((int64_t)1 << (total_shift - 1));
    return (int32_t)(uint32_t)(uint64_t)(rounded >> total_shift);
}

/**
 * mcu_conv2d_s16 (depth_multiplier 0: filter [C_out, KH, KW, C_in]) and mcu_depthwise_conv2d_s16
 * (depth_multiplier >= 1: filter [1, KH, KW, C_out], output channel oc reads input channel
 * oc / depth_multiplier), p their geometry and output stage once each kernel has checked its channel
 * relations: the shared checks (every extent, stride and dilation >= 1, batches equal, zero points 0,
 * the clamp within int16, per channel multiplier >= 0 and shift in the 64-bit rule's range), then
 *   out[y,x,oc] = clamp(requantize_s64(sum over the taps inside the input of in * w + bias[oc]))
 * with one int64 accumulator per output, taps in (ky, kx, channel) order.
 */
static inline mcu_status_t mcu_conv_s16_run(const mcu_conv_params_t *p, int32_t depth_multiplier, const int16_t *input,
                                            const int8_t *filter, const int64_t *bias, int16_t *output)
{
    if (p->input.n < 1 || p->input.h < 1 || p->input.w < 1 || p->input.c < 1 || p->output.n != p->input.n ||
        p->output.h < 1 || p->output.w < 1 || p->filter.h < 1 || p->filter.w < 1 || p->stride_h < 1 ||
        p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1 || p->q.input_offset != 0 ||
        p->q.output_offset != 0 || p->q.act_min < MCU_INT16_MIN || p->q.act_max > MCU_INT16_MAX ||
        p->q.act_min > p->q.act_max) {
        return MCU_ERR_ARG;
    }
    for (int32_t oc = 0; oc < p->output.c; ++oc) {
        if (p->multiplier[oc] < 0 || p->shift[oc] < MCU_S16_SHIFT_MIN || p->shift[oc] > MCU_S16_SHIFT_MAX) {
            return MCU_ERR_ARG;
        }
    }
    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    const int32_t in_c = p->input.c;
    const int32_t out_c = p->output.c;
    const int32_t depth = depth_multiplier > 0 ? 1 : in_c; /* channels summed per tap */
    const size_t w_tap = (size_t)(depth_multiplier > 0 ? out_c : in_c); /* filter step per tap */
    const size_t w_oc = depth_multiplier > 0 ? 1u : (size_t)p->filter.h * (size_t)p->filter.w * (size_t)in_c;
    size_t out_index = 0;
    for (int32_t n = 0; n < p->output.n; ++n) {
        const int16_t *in_batch = input + (size_t)n * (size_t)in_h * (size_t)in_w * (size_t)in_c;
        for (int32_t y = 0; y < p->output.h; ++y) {
            const int32_t y_origin = y * p->stride_h - p->pad_top;
            for (int32_t x = 0; x < p->output.w; ++x) {
                const int32_t x_origin = x * p->stride_w - p->pad_left;
                for (int32_t oc = 0; oc < out_c; ++oc) {
                    const int16_t *in_ch = in_batch + (depth_multiplier > 0 ? oc / depth_multiplier : 0);
                    const int8_t *w = filter + (size_t)oc * w_oc;
                    int64_t acc = bias != NULL ? bias[oc] : 0;
                    for (int32_t ky = 0; ky < p->filter.h; ++ky) {
                        const int32_t iy = y_origin + ky * p->dilation_h;
                        if (iy < 0 || iy >= in_h) {
                            continue;
                        }
                        for (int32_t kx = 0; kx < p->filter.w; ++kx) {
                            const int32_t ix = x_origin + kx * p->dilation_w;
                            if (ix < 0 || ix >= in_w) {
                                continue;
                            }
                            const int16_t *in_px = in_ch + ((size_t)iy * (size_t)in_w + (size_t)ix) * (size_t)in_c;
                            const int8_t *w_px = w + ((size_t)ky * (size_t)p->filter.w + (size_t)kx) * w_tap;
                            for (int32_t i = 0; i < depth; ++i) {
                                acc += (int64_t)in_px[i] * (int64_t)w_px[i];
                            }
                        }
                    }
                    const int32_t out = mcu_requantize_s64(acc, p->multiplier[oc], p->shift[oc]);
                    output[out_index++] = (int16_t)mcu_clamp_s32(out, p->q.act_min, p->q.act_max);
                }
            }
        }
    }
    return MCU_OK;
}

/** Params of mcu_sigmoid_s16 and mcu_tanh_s16 (TFLite's int16 LOGISTIC and TANH, zero points 0). */
typedef struct {
    int32_t size;              /* elements, >= 1 */
    int32_t input_multiplier;  /* 1..32767: (in * input_multiplier) >> input_shift is the input in 1/(3*4096) units */
    int32_t input_shift;       /* right shift with rounding, 0..31 */
    int32_t output_mode;       /* 0: TFLite's Q0.15 output (scale 2^-15); 1: requantized to the output scale */
    int32_t output_multiplier; /* mode 1: Q31 multiplier of 2^-25 / s_out (sigmoid) or 2^-23 / s_out (tanh) */
    int32_t output_shift;      /* mode 1: its shift, -31..0 (a right shift) */
    int32_t act_min;           /* clamp, within int16 */
    int32_t act_max;
} mcu_activation_s16_params_t;

/** Parameters of mcu_sigmoid_s16 / mcu_tanh_s16 in range (both kernels' argument check). */
static inline int mcu_activation_s16_valid(const mcu_activation_s16_params_t *p)
{
    return p->size >= 1 && p->input_multiplier >= 1 && p->input_multiplier <= 32767 && p->input_shift >= 0 &&
           p->input_shift <= 31 && p->output_mode >= 0 && p->output_mode <= 1 && p->output_shift >= -31 &&
           p->output_shift <= 0 && p->output_multiplier >= 0 && p->act_min >= MCU_INT16_MIN &&
           p->act_max <= MCU_INT16_MAX && p->act_min <= p->act_max;
}

/**
 * The sigmoid table of TFLite's int16 LOGISTIC/TANH (table[i] ~ 65536 * sigmoid(i / 24), 256 entries,
 * non-decreasing) interpolated at abs_x, which has frac_bits fraction bits per table step: sigmoid in
 * Q0.(16 + frac_bits); `saturated` beyond the last step.
 */
static inline uint32_t mcu_sigmoid_interp_u16(const uint16_t *table, uint32_t abs_x, uint32_t frac_bits,
                                              uint32_t saturated)
{
    const uint32_t index = abs_x >> frac_bits;
    if (index >= 255u) {
        return saturated;
    }
    const uint32_t base = table[index];
    const uint32_t slope = (uint32_t)table[index + 1u] - base;
    return (base << frac_bits) + (abs_x & ((1u << frac_bits) - 1u)) * slope;
}

/**
 * The element loop of mcu_sigmoid_s16 and mcu_tanh_s16 over the sigmoid table: x = the input rescaled,
 * r = mcu_sigmoid_interp_u16(table, |x|, frac_bits, saturated), v = x >= 0 ? r - low : high - r;
 * mode 0: out = (v + 2^(out_shift - 1) - (x < 0)) >> out_shift (TFLite's Q0.15), mode 1:
 * out = requant(v, output_multiplier, output_shift); clamped. Element i is read before it is written.
 */
static inline mcu_status_t mcu_sigmoid_table_s16(const mcu_activation_s16_params_t *p, const uint16_t *table,
                                                 const int16_t *input, int16_t *output, uint32_t frac_bits,
                                                 uint32_t saturated, int32_t low, int32_t high, int32_t out_shift)
{
    if (p == NULL || table == NULL || input == NULL || output == NULL || !mcu_activation_s16_valid(p)) {
        return MCU_ERR_ARG;
    }
    const int32_t round = p->input_shift > 0 ? (int32_t)(1u << (p->input_shift - 1)) : 0;
    const int32_t half_up = 1 << (out_shift - 1);
    for (int32_t i = 0; i < p->size; ++i) {
        const int32_t x = ((int32_t)input[i] * p->input_multiplier + round) >> p->input_shift;
        const uint32_t abs_x = (uint32_t)(x < 0 ? -x : x);
        const int32_t r = (int32_t)mcu_sigmoid_interp_u16(table, abs_x, frac_bits, saturated);
        const int32_t v = x >= 0 ? r - low : high - r;
        int32_t out;
        if (p->output_mode == 0) {
            out = x >= 0 ? (v + half_up) >> out_shift : (v + half_up - 1) >> out_shift;
        } else {
            out = mcu_requantize(v, p->output_multiplier, p->output_shift);
        }
        output[i] = (int16_t)mcu_clamp_s32(out, p->act_min, p->act_max);
    }
    return MCU_OK;
}

/** Params of mcu_softmax_s16 (TFLite's int16 SOFTMAX, zero points 0). */
typedef struct {
    int32_t rows;              /* >= 1 */
    int32_t row_size;          /* 1..65536 */
    int32_t input_multiplier;  /* Q31, with input_shift: the difference to the row max scaled so 65535 is 10.0 */
    int32_t input_shift;       /* -31..15, > 0 a left shift */
    int32_t output_mode;       /* 0: TFLite's Q0.15 output (scale 2^-15); 1: requantized to the output scale */
    int32_t output_multiplier; /* mode 1: Q31 multiplier of 2^-15 / s_out */
    int32_t output_shift;      /* mode 1: its shift, -31..14 */
} mcu_softmax_s16_params_t;

/** @brief int16x8 convolution: NHWC int16 input/output, OHWI int8 filter, int64 bias (may be NULL).
 * out = clamp(requantize_s64(sum in * w + bias[oc], multiplier[oc], shift[oc]), act_min, act_max).
 * Offsets must be 0. No scratch. MCU_ERR_ARG for parameters out of range. */
mcu_status_t mcu_conv2d_s16(const mcu_conv_params_t *params, const int16_t *input, const int8_t *filter,
                            const int64_t *bias, int16_t *output);

/** @brief int16x8 depthwise convolution: NHWC int16, filter [1, KH, KW, C_out] int8, int64 bias. */
mcu_status_t mcu_depthwise_conv2d_s16(const mcu_depthwise_conv_params_t *params, const int16_t *input,
                                      const int8_t *filter, const int64_t *bias, int16_t *output);

/** @brief int16x8 fully connected: in [batches, K] int16, weights [N, K] int8, bias [N] int64 (may be
 * NULL), per-tensor or per-channel multipliers. */
mcu_status_t mcu_fully_connected_s16(const mcu_fc_params_t *params, const int16_t *input,
                                     const int8_t *weights, const int64_t *bias, int16_t *output);

/** @brief int16 ADD, TFLite's recipe with left_shift 15, same-size operands (no broadcast). In place OK. */
mcu_status_t mcu_add_s16(const mcu_add_params_t *params, const int16_t *input1, const int16_t *input2,
                         int16_t *output);

/** @brief int16 MUL, same-size operands, zero points 0: out = clamp(requant(a * b, mo, so)). In place OK. */
mcu_status_t mcu_mul_s16(const mcu_mul_params_t *params, const int16_t *input1, const int16_t *input2,
                         int16_t *output);

/** @brief int16 MAX_POOL_2D, NHWC; in and out share scale. */
mcu_status_t mcu_maxpool_s16(const mcu_pool_params_t *params, const int16_t *input, int16_t *output);

/** @brief int16 AVERAGE_POOL_2D, NHWC, padding excluded from the count, rounding half away from zero. */
mcu_status_t mcu_avgpool_s16(const mcu_pool_params_t *params, const int16_t *input, int16_t *output);

/** @brief int16 average with requantization, one rounding (TFLite MEAN): GlobalAveragePool, ReduceMean,
 * AveragePool with a fixed count; offsets 0, at most 65535 taps. */
mcu_status_t mcu_avgpool_requant_s16(const mcu_avgpool_requant_params_t *params, const int16_t *input,
                                     int16_t *output);

/** @brief N-D transpose of int16 elements (numpy semantics on physical shapes). Not in place. */
mcu_status_t mcu_transpose_s16(const mcu_transpose_params_t *params, const int16_t *input,
                               int16_t *output);

/** @brief Requantization between activation types (TFLite QUANTIZE / Requantize), shift in [-31, 15],
 * out = clamp(requant(in + input_offset, multiplier, shift) + output_offset, act_min, act_max).
 * int16 -> int16 may run in place; the widening and narrowing ones not. */
mcu_status_t mcu_requantize_s16(const mcu_requantize_params_t *params, const int16_t *input, int16_t *output);
/** @brief The one requantization loop of the three above: in_bytes / out_bytes (1: int8, 2: int16)
 * are the element sizes of input and output; offsets and clamp range checked against them. */
mcu_status_t mcu_requantize_mixed_s16(const mcu_requantize_params_t *params, const void *input,
                                      int32_t in_bytes, void *output, int32_t out_bytes);
mcu_status_t mcu_requantize_s8_s16(const mcu_requantize_params_t *params, const int8_t *input, int16_t *output);
mcu_status_t mcu_requantize_s16_s8(const mcu_requantize_params_t *params, const int16_t *input, int8_t *output);

/** @brief int16 LOGISTIC (TFLite int16): the input rescaled to 1/(3*4096) units, the 256-entry uint16 sigmoid
 * table interpolated over 9 bits; mode 0 writes TFLite's Q0.15 result, mode 1 requantizes the Q0.25 value.
 * In place OK. MCU_ERR_ARG for parameters out of range. */
mcu_status_t mcu_sigmoid_s16(const mcu_activation_s16_params_t *params, const uint16_t *table, const int16_t *input,
                             int16_t *output);

/** @brief int16 TANH (TFLite int16) through the same sigmoid table (tanh(x) = 2 sigmoid(2x) - 1), interpolated
 * over 8 bits; mode 0 writes TFLite's Q0.15 result, mode 1 requantizes the Q0.23 value. In place OK. */
mcu_status_t mcu_tanh_s16(const mcu_activation_s16_params_t *params, const uint16_t *table, const int16_t *input,
                          int16_t *output);

/** @brief int16 SOFTMAX over the last axis (TFLite int16): exp and 1/(1+x) through 513-entry int16 tables
 * (exp_lut over [-10, 0], recip_lut over [0, 1], both non-negative, exp(0) >= 16384); [rows, row_size] int16.
 * The output holds the exponentials between the passes, so input == output is allowed. */
mcu_status_t mcu_softmax_s16(const mcu_softmax_s16_params_t *params, const int16_t *exp_lut, const int16_t *recip_lut,
                             const int16_t *input, int16_t *output);

#ifdef __cplusplus
}
#endif

#endif /* MCU_NN_S16_H */
