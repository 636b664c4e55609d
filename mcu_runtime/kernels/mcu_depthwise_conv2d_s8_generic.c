/*
 * mcu_depthwise_conv2d_s8_generic.c - the generic path of mcu_depthwise_conv2d_s8, on every target
 * (the host included): any filter, stride, dilation, padding, depth multiplier and
 * requantization.
 *
 * Per output position the valid tap ranges [ky_begin, ky_end) x [kx_begin, kx_end) are computed
 * once; the tap loops hold no bounds checks and no index arithmetic beyond two pointer steps.
 * With depth_multiplier == 1 the channels are processed in blocks, channel-contiguous in NHWC
 * input and filter alike: four per block in plain C; on DSP targets four from one 4-byte load of
 * input and one of filter per tap (taps4); on MVE targets eight as int16 lanes
 * (mcu_dw_channel_blocks_mve, _mve.c). depth_multiplier > 1 (and the C_out % 4 tail
 * channels) run one output channel at a time over the same hoisted tap ranges.
 */
#include <stdint.h>

#include "mcu_depthwise_conv2d_s8_internal.h"

/* The sums of one tap walk, and the input offset they add (on DSP targets in both int16 lanes). */
typedef struct {
    int32_t a[4];
    int32_t offset;
} dw_sums_t;

/* One tap: the sums += the products of the input at xp and the filter at wp. */
typedef void (*dw_tap_t)(dw_sums_t *s, const int8_t *xp, const int8_t *wp);

/* Every valid tap of t, from input channel x_chan and filter channel w_chan, in (row, column)
 * order: tap(s, xp, wp). Always inline with a constant tap (a DW_INLINE function below), as
 * bcast_run: the call becomes direct and the loops compile as if written out, s in registers. */
DW_INLINE void walk(const mcu_dw_taps_t *t, int32_t x_chan, int32_t w_chan, dw_tap_t tap,
                    dw_sums_t *s)
{
    const int32_t x_col = t->x_col;
    const int32_t w_col = t->w_col;
    const int32_t cols = t->cols;
    const int8_t *x_row = t->x + x_chan;
    const int8_t *w_row = t->w + w_chan;
    for (int32_t j = t->rows; j > 0; --j, x_row += t->x_row, w_row += t->w_row) {
        const int8_t *xp = x_row;
        const int8_t *wp = w_row;
        for (int32_t i = cols; i > 0; --i) {
            tap(s, xp, wp);
            xp += x_col;
            wp += w_col;
        }
    }
}

DW_INLINE void tap1(dw_sums_t *s, const int8_t *xp, const int8_t *wp)
{
    s->a[0] += ((int32_t)*xp + s->offset) * (int32_t)*wp;
}

/* sum over the taps of (x[c] + input_offset) * w[c] for one channel pair (x channel, w channel) */
static int32_t taps1(const mcu_dw_taps_t *t, int32_t x_chan, int32_t w_chan, int32_t input_offset)
{
    dw_sums_t s = {{0, 0, 0, 0}, input_offset};
    walk(t, x_chan, w_chan, tap1, &s);
    return s.a[0];
}

#if MCU_ISA_NATIVE == MCU_ISA_MVE

#define channel_blocks mcu_dw_channel_blocks_mve /* eight channels per block (_mve.c) */

#else

/* Four channels of one tap. On DSP targets one 4-byte load of input and one of filter: lanes of
 * (x + input_offset) in [-255, 255] and of w as int16, SMLABB/SMLATT one lane each. */
DW_INLINE void tap4(dw_sums_t *s, const int8_t *xp, const int8_t *wp)
{
#if MCU_ISA_NATIVE == MCU_ISA_DSP
    const uint32_t xv = read_s8x4(xp);
    const uint32_t wv = read_s8x4(wp);
    const int32_t x02 = __sxtab16(s->offset, (int32_t)xv);
    const int32_t x13 = sxtab16_ror8(s->offset, xv);
    const int32_t w02 = __sxtb16((int32_t)wv);
    const int32_t w13 = sxtb16_ror8(wv);
    s->a[0] = __smlabb(x02, w02, s->a[0]);
    s->a[2] = __smlatt(x02, w02, s->a[2]);
    s->a[1] = __smlabb(x13, w13, s->a[1]);
    s->a[3] = __smlatt(x13, w13, s->a[3]);
#else
    s->a[0] += ((int32_t)xp[0] + s->offset) * (int32_t)wp[0];
    s->a[1] += ((int32_t)xp[1] + s->offset) * (int32_t)wp[1];
    s->a[2] += ((int32_t)xp[2] + s->offset) * (int32_t)wp[2];
    s->a[3] += ((int32_t)xp[3] + s->offset) * (int32_t)wp[3];
#endif
}

/* acc[k] = sum over the taps of (x[c + k] + input_offset) * w[c + k], k = 0..3 (on DSP targets
 * out of line, as it was in _dsp.c: the channel loops keep their registers). */
#if MCU_ISA_NATIVE == MCU_ISA_DSP
DW_NOINLINE
#endif
static void taps4(const mcu_dw_taps_t *t, int32_t c, int32_t input_offset, int32_t acc[4])
{
#if MCU_ISA_NATIVE == MCU_ISA_DSP
    const int32_t offset = (int32_t)(((uint32_t)input_offset & 0xFFFFu) |
                                     ((uint32_t)input_offset << 16));
#else
    const int32_t offset = input_offset;
#endif
    dw_sums_t s = {{0, 0, 0, 0}, offset};
    walk(t, c, c, tap4, &s);
    acc[0] = s.a[0];
    acc[1] = s.a[1];
    acc[2] = s.a[2];
    acc[3] = s.a[3];
}

/* Channels c .. c + 3: taps4 + bias, requantized. */
static void channels4(const mcu_dw_taps_t *t, int32_t c, const mcu_depthwise_conv_params_t *params,
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
        out[k] = mcu_output_stage_tflite(sum, multiplier[k], shift[k], &q);
    }
}

/* channel_blocks() in onnxruntime's rounding, out of line: the TFLite loops keep their code */
DW_NOINLINE static int32_t channel_blocks_rne(const mcu_dw_taps_t *t,
                                              const mcu_depthwise_conv_params_t *params,
                                              const int32_t *bias, int8_t *out_px)
{
    const mcu_quant_io_t q = params->q;
    int32_t c = 0;
    for (; c + 4 <= params->output.c; c += 4) {
        int32_t acc[4];
        taps4(t, c, q.input_offset, acc);
        for (int32_t k = 0; k < 4; ++k) {
            const int32_t sum = acc[k] + (bias != NULL ? bias[c + k] : 0);
            out_px[c + k] = mcu_output_stage_rne(sum, params->multiplier[c + k], params->shift[c + k], &q);
        }
    }
    return c;
}

#if defined(__riscv) && !defined(MCU_OPTIMIZE_SIZE)
#define DW_REQUANT2 1
/* channel_blocks() on RV32 when every channel allows mcu_requant2's arithmetic (TFLite rounding,
 * mcu_requant2_ok() constants): mcu_output_stage_requant2, about 15 instructions per output not
 * 40 (a 3x3 depthwise output has nine MACs). */
static int32_t channel_blocks_requant2(const mcu_dw_taps_t *t,
                                       const mcu_depthwise_conv_params_t *params,
                                       const int32_t *bias, int8_t *out_px)
{
    const mcu_quant_io_t q = params->q;
    const int32_t channels = params->output.c;
    int32_t c = 0;
    for (; c + 4 <= channels; c += 4) {
        int32_t acc[4];
        taps4(t, c, q.input_offset, acc);
        for (int32_t k = 0; k < 4; ++k) {
            const int32_t sum = acc[k] + (bias != NULL ? bias[c + k] : 0);
            out_px[c + k] = mcu_output_stage_requant2(sum, params->multiplier[c + k],
                                                      params->shift[c + k], &q);
        }
    }
    return c;
}

/* gcc's pre-allocation scheduling hoists the loads of a tap ahead of its MACs and spills the
 * twelve sums: off in the pair loop (as in mcu_dot_s8.c). */
#if defined(__GNUC__) && !defined(__clang__)
#define DW_PAIR_LOOP DW_NOINLINE __attribute__((optimize("no-schedule-insns")))
#else
#define DW_PAIR_LOOP DW_NOINLINE
#endif

/* The channels in blocks of four at two output positions with the same valid taps (the second
 * window xb_step bytes after the first), each weight byte loaded once for both, the input offset
 * out of the tap loop: acc = sum x * w + input_offset * sum w + bias (the same integer as the
 * reference's sum of (x + input_offset) * w), requantized by mcu_output_stage_requant2. Returns the
 * first channel left to the caller (C_out % 4 of them). */
DW_PAIR_LOOP static int32_t channel_pairs_requant2(const mcu_dw_taps_t *t, int32_t xb_step,
                                                   const mcu_depthwise_conv_params_t *params,
                                                   const int32_t *bias, int8_t *out_a,
                                                   int8_t *out_b)
{
    const mcu_quant_io_t q = params->q;
    const int32_t channels = params->output.c;
    const int32_t x_col = t->x_col;
    const int32_t w_col = t->w_col;
    int32_t c = 0;
    for (; c + 4 <= channels; c += 4) {
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        const int8_t *x_row = t->x + c;
        const int8_t *w_row = t->w + c;
        for (int32_t j = t->rows; j > 0; --j, x_row += t->x_row, w_row += t->w_row) {
            const int8_t *xp = x_row;
            const int8_t *wp = w_row;
            for (int32_t i = t->cols; i > 0; --i) {
                const int8_t *const xq = xp + xb_step;
/* channel k of the block: its weight summed and multiplied with both positions' inputs */
#define DW_PAIR_TAP(k)                                                                           \
    do {                                                                                         \
        const int32_t w = wp[k];                                                                 \
        s##k += w;                                                                               \
        a##k += xp[k] * w;                                                                       \
        b##k += xq[k] * w;                                                                       \
    } while (0)
                DW_PAIR_TAP(0);
                DW_PAIR_TAP(1);
                DW_PAIR_TAP(2);
                DW_PAIR_TAP(3);
#undef DW_PAIR_TAP
                xp += x_col;
                wp += w_col;
            }
        }
        const int32_t *const m = params->multiplier + c;
        const int32_t *const sh = params->shift + c;
        const int32_t k0 = q.input_offset * s0 + (bias != NULL ? bias[c] : 0);
        const int32_t k1 = q.input_offset * s1 + (bias != NULL ? bias[c + 1] : 0);
        const int32_t k2 = q.input_offset * s2 + (bias != NULL ? bias[c + 2] : 0);
        const int32_t k3 = q.input_offset * s3 + (bias != NULL ? bias[c + 3] : 0);
        out_a[c] = mcu_output_stage_requant2(a0 + k0, m[0], sh[0], &q);
        out_b[c] = mcu_output_stage_requant2(b0 + k0, m[0], sh[0], &q);
        out_a[c + 1] = mcu_output_stage_requant2(a1 + k1, m[1], sh[1], &q);
        out_b[c + 1] = mcu_output_stage_requant2(b1 + k1, m[1], sh[1], &q);
        out_a[c + 2] = mcu_output_stage_requant2(a2 + k2, m[2], sh[2], &q);
        out_b[c + 2] = mcu_output_stage_requant2(b2 + k2, m[2], sh[2], &q);
        out_a[c + 3] = mcu_output_stage_requant2(a3 + k3, m[3], sh[3], &q);
        out_b[c + 3] = mcu_output_stage_requant2(b3 + k3, m[3], sh[3], &q);
    }
    return c;
}

/* Whether channel_blocks_requant2 applies: |acc| < 2^30 for |bias| < 2^29 and at most 16384
 * taps of |(x + input_offset) * w| <= 255 * 128. */
static int dw_requant2(const mcu_depthwise_conv_params_t *p, const int32_t *bias)
{
    if (p->q.rounding != MCU_ROUND_TFLITE || p->depth_multiplier != 1 ||
        p->filter.h * p->filter.w > 16384) {
        return 0;
    }
    for (int32_t c = 0; c < p->output.c; ++c) {
        if (!mcu_requant2_ok(p->multiplier[c], p->shift[c], bias != NULL ? bias[c] : 0)) {
            return 0;
        }
    }
    return 1;
}
#endif

/* depth_multiplier == 1: the channels in blocks of four. Returns the first channel left to the
 * caller (C_out % 4 of them). */
static int32_t channel_blocks(const mcu_dw_taps_t *t, const mcu_depthwise_conv_params_t *params,
                              const int32_t *bias, int8_t *out_px)
{
    if (params->q.rounding != MCU_ROUND_TFLITE) {
        return channel_blocks_rne(t, params, bias, out_px);
    }
    const int32_t channels = params->output.c;
    int32_t c = 0;
    for (; c + 4 <= channels; c += 4) {
        channels4(t, c, params, bias, out_px);
    }
    return c;
}

#endif

mcu_status_t mcu_dw_generic(const mcu_depthwise_conv_params_t *params, const int8_t *input,
                            const int8_t *filter, const int32_t *bias, int8_t *output,
                            int32_t first_oc)
{
    const int32_t batches = params->input.n;
    const int32_t in_h = params->input.h;
    const int32_t in_w = params->input.w;
    const int32_t in_c = params->input.c;
    const int32_t k_h = params->filter.h;
    const int32_t k_w = params->filter.w;
    const int32_t out_h = params->output.h;
    const int32_t out_w = params->output.w;
    const int32_t out_c = params->output.c;
    const int32_t depth_multiplier = params->depth_multiplier;
    const int32_t stride_h = params->stride_h;
    const int32_t stride_w = params->stride_w;
    const int32_t dilation_h = params->dilation_h;
    const int32_t dilation_w = params->dilation_w;
    const int32_t input_offset = params->q.input_offset;
    const int32_t in_row = in_w * in_c; /* bytes of one input row */
#if defined(DW_REQUANT2)
    const int requant2 = first_oc == 0 && dw_requant2(params, bias);
    const uintptr_t in_lo = (uintptr_t)input;
    const uintptr_t in_hi = in_lo + (uintptr_t)batches * (uintptr_t)in_h * (uintptr_t)in_row;
    const uintptr_t out_lo = (uintptr_t)output;
    const uintptr_t out_hi = out_lo + (uintptr_t)batches * (uintptr_t)out_h * (uintptr_t)out_w *
                                          (uintptr_t)out_c;
    const int apart = out_hi <= in_lo || in_hi <= out_lo;
#endif
    for (int32_t b = 0; b < batches; ++b) {
        const int8_t *const in_batch = input + b * in_h * in_row;
        for (int32_t out_y = 0; out_y < out_h; ++out_y) {
            const int32_t in_y_origin = out_y * stride_h - params->pad_top;
            int32_t ky_begin, ky_end;
            valid_taps(in_y_origin, dilation_h, k_h, in_h, &ky_begin, &ky_end);
#if defined(DW_REQUANT2)
            /* rows out_y and out_y + 1 together (their valid taps the same): only when the output
             * does not overlay the input, as row out_y + 1 is then written before row out_y's
             * later windows are read */
            int row_pair = 0;
            if (requant2 && apart && out_y + 1 < out_h) {
                int32_t ky_b, ky_e;
                valid_taps(in_y_origin + stride_h, dilation_h, k_h, in_h, &ky_b, &ky_e);
                row_pair = ky_b == ky_begin && ky_e == ky_end;
            }
#endif
            for (int32_t out_x = 0; out_x < out_w; ++out_x) {
                const int32_t in_x_origin = out_x * stride_w - params->pad_left;
                int32_t kx_begin, kx_end;
                valid_taps(in_x_origin, dilation_w, k_w, in_w, &kx_begin, &kx_end);
                int8_t *const out_px = output + ((b * out_h + out_y) * out_w + out_x) * out_c;

                /* acc[oc] = sum_{ky,kx} (in[b,iy,ix,ic] + input_offset) * w[0,ky,kx,oc] + bias[oc]
                 * with ic = oc / depth_multiplier, iy = in_y_origin + ky * dilation_h,
                 * ix = in_x_origin + kx * dilation_w, over the taps inside the input only:
                 * ky in [ky_begin, ky_end), kx in [kx_begin, kx_end). */
                mcu_dw_taps_t t;
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

#if defined(DW_REQUANT2)
                /* two positions with the same valid taps at once: the one below (rows paired),
                 * else the next along the row */
                if (requant2) {
                    int32_t step = 0;
                    int8_t *out_b = NULL;
                    if (row_pair) {
                        step = stride_h * in_row;
                        out_b = out_px + out_w * out_c;
                    } else if (out_x + 1 < out_w) {
                        int32_t kx_b, kx_e;
                        valid_taps(in_x_origin + stride_w, dilation_w, k_w, in_w, &kx_b, &kx_e);
                        if (kx_b == kx_begin && kx_e == kx_end) {
                            step = stride_w * in_c;
                            out_b = out_px + out_c;
                        }
                    }
                    if (out_b != NULL) {
                        mcu_dw_taps_t tb = t;
                        if (t.rows > 0) {
                            tb.x = t.x + step;
                        }
                        int32_t oc = channel_pairs_requant2(&t, step, params, bias, out_px, out_b);
                        for (; oc < out_c; ++oc) {
                            const int32_t b_oc = bias != NULL ? bias[oc] : 0;
                            out_px[oc] = mcu_output_stage(taps1(&t, oc, oc, input_offset) + b_oc,
                                                          params->multiplier[oc], params->shift[oc],
                                                          &params->q);
                            out_b[oc] = mcu_output_stage(taps1(&tb, oc, oc, input_offset) + b_oc,
                                                         params->multiplier[oc], params->shift[oc],
                                                         &params->q);
                        }
                        out_x += row_pair ? 0 : 1;
                        continue;
                    }
                }
#endif
                int32_t oc = first_oc;
                if (oc == 0 && depth_multiplier == 1) {
#if defined(DW_REQUANT2)
                    oc = requant2 ? channel_blocks_requant2(&t, params, bias, out_px)
                                  : channel_blocks(&t, params, bias, out_px);
#else
                    oc = channel_blocks(&t, params, bias, out_px);
#endif
                }
                for (; oc < out_c; ++oc) {
                    const int32_t acc = taps1(&t, oc / depth_multiplier, oc, input_offset) +
                                        (bias != NULL ? bias[oc] : 0);
                    out_px[oc] = mcu_output_stage(acc, params->multiplier[oc], params->shift[oc],
                                              &params->q);
                }
            }
#if defined(DW_REQUANT2)
            out_y += row_pair;
#endif
        }
    }
    return MCU_OK;
}
