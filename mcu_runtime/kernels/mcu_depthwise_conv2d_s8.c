/*
 * mcu_depthwise_conv2d_s8.c - int8 depthwise 2-D convolution (group == C_in), NHWC, filter
 * [1, KH, KW, C_out] with C_out = C_in * depth_multiplier.
 *
 * Semantics of TFLite Micro's per-channel int8 depthwise convolution and CMSIS-NN's
 * arm_depthwise_conv_s8: output channel oc = ic * depth_multiplier + m reads input channel ic
 * only; taps outside the input are skipped (padding with the input zero point).
 *
 * How it is fast and still bit-exact:
 * - Per output position the valid tap ranges [ky_begin, ky_end) x [kx_begin, kx_end) are computed
 *   once; the tap loops hold no bounds checks and no index arithmetic beyond two pointer steps.
 * - With depth_multiplier == 1 channels are processed in blocks, channel-contiguous in NHWC input
 *   and filter alike. Pure C99 on every target (the host included): four channels per block.
 *   __ARM_FEATURE_DSP: four channels from one 4-byte load of input and one of filter per tap,
 *   SXTAB16 adds the input offset to two channels at once, SMLABB/SMLATT multiply-accumulate each
 *   16-bit lane. __ARM_FEATURE_MVE: eight channels per block as int16 lanes, VMULLB/VMULLT into
 *   two int32x4 accumulators (the channel tail predicated), requantized four lanes at a time.
 * - depth_multiplier > 1 (and the C_out % 4 tail channels) run one output channel at a time over
 *   the same hoisted tap ranges.
 * Each output channel's sum has exactly the reference's terms (integer sums, order only differs).
 */
#include <string.h>

#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(__ARM_BIG_ENDIAN)
#define MCU_DW_MVE 1
#include <arm_mve.h>
#elif defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#define MCU_DW_DSP 1
#include <arm_acle.h>
#endif

/* The valid taps of one output position: `rows` x `cols` taps, tap (j, i) of channel 0 at
 * x + j * x_row + i * x_col in the input and w + j * w_row + i * w_col in the filter. */
typedef struct {
    const int8_t *x;
    const int8_t *w;
    int32_t rows;
    int32_t cols;
    int32_t x_row;
    int32_t x_col;
    int32_t w_row;
    int32_t w_col;
} taps_t;

/* sum over the taps of (x[c] + input_offset) * w[c] for one channel pair (x channel, w channel) */
static int32_t taps1(const taps_t *t, int32_t x_chan, int32_t w_chan, int32_t input_offset)
{
    int32_t acc = 0;
    const int32_t x_col = t->x_col;
    const int32_t w_col = t->w_col;
    const int32_t cols = t->cols;
    const int8_t *x_row = t->x + x_chan;
    const int8_t *w_row = t->w + w_chan;
    for (int32_t j = t->rows; j > 0; --j, x_row += t->x_row, w_row += t->w_row) {
        const int8_t *xp = x_row;
        const int8_t *wp = w_row;
        for (int32_t i = cols; i > 0; --i) {
            acc += ((int32_t)*xp + input_offset) * (int32_t)*wp;
            xp += x_col;
            wp += w_col;
        }
    }
    return acc;
}

#if defined(MCU_DW_MVE)

/* Channels c .. c + 7 (those below `channels`; lanes past it are predicated off): per channel
 * acc = sum over the taps of (x + input_offset) * w + bias, requantized. Inputs and weights are
 * loaded as eight int16 lanes (x + input_offset in [-255, 255]); VMULLB/VMULLT multiply the even
 * and the odd lanes into two int32x4 accumulators (channels c, c+2, .. and c+1, c+3, ..). */
static void channels8(const taps_t *t, int32_t c, int32_t channels,
                      const mcu_depthwise_conv_params_t *params, const int32_t *bias,
                      int8_t *out_px)
{
    const int32_t left = channels - c;
    const mve_pred16_t p = vctp16q((uint32_t)left);
    const int16x8_t offset = vdupq_n_s16((int16_t)params->q.input_offset);
    int32x4_t even = vdupq_n_s32(0);
    int32x4_t odd = vdupq_n_s32(0);
    const int32_t x_col = t->x_col;
    const int32_t w_col = t->w_col;
    const int32_t cols = t->cols;
    const int8_t *x_row = t->x + c;
    const int8_t *w_row = t->w + c;
    for (int32_t j = t->rows; j > 0; --j, x_row += t->x_row, w_row += t->w_row) {
        const int8_t *xp = x_row;
        const int8_t *wp = w_row;
        if (left >= 8) { /* the same loop without predication */
            for (int32_t i = cols; i > 0; --i) {
                const int16x8_t xv = vaddq_s16(vldrbq_s16(xp), offset);
                const int16x8_t wv = vldrbq_s16(wp);
                even = vaddq_s32(even, vmullbq_int_s16(xv, wv));
                odd = vaddq_s32(odd, vmulltq_int_s16(xv, wv));
                xp += x_col;
                wp += w_col;
            }
            continue;
        }
        for (int32_t i = cols; i > 0; --i) {
            const int16x8_t xv = vaddq_s16(vldrbq_z_s16(xp, p), offset);
            const int16x8_t wv = vldrbq_z_s16(wp, p);
            even = vaddq_s32(even, vmullbq_int_s16(xv, wv));
            odd = vaddq_s32(odd, vmulltq_int_s16(xv, wv));
            xp += x_col;
            wp += w_col;
        }
    }
    /* lane k of `even` is channel c + 2k, of `odd` channel c + 2k + 1 */
    const uint32x4_t lanes = vmulq_n_u32(vidupq_n_u32(0, 1), 2u);
    const mve_pred16_t p_even = vctp32q((uint32_t)(left + 1) / 2u);
    const mve_pred16_t p_odd = vctp32q((uint32_t)left / 2u);
    if (bias != NULL) {
        even = vaddq_s32(even, vldrwq_gather_shifted_offset_z_s32(bias + c, lanes, p_even));
        odd = vaddq_s32(odd, vldrwq_gather_shifted_offset_z_s32(bias + c + 1, lanes, p_odd));
    }
    even = output_stage4(
        even, vldrwq_gather_shifted_offset_z_s32(params->multiplier + c, lanes, p_even),
        vldrwq_gather_shifted_offset_z_s32(params->shift + c, lanes, p_even), &params->q);
    vstrbq_scatter_offset_p_s32(out_px + c, lanes, even, p_even);
    odd = output_stage4(
        odd, vldrwq_gather_shifted_offset_z_s32(params->multiplier + c + 1, lanes, p_odd),
        vldrwq_gather_shifted_offset_z_s32(params->shift + c + 1, lanes, p_odd), &params->q);
    vstrbq_scatter_offset_p_s32(out_px + c + 1, lanes, odd, p_odd);
}

/* depth_multiplier == 1: every channel, eight at a time (the last block predicated). Returns the
 * first channel left to the caller (none). */
static int32_t channel_blocks(const taps_t *t, const mcu_depthwise_conv_params_t *params,
                              const int32_t *bias, int8_t *out_px)
{
    const int32_t channels = params->output.c;
    for (int32_t c = 0; c < channels; c += 8) {
        channels8(t, c, channels, params, bias, out_px);
    }
    return channels;
}

#else

#if defined(MCU_DW_DSP)

/* Bytes 1 and 3 of v sign-extended, each plus the matching int16 lane of a. */
static inline int32_t sxtab16_ror8(int32_t a, uint32_t v)
{
    int32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(v));
    return r;
}

/* acc[k] = sum over the taps of (x[c + k] + input_offset) * w[c + k], k = 0..3: lanes of
 * (x + input_offset) in [-255, 255] and of w as int16, SMLABB/SMLATT one lane each. */
static void taps4(const taps_t *t, int32_t c, int32_t input_offset, int32_t acc[4])
{
    const int32_t offset2 = (int32_t)(((uint32_t)input_offset & 0xFFFFu) |
                                      ((uint32_t)input_offset << 16));
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    const int32_t x_col = t->x_col;
    const int32_t w_col = t->w_col;
    const int32_t cols = t->cols;
    const int8_t *x_row = t->x + c;
    const int8_t *w_row = t->w + c;
    for (int32_t j = t->rows; j > 0; --j, x_row += t->x_row, w_row += t->w_row) {
        const int8_t *xp = x_row;
        const int8_t *wp = w_row;
        for (int32_t i = cols; i > 0; --i) {
            const uint32_t xv = read_s8x4(xp);
            const uint32_t wv = read_s8x4(wp);
            const int32_t x02 = __sxtab16(offset2, (int32_t)xv);
            const int32_t x13 = sxtab16_ror8(offset2, xv);
            const int32_t w02 = __sxtb16((int32_t)wv);
            const int32_t w13 = sxtb16_ror8(wv);
            a0 = __smlabb(x02, w02, a0);
            a2 = __smlatt(x02, w02, a2);
            a1 = __smlabb(x13, w13, a1);
            a3 = __smlatt(x13, w13, a3);
            xp += x_col;
            wp += w_col;
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

#else /* pure C99 */

/* acc[k] = sum over the taps of (x[c + k] + input_offset) * w[c + k], k = 0..3 */
static void taps4(const taps_t *t, int32_t c, int32_t input_offset, int32_t acc[4])
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    const int32_t x_col = t->x_col;
    const int32_t w_col = t->w_col;
    const int32_t cols = t->cols;
    const int8_t *x_row = t->x + c;
    const int8_t *w_row = t->w + c;
    for (int32_t j = t->rows; j > 0; --j, x_row += t->x_row, w_row += t->w_row) {
        const int8_t *xp = x_row;
        const int8_t *wp = w_row;
        for (int32_t i = cols; i > 0; --i) {
            a0 += ((int32_t)xp[0] + input_offset) * (int32_t)wp[0];
            a1 += ((int32_t)xp[1] + input_offset) * (int32_t)wp[1];
            a2 += ((int32_t)xp[2] + input_offset) * (int32_t)wp[2];
            a3 += ((int32_t)xp[3] + input_offset) * (int32_t)wp[3];
            xp += x_col;
            wp += w_col;
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

#endif

/* Channels c .. c + 3: taps4 + bias, requantized. */
static void channels4(const taps_t *t, int32_t c, const mcu_depthwise_conv_params_t *params,
                      const int32_t *bias, int8_t *out_px)
{
    /* local copies: an int8_t store may alias anything, which would reload them per output */
    const mcu_quant_io_t q = params->q;
    const int32_t *const multiplier = params->multiplier + c;
    const int32_t *const shift = params->shift + c;
    int8_t *const out = out_px + c;
    int32_t acc[4];
    taps4(t, c, q.input_offset, acc);
    for (int32_t k = 0; k < 4; ++k) {
        const int32_t sum = acc[k] + (bias != NULL ? bias[c + k] : 0);
        out[k] = output_stage(sum, multiplier[k], shift[k], &q);
    }
}

/* depth_multiplier == 1: the channels in blocks of four. Returns the first channel left to the
 * caller (C_out % 4 of them). */
static int32_t channel_blocks(const taps_t *t, const mcu_depthwise_conv_params_t *params,
                              const int32_t *bias, int8_t *out_px)
{
    const int32_t channels = params->output.c;
    int32_t c = 0;
    for (; c + 4 <= channels; c += 4) {
        channels4(t, c, params, bias, out_px);
    }
    return c;
}

#endif

mcu_status_t mcu_depthwise_conv2d_s8(const mcu_depthwise_conv_params_t *params,
                                     const int8_t *input, const int8_t *filter,
                                     const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_dims_t *const in_dims = &params->input;
    const mcu_dims_t *const f_dims = &params->filter;
    const mcu_dims_t *const out_dims = &params->output;
    if (!dims_valid(in_dims) || !dims_valid(f_dims) || !dims_valid(out_dims) ||
        params->depth_multiplier < 1 || f_dims->n != 1 || f_dims->c != out_dims->c ||
        out_dims->c / params->depth_multiplier != in_dims->c ||
        out_dims->c % params->depth_multiplier != 0 || out_dims->n != in_dims->n ||
        params->stride_h < 1 || params->stride_w < 1 || params->dilation_h < 1 ||
        params->dilation_w < 1 || params->pad_top < 0 || params->pad_left < 0 ||
        !quant_io_valid(&params->q) || !shifts_valid(params->shift, out_dims->c)) {
        return MCU_ERR_ARG;
    }

    const int32_t batches = in_dims->n;
    const int32_t in_h = in_dims->h;
    const int32_t in_w = in_dims->w;
    const int32_t in_c = in_dims->c;
    const int32_t k_h = f_dims->h;
    const int32_t k_w = f_dims->w;
    const int32_t out_h = out_dims->h;
    const int32_t out_w = out_dims->w;
    const int32_t out_c = out_dims->c;
    const int32_t depth_multiplier = params->depth_multiplier;
    const int32_t stride_h = params->stride_h;
    const int32_t stride_w = params->stride_w;
    const int32_t dilation_h = params->dilation_h;
    const int32_t dilation_w = params->dilation_w;
    const int32_t input_offset = params->q.input_offset;
    const int32_t in_row = in_w * in_c; /* bytes of one input row */

    for (int32_t b = 0; b < batches; ++b) {
        const int8_t *const in_batch = input + b * in_h * in_row;
        for (int32_t out_y = 0; out_y < out_h; ++out_y) {
            const int32_t in_y_origin = out_y * stride_h - params->pad_top;
            int32_t ky_begin, ky_end;
            valid_taps(in_y_origin, dilation_h, k_h, in_h, &ky_begin, &ky_end);
            for (int32_t out_x = 0; out_x < out_w; ++out_x) {
                const int32_t in_x_origin = out_x * stride_w - params->pad_left;
                int32_t kx_begin, kx_end;
                valid_taps(in_x_origin, dilation_w, k_w, in_w, &kx_begin, &kx_end);
                int8_t *const out_px = output + ((b * out_h + out_y) * out_w + out_x) * out_c;

                /* acc[oc] = sum_{ky,kx} (in[b,iy,ix,ic] + input_offset) * w[0,ky,kx,oc] + bias[oc]
                 * with ic = oc / depth_multiplier, iy = in_y_origin + ky * dilation_h,
                 * ix = in_x_origin + kx * dilation_w, over the taps inside the input only:
                 * ky in [ky_begin, ky_end), kx in [kx_begin, kx_end). */
                taps_t t;
                t.rows = kx_end > kx_begin ? ky_end - ky_begin : 0;
                t.cols = kx_end - kx_begin;
                t.x_row = dilation_h * in_row;
                t.x_col = dilation_w * in_c;
                t.w_row = k_w * out_c;
                t.w_col = out_c;
                t.x = in_batch; /* only read when rows > 0 */
                if (t.rows > 0) {
                    t.x = in_batch + (in_y_origin + ky_begin * dilation_h) * in_row +
                          (in_x_origin + kx_begin * dilation_w) * in_c;
                }
                t.w = filter + (ky_begin * k_w + kx_begin) * out_c;

                int32_t oc = depth_multiplier == 1 ? channel_blocks(&t, params, bias, out_px) : 0;
                for (; oc < out_c; ++oc) {
                    const int32_t acc = taps1(&t, oc / depth_multiplier, oc, input_offset) +
                                        (bias != NULL ? bias[oc] : 0);
                    out_px[oc] = output_stage(acc, params->multiplier[oc], params->shift[oc],
                                              &params->q);
                }
            }
        }
    }
    return MCU_OK;
}
