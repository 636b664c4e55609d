/*
 * mcu_depthwise_conv2d_s8_mve.c - the MVE (Helium) path of mcu_depthwise_conv2d_s8 (Cortex-M55):
 * depth_multiplier == 1, eight channels at a time over the whole output (the last group
 * predicated), their weights as int16 and their requantization constants prepared once per
 * call into the scratch (mcu_dw_mve_scratch_t). Per tap: the eight inputs widened to int16 plus
 * the input offset, VMULLB/VMULLT by the weights into two int32x4 accumulators (even and odd
 * channels); per position: requant4 (mcu_kernel_util.h) of both, VMOVNB/VMOVNT back into
 * channel order, one narrowing store. 3x3 windows inside the input are unrolled.
 * Conditions (mcu_depthwise_conv2d_s8_path; else the generic loops run, their channel blocks
 * from mcu_dw_channel_blocks_mve at the end of this file): requant2_ok() for every channel,
 * KH * KW <= DW_MVE_MAX_TAPS (then |acc| < 2^29 + 25 * 255 * 128 < 2^30).
 */
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE

#include <arm_mve.h>
#include <stdint.h>

#include "mcu_depthwise_conv2d_s8_internal.h"

/* Channels c .. c + 7 (those below C; the others get zero weights and constants). */
static void mve_prepare(mcu_dw_mve_scratch_t *g, const mcu_depthwise_conv_params_t *p,
                        const int8_t *filter, const int32_t *bias, int32_t c)
{
    const int32_t out_c = p->output.c;
    const int32_t k_h = p->filter.h;
    const int32_t k_w = p->filter.w;
    const int pad = k_h == 3 && k_w == 3;
    const mve_pred16_t lanes = vctp16q((uint32_t)(out_c - c));
    int16x8_t w_sum = vdupq_n_s16(0);
    if (pad) { /* the zero border of the padded 5x5 layout */
        for (int32_t t = 0; t < 25; ++t) {
            vst1q_s16(g->w[t], w_sum);
        }
    }
    for (int32_t ky = 0; ky < k_h; ++ky) {
        for (int32_t kx = 0; kx < k_w; ++kx) {
            const int32_t at = pad ? (ky + 1) * 5 + kx + 1 : ky * k_w + kx;
            const int16x8_t w = vldrbq_z_s16(filter + (ky * k_w + kx) * out_c + c, lanes);
            vst1q_s16(g->w[at], w);
            w_sum = vaddq_s16(w_sum, w); /* |sum| <= 25 * 128 */
        }
    }
    /* even and odd channels: lanes c + 2 j and c + 2 j + 1 */
    const uint32x4_t even = vmulq_n_u32(vidupq_n_u32(0, 1), 2u);
    const mve_pred16_t p_even = vctp32q((uint32_t)(out_c - c + 1) / 2u);
    const mve_pred16_t p_odd = vctp32q((uint32_t)(out_c - c) / 2u);
    const int32x4_t zero = vdupq_n_s32(0);
    for (int32_t odd = 0; odd < 2; ++odd) {
        const mve_pred16_t pr = odd ? p_odd : p_even;
        const int32_t ch = c + odd;
        const int32x4_t b = bias != NULL ? vldrwq_gather_shifted_offset_z_s32(bias + ch, even, pr)
                                         : zero;
        const int32x4_t shift = vldrwq_gather_shifted_offset_z_s32(p->shift + ch, even, pr);
        const int32x4_t sum = odd ? vmovltq_s16(w_sum) : vmovlbq_s16(w_sum);
        vst1q_s32(g->bias[odd], b);
        vst1q_s32(g->bias_full[odd], vmlaq_n_s32(b, sum, p->q.input_offset));
        vst1q_s32(g->mult[odd], vldrwq_gather_shifted_offset_z_s32(p->multiplier + ch, even, pr));
        /* base = 2^(r - 1) + output_offset * 2^r, r = -shift (lanes past C: r = 1 and
         * multiplier 0; their outputs are not stored) */
        const int32x4_t r = vnegq_s32(vpselq_s32(shift, vdupq_n_s32(-1), pr));
        const int32x4_t base = vaddq_s32(vshlq_s32(vdupq_n_s32(1), vsubq_s32(r, vdupq_n_s32(1))),
                                         vshlq_s32(vdupq_n_s32(p->q.output_offset), r));
        vst1q_s32(g->shift[odd], vnegq_s32(r));
        vst1q_s32(g->base[odd], base);
    }
}

/* onnxruntime's rounding (MCU_ROUND_NEAREST_NO_TIE) for mve_prepare's channels c .. c + 7:
 * requant2_lift added to the sums' starting values, base' (requant2_no_tie). */
static void mve_prepare_no_tie(mcu_dw_mve_scratch_t *g, const mcu_depthwise_conv_params_t *p,
                               int32_t c)
{
    for (int32_t k = 0; k < 8 && c + k < p->output.c; ++k) {
        const int32_t odd = k & 1;
        const int32_t j = k >> 1;
        int32_t lift2;
        g->base[odd][j] = requant2_no_tie(p->multiplier[c + k], p->shift[c + k],
                                          p->q.output_offset, &lift2);
        g->bias[odd][j] += lift2 / 2;
        g->bias_full[odd][j] += lift2 / 2;
    }
}

/* acc_e/acc_o += (x + offset) * w over one tap: x the eight inputs at xp (lanes past `pred`
 * not read when `partial`) */
static inline __attribute__((always_inline)) void mve_tap(int32x4_t *acc_e, int32x4_t *acc_o,
                                                          const int8_t *xp, const int16_t *w,
                                                          int16x8_t offset, mve_pred16_t pred,
                                                          int partial, int with_offset)
{
    const int16x8_t x = partial ? vldrbq_z_s16(xp, pred) : vldrbq_s16(xp);
    const int16x8_t xv = with_offset ? vaddq_s16(x, offset) : x;
    const int16x8_t wv = vld1q_s16(w);
    *acc_e = vaddq_s32(*acc_e, vmullbq_int_s16(xv, wv));
    *acc_o = vaddq_s32(*acc_o, vmulltq_int_s16(xv, wv));
#if defined(__GNUC__)
    /* (the accumulators complete here: else gcc schedules all the taps' loads and products
     * first, and with eight Q registers spills them to the stack) */
    __asm__ volatile("" : "+w"(*acc_e), "+w"(*acc_o));
#endif
}

/* What a group's positions share. */
typedef struct {
    const mcu_depthwise_conv_params_t *p;
    const mcu_dw_mve_scratch_t *g;
    int32_t in_row;
    int32_t x_row;    /* dilation_h * in_row */
    int32_t x_col;    /* dilation_w * C */
    int32_t x_begin;  /* output columns [x_begin, x_end) have every kx inside the input */
    int32_t x_end;
    mve_pred16_t pred; /* the group's channels (all 8 unless the last group is partial) */
    int full;          /* act_min == -128 and act_max == 127 */
    int32_t w_row;     /* taps per weight row: 5 (3x3, padded), else KW */
    int32_t w_origin;  /* index of tap (0, 0) in mcu_dw_mve_scratch_t.w: 6 (3x3 padded), else 0 */
    int pad3;          /* 3x3 with border windows shifted inward (see mve_row) */
    int32_t borders;   /* pad3: the output columns outside [x_begin, x_end) (g->border_*) */
} mve_ctx_t;

/* One output position: `rows` x `cols` taps from x (input) and w (weights, row stride
 * w_row); `whole` (a constant where inlined) 1: they are all the filter's taps (the inputs are
 * then taken without the offset, bias_full holding it), 0: not, -1: not, and no unrolled 3x3
 * code either. Requantized into out. */
static inline __attribute__((always_inline)) void mve_px(const mve_ctx_t *m, const int8_t *x,
                                                         const int16_t *w, int32_t rows,
                                                         int32_t cols, int whole, int8_t *out,
                                                         int partial)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    const mcu_dw_mve_scratch_t *const g = m->g;
    const int16x8_t offset = vdupq_n_s16((int16_t)p->q.input_offset);
    const int32_t x_col = m->x_col;
    const mve_pred16_t pred = m->pred;
    int32x4_t acc_e = vld1q_s32(whole > 0 ? g->bias_full[0] : g->bias[0]);
    int32x4_t acc_o = vld1q_s32(whole > 0 ? g->bias_full[1] : g->bias[1]);
    if (whole >= 0 && m->pad3 && rows == 3 && cols == 3) { /* (whole == 0: a shifted border
                                                             * window, with the offset) */
        for (int32_t j = 0; j < 3; ++j, x += m->x_row, w += 40) {
            mve_tap(&acc_e, &acc_o, x, w, offset, pred, partial, !whole);
            mve_tap(&acc_e, &acc_o, x + x_col, w + 8, offset, pred, partial, !whole);
            mve_tap(&acc_e, &acc_o, x + 2 * x_col, w + 16, offset, pred, partial, !whole);
        }
    } else if (whole > 0) {
        for (int32_t j = 0; j < rows; ++j, x += m->x_row, w += 8 * m->w_row) {
            const int8_t *xp = x;
            for (int32_t i = 0; i < cols; ++i, xp += x_col) {
                mve_tap(&acc_e, &acc_o, xp, w + 8 * i, offset, pred, partial, 0);
            }
        }
    } else {
        for (int32_t j = 0; j < rows; ++j, x += m->x_row, w += 8 * m->w_row) {
            const int8_t *xp = x;
            for (int32_t i = 0; i < cols; ++i, xp += x_col) {
                mve_tap(&acc_e, &acc_o, xp, w + 8 * i, offset, pred, partial, 1);
            }
        }
    }
    int32x4_t e = requant4(acc_e, vld1q_s32(g->mult[0]), vld1q_s32(g->base[0]),
                           vld1q_s32(g->shift[0]));
    int32x4_t o = requant4(acc_o, vld1q_s32(g->mult[1]), vld1q_s32(g->base[1]),
                           vld1q_s32(g->shift[1]));
    int16x8_t v;
    if (m->full) { /* saturate to int16 while restoring the channel order, then to int8 */
        v = vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), e), o);
        v = vreinterpretq_s16_s8(vqmovnbq_s16(vdupq_n_s8(0), v));
    } else {
        const int32x4_t lo = vdupq_n_s32(p->q.act_min);
        const int32x4_t hi = vdupq_n_s32(p->q.act_max);
        e = vminq_s32(vmaxq_s32(e, lo), hi);
        o = vminq_s32(vmaxq_s32(o, lo), hi);
        v = vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), e), o);
    }
    if (partial) {
        vstrbq_p_s16(out, v, pred);
    } else {
        vstrbq_s16(out, v);
    }
}

/* One output row of a group: border columns (their valid taps; for pad3, the window shifted
 * inward by one row or column onto zero weights) and the columns between (all taps,
 * consecutive). in/out: the batch's tensors at channel c (out at row out_y). */
static inline __attribute__((always_inline)) void mve_row(const mve_ctx_t *m, const int8_t *in,
                                                          int8_t *out, int32_t out_y,
                                                          int partial)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    const int32_t in_c = p->input.c;
    const int32_t k_w = p->filter.w;
    const int32_t out_c = p->output.c;
    const int16_t *const w0 = m->g->w[m->w_origin];
    int32_t in_y = out_y * p->stride_h - p->pad_top;
    int32_t ky_begin, ky_end;
    valid_taps(in_y, p->dilation_h, p->filter.h, p->input.h, &ky_begin, &ky_end);
    int32_t rows = ky_end - ky_begin;
    int32_t row_shift = 0; /* pad3: rows ky_begin .. + 3 from row in_y + row_shift */
    if (m->pad3 && rows != 3) {
        row_shift = ky_begin > 0 ? ky_begin : ky_end - 3;
    }
    const int rows_whole = rows == p->filter.h;
    const int8_t *const x_rows =
        m->pad3 ? in + (in_y + row_shift * p->dilation_h) * m->in_row
                : (rows > 0 ? in + (in_y + ky_begin * p->dilation_h) * m->in_row : in);
    const int16_t *const w_rows =
        m->pad3 ? w0 + 8 * m->w_row * row_shift : w0 + 8 * m->w_row * ky_begin;
    for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
        if (out_x >= m->x_begin && out_x < m->x_end) {
            /* the columns whose windows are inside the input horizontally */
            const int32_t x_step = p->stride_w * in_c;
            const int8_t *x = x_rows + (out_x * p->stride_w - p->pad_left) * in_c;
            int8_t *o = out + out_x * out_c;
            if (m->pad3 && rows_whole) { /* (whole and the shifts fixed at compile time) */
                for (; out_x < m->x_end; ++out_x, x += x_step, o += out_c) {
                    mve_px(m, x, w_rows, 3, 3, 1, o, partial);
                }
            } else if (m->pad3) {
                for (; out_x < m->x_end; ++out_x, x += x_step, o += out_c) {
                    mve_px(m, x, w_rows, 3, 3, 0, o, partial);
                }
            } else if (rows_whole) {
                for (; out_x < m->x_end; ++out_x, x += x_step, o += out_c) {
                    mve_px(m, x, w_rows, rows, k_w, 1, o, partial);
                }
            } else {
                for (; out_x < m->x_end; ++out_x, x += x_step, o += out_c) {
                    mve_px(m, x, w_rows, rows, k_w, 0, o, partial);
                }
            }
            if (out_x == p->output.w) {
                break;
            }
        }
        if (m->pad3) {
            continue; /* (below) */
        }
        const int32_t in_x = out_x * p->stride_w - p->pad_left;
        int32_t kx_begin, kx_end;
        valid_taps(in_x, p->dilation_w, k_w, p->input.w, &kx_begin, &kx_end);
        const int32_t cols = rows > 0 ? kx_end - kx_begin : 0;
        const int8_t *const x =
            cols > 0 ? x_rows + (in_x + kx_begin * p->dilation_w) * in_c : x_rows;
        mve_px(m, x, w_rows + 8 * kx_begin, cols > 0 ? rows : 0, cols, 0, out + out_x * out_c,
               partial);
    }
    if (m->pad3) { /* the border columns, their windows shifted inward */
        const mcu_dw_mve_scratch_t *const g = m->g;
        for (int32_t i = 0; i < m->borders; ++i) {
            mve_px(m, x_rows + g->border_in[i] * in_c, w_rows + 8 * g->border_w[i], 3, 3, 0,
                   out + g->border_out[i] * out_c, partial);
        }
    }
}

/* One group over the whole output (all of a batch's rows); `partial`: its channels end before
 * the eighth. */
DW_NOINLINE static void mve_group(const mve_ctx_t *m, const int8_t *in, int8_t *out)
{
    const int32_t out_row = m->p->output.w * m->p->output.c;
    for (int32_t y = 0; y < m->p->output.h; ++y, out += out_row) {
        mve_row(m, in, out, y, 0);
    }
}

/* The last group when C % 8 != 0: every position through the generic tap loops (the valid
 * taps, with the offset; compact rather than fast). */
DW_NOINLINE static void mve_group_partial(const mve_ctx_t *m, const int8_t *in, int8_t *out)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    const int32_t in_c = p->input.c;
    const int32_t k_w = p->filter.w;
    const int16_t *const w0 = m->g->w[m->w_origin];
    for (int32_t out_y = 0; out_y < p->output.h; ++out_y) {
        const int32_t in_y = out_y * p->stride_h - p->pad_top;
        int32_t ky_begin, ky_end;
        valid_taps(in_y, p->dilation_h, p->filter.h, p->input.h, &ky_begin, &ky_end);
        for (int32_t out_x = 0; out_x < p->output.w; ++out_x, out += p->output.c) {
            const int32_t in_x = out_x * p->stride_w - p->pad_left;
            int32_t kx_begin, kx_end;
            valid_taps(in_x, p->dilation_w, k_w, p->input.w, &kx_begin, &kx_end);
            const int32_t rows = kx_end > kx_begin ? ky_end - ky_begin : 0;
            const int8_t *const x =
                rows > 0 ? in + (in_y + ky_begin * p->dilation_h) * m->in_row +
                               (in_x + kx_begin * p->dilation_w) * in_c
                         : in;
            mve_px(m, x, w0 + 8 * (m->w_row * ky_begin + kx_begin), rows, kx_end - kx_begin, -1,
                   out, 1);
        }
    }
}

/* Along one axis of a 3x3 filter: whether every window has its valid taps in [1, 3), [0, 2)
 * or [0, 3) and the input holds three taps (size >= 2 * dilation + 1). */
static int mve_shifts_ok(int32_t pad, int32_t stride, int32_t dilation, int32_t size,
                         int32_t out_size)
{
    if (size < 2 * dilation + 1) {
        return 0;
    }
    for (int32_t o = 0; o < out_size; ++o) {
        int32_t begin, end;
        valid_taps(o * stride - pad, dilation, 3, size, &begin, &end);
        if (end - begin < 2) {
            return 0;
        }
    }
    return 1;
}

/* The whole convolution through the MVE path (mcu_depthwise_conv2d_s8_path() == MCU_PATH_MVE). */
mcu_status_t mcu_dw_mve(mcu_dw_mve_scratch_t *scratch, const mcu_depthwise_conv_params_t *p,
                        const int8_t *input, const int8_t *filter, const int32_t *bias,
                        int8_t *output)
{
    const int32_t in_w = p->input.w;
    const int32_t out_c = p->output.c;
    const int32_t in_batch = p->input.h * in_w * p->input.c;
    const int32_t out_batch = p->output.h * p->output.w * out_c;
    mcu_dw_mve_scratch_t *const g = scratch;
    mve_ctx_t m;
    m.p = p;
    m.g = g;
    m.in_row = in_w * p->input.c;
    m.x_row = p->dilation_h * m.in_row;
    m.x_col = p->dilation_w * p->input.c;
    m.full = p->q.act_min == MCU_INT8_MIN && p->q.act_max == MCU_INT8_MAX;
    /* output columns whose window lies inside the input horizontally: in_x >= 0 and
     * in_x + (KW - 1) * dilation_w < W_in, with in_x = out_x * stride_w - pad_left */
    const int32_t last = in_w - 1 - (p->filter.w - 1) * p->dilation_w + p->pad_left;
    m.x_begin = (p->pad_left + p->stride_w - 1) / p->stride_w;
    m.x_end = last < 0 ? 0 : last / p->stride_w + 1;
    if (m.x_end > p->output.w) {
        m.x_end = p->output.w;
    }
    if (m.x_begin > p->output.w) {
        m.x_begin = p->output.w;
    }
    if (m.x_end < m.x_begin) {
        m.x_end = m.x_begin;
    }
    const int three = p->filter.h == 3 && p->filter.w == 3;
    m.w_row = three ? 5 : p->filter.w;
    m.w_origin = three ? 6 : 0;
    /* pad3: every window sticks out by at most one tap row or column on one side, and the
     * input holds a shifted window (3 rows and 3 columns) */
    m.pad3 = three && mve_shifts_ok(p->pad_top, p->stride_h, p->dilation_h, p->input.h,
                                    p->output.h) &&
             mve_shifts_ok(p->pad_left, p->stride_w, p->dilation_w, in_w, p->output.w);
    m.borders = 0;
    for (int32_t out_x = 0; out_x < p->output.w && m.pad3; ++out_x) {
        if (out_x >= m.x_begin && out_x < m.x_end) {
            continue;
        }
        if (m.borders == DW_MVE_BORDERS) {
            m.pad3 = 0; /* (too many: the generic border path) */
            break;
        }
        const int32_t in_x = out_x * p->stride_w - p->pad_left;
        int32_t kx_begin, kx_end;
        valid_taps(in_x, p->dilation_w, 3, in_w, &kx_begin, &kx_end);
        const int32_t shift = kx_begin > 0 ? kx_begin : kx_end - 3;
        g->border_out[m.borders] = out_x;
        g->border_in[m.borders] = in_x + shift * p->dilation_w;
        g->border_w[m.borders] = shift;
        ++m.borders;
    }
    for (int32_t c = 0; c < out_c; c += 8) {
        mve_prepare(g, p, filter, bias, c);
        if (p->q.rounding == MCU_ROUND_NEAREST_NO_TIE) {
            mve_prepare_no_tie(g, p, c);
        }
        m.pred = vctp16q((uint32_t)(out_c - c));
        for (int32_t b = 0; b < p->input.n; ++b) {
            if (c + 8 <= out_c) {
                mve_group(&m, input + b * in_batch + c, output + b * out_batch + c);
            } else {
                mve_group_partial(&m, input + b * in_batch + c, output + b * out_batch + c);
            }
        }
    }
    return MCU_OK;
}

/* Channels c .. c + 7 (those below `channels`; lanes past it are predicated off): per channel
 * acc = sum over the taps of (x + input_offset) * w + bias, requantized. Inputs and weights are
 * loaded as eight int16 lanes (x + input_offset in [-255, 255]); VMULLB/VMULLT multiply the even
 * and the odd lanes into two int32x4 accumulators (channels c, c+2, .. and c+1, c+3, ..). */
static void channels8(const mcu_dw_taps_t *t, int32_t c, int32_t channels,
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

/* The generic loops' channel blocks on MVE (depth_multiplier == 1): every channel of one output
 * position, eight at a time (the last block predicated). Returns the first channel left to the
 * caller (none). */
int32_t mcu_dw_channel_blocks_mve(const mcu_dw_taps_t *t,
                                  const mcu_depthwise_conv_params_t *params,
                                  const int32_t *bias, int8_t *out_px)
{
    const int32_t channels = params->output.c;
    for (int32_t c = 0; c < channels; c += 8) {
        channels8(t, c, channels, params, bias, out_px);
    }
    return channels;
}

#endif
