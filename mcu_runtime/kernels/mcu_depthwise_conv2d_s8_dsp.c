/*
 * mcu_depthwise_conv2d_s8_dsp.c - the DSP path of mcu_depthwise_conv2d_s8 (__ARM_FEATURE_DSP:
 * Cortex-M4, M7, M33, ...): depth_multiplier == 1, the channels in blocks of four, one block at a
 * time over the whole output, each block in two passes of two channels: c, c + 2 (the even bytes
 * of a 4-byte load) and c + 1, c + 3 (the odd bytes). A block's weights and requantization
 * constants are prepared once per call into the scratch (mcu_dw_dsp_scratch_t).
 *
 * Multiply-accumulate: a 4-byte load brings four channels of one input pixel; SXTAB16 adds the
 * input offset to the pass's two channels as int16 lanes, SMLABB/SMLATT multiply each lane by the
 * matching int16 lane of the prepared weights. 3x3 filters with vertical stride and dilation 1
 * compute output rows in pairs (../support/mcu_dw_pair3x3_dsp.c): each input row loaded and
 * unpacked serves both. Other rows and filters run row_sweep: one output row, all four channels
 * of each load (valid taps only).
 *
 * Requantization in four instructions (requant2 in mcu_kernel_util.h): the weights are stored
 * doubled, so the accumulators hold 2 * acc exactly. Conditions (mcu_depthwise_conv2d_s8_path;
 * else the generic loops run): requant2_ok() for every channel, KH * KW <= DW_DSP_MAX_TAPS (then
 * |acc| < 2^29 + 25 * 255 * 128 < 2^30).
 *
 * Also here: mcu_dw_taps4_dsp, the four-channel block of the generic loops on DSP targets.
 */
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_DSP

#include <arm_acle.h>
#include <stdint.h>

#include "mcu_depthwise_conv2d_s8_internal.h"

/* acc[k] = sum over the taps of (x[c + k] + input_offset) * w[c + k], k = 0..3: lanes of
 * (x + input_offset) in [-255, 255] and of w as int16, SMLABB/SMLATT one lane each. */
void mcu_dw_taps4_dsp(const mcu_dw_taps_t *t, int32_t c, int32_t input_offset, int32_t acc[4])
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

/* acc (mcu_dw_group4_t order) += the four channels of the input pixel at x times the weights w */
DW_INLINE void mac4(int32_t *a0, int32_t *a1, int32_t *a2, int32_t *a3, const int8_t *x,
                    const int32_t w[2], int32_t offset2)
{
    const uint32_t v = read_s8x4(x);
    const int32_t even = __sxtab16(offset2, (int32_t)v);
    const int32_t odd = sxtab16_ror8(offset2, v);
    *a0 = __smlabb(even, w[0], *a0);
    *a1 = __smlatt(even, w[0], *a1);
    *a2 = __smlabb(odd, w[1], *a2);
    *a3 = __smlatt(odd, w[1], *a3);
}

/* One output position, four channels: taps (j, i), j < rows, i < cols (cols == k_w known at
 * compile time when it is 3), at x + j * x_row + i * x_col (input) and w[j * k_w + i]
 * (weights); then requantized into out[0..3]. */
DW_INLINE void row4_px(const mcu_dw_pass_t *s, const int8_t *x, const int32_t (*w)[2],
                       int32_t rows, int32_t cols, int8_t *out)
{
    const mcu_dw_group4_t *const g = s->g;
    const int32_t x_row = s->p->dilation_h * s->in_row;
    const int32_t x_col = s->x_col;
    const int32_t k_w = s->p->filter.w;
    const int32_t offset2 = s->offset2;
    int32_t a0 = g->bias2[0], a1 = g->bias2[1], a2 = g->bias2[2], a3 = g->bias2[3];
    for (int32_t j = rows; j > 0; --j, x += x_row, w += k_w) {
        if (cols == 3) {
            mac4(&a0, &a1, &a2, &a3, x, w[0], offset2);
            mac4(&a0, &a1, &a2, &a3, x + x_col, w[1], offset2);
            mac4(&a0, &a1, &a2, &a3, x + 2 * x_col, w[2], offset2);
            continue;
        }
        const int8_t *xp = x;
        for (int32_t i = 0; i < cols; ++i, xp += x_col) {
            mac4(&a0, &a1, &a2, &a3, xp, w[i], offset2);
        }
    }
    a0 = requant2(a0, g->mult[0], g->base[0], g->right[0]);
    a1 = requant2(a1, g->mult[1], g->base[1], g->right[1]);
    a2 = requant2(a2, g->mult[2], g->base[2], g->right[2]);
    a3 = requant2(a3, g->mult[3], g->base[3], g->right[3]);
    if (!s->full) {
        const int32_t lo = s->p->q.act_min;
        const int32_t hi = s->p->q.act_max;
        a0 = mcu_clamp_s32(a0, lo, hi);
        a1 = mcu_clamp_s32(a1, lo, hi);
        a2 = mcu_clamp_s32(a2, lo, hi);
        a3 = mcu_clamp_s32(a3, lo, hi);
    }
    out[0] = (int8_t)a0;
    out[2] = (int8_t)a1;
    out[1] = (int8_t)a2;
    out[3] = (int8_t)a3;
}

/* A position whose window sticks out on the left or right: its valid taps only. */
DW_NOINLINE static void row4_border(const mcu_dw_pass_t *s, const int8_t *x_rows,
                                    const int32_t (*w_rows)[2], int32_t rows, int32_t out_x,
                                    int8_t *out)
{
    const mcu_depthwise_conv_params_t *const p = s->p;
    const int32_t in_x = out_x * p->stride_w - p->pad_left;
    int32_t kx_begin, kx_end;
    valid_taps(in_x, p->dilation_w, p->filter.w, p->input.w, &kx_begin, &kx_end);
    const int32_t cols = rows > 0 ? kx_end - kx_begin : 0;
    const int8_t *const x = cols > 0 ? x_rows + (in_x + kx_begin * p->dilation_w) * p->input.c
                                     : x_rows;
    row4_px(s, x, w_rows + kx_begin, cols > 0 ? rows : 0, cols, out + out_x * p->output.c);
}

/* One output row y, four channels (s->g), any filter: the valid taps of each position. in: the
 * batch's input at channel c; out: row y at channel c. */
DW_NOINLINE static void row_sweep(const mcu_dw_pass_t *s, const int8_t *in, int8_t *out,
                                  int32_t out_y)
{
    const mcu_depthwise_conv_params_t *const p = s->p;
    const int32_t k_w = p->filter.w;
    const int32_t in_y = out_y * p->stride_h - p->pad_top;
    int32_t ky_begin, ky_end;
    valid_taps(in_y, p->dilation_h, p->filter.h, p->input.h, &ky_begin, &ky_end);
    const int32_t rows = ky_end - ky_begin;
    /* (only offset by the valid rows when there is one) */
    const int8_t *const x_rows = rows > 0 ? in + (in_y + ky_begin * p->dilation_h) * s->in_row
                                          : in;
    const int32_t(*const w_rows)[2] = s->g->w + ky_begin * k_w;
    for (int32_t out_x = 0; out_x < s->x_begin; ++out_x) {
        row4_border(s, x_rows, w_rows, rows, out_x, out);
    }
    const int32_t x_step = p->stride_w * p->input.c;
    const int32_t out_c = p->output.c;
    const int8_t *x = x_rows + (s->x_begin * p->stride_w - p->pad_left) * p->input.c;
    int8_t *o = out + s->x_begin * out_c;
    const int32_t n = s->x_end - s->x_begin;
    if (rows == 0) {
        for (int32_t i = 0; i < n; ++i, o += out_c) {
            row4_px(s, x_rows, w_rows, 0, 0, o);
        }
    } else if (k_w == 3) {
        for (int32_t i = 0; i < n; ++i, x += x_step, o += out_c) {
            row4_px(s, x, w_rows, rows, 3, o);
        }
    } else {
        for (int32_t i = 0; i < n; ++i, x += x_step, o += out_c) {
            row4_px(s, x, w_rows, rows, k_w, o);
        }
    }
    for (int32_t out_x = s->x_end; out_x < p->output.w; ++out_x) {
        row4_border(s, x_rows, w_rows, rows, out_x, out);
    }
}

static int32_t pack16(int32_t lo, int32_t hi)
{
    return (int32_t)(((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16));
}

/* The four channels from c: g (single rows) and, for 3x3 filters, l[0] (channels c, c + 2) and
 * l[1] (c + 1, c + 3) (row pairs). */
static void prepare_group(mcu_dw_group4_t *g, mcu_dw_lanes2_t l[2],
                          const mcu_depthwise_conv_params_t *p, const int8_t *filter,
                          const int32_t *bias, int32_t c)
{
    const int32_t taps = p->filter.h * p->filter.w;
    for (int32_t t = 0; t < taps; ++t) {
        const int8_t *const f = filter + t * p->output.c + c;
        g->w[t][0] = pack16(2 * f[0], 2 * f[2]);
        g->w[t][1] = pack16(2 * f[1], 2 * f[3]);
    }
    for (int32_t k = 0; k < 4; ++k) {
        const int32_t ch = c + (k >> 1) + 2 * (k & 1);
        g->bias2[k] = bias != NULL ? 2 * bias[ch] : 0;
        g->mult[k] = p->multiplier[ch];
        g->right[k] = -p->shift[ch];
        g->base[k] = requant2_base(p->shift[ch], p->q.output_offset);
    }
    if (p->filter.h != 3 || p->filter.w != 3) {
        return;
    }
    for (int32_t odd = 0; odd < 2; ++odd) {
        mcu_dw_lanes2_t *const lp = &l[odd];
        for (int32_t kx = -2; kx < 5; ++kx) {
            for (int32_t ky = 0; ky < 3; ++ky) {
                lp->wcol[2 + kx][ky] = kx >= 0 && kx < 3 ? g->w[ky * 3 + kx][odd] : 0;
            }
        }
        for (int32_t lane = 0; lane < 2; ++lane) {
            const int32_t k = 2 * odd + lane;
            lp->bias2[lane] = g->bias2[k];
            lp->mult[lane] = g->mult[k];
            lp->base[lane] = g->base[k];
            lp->right[lane] = g->right[k];
        }
    }
}

/* Channels 0 .. 4 * floor(C / 4) - 1 of every output. */
void mcu_dw_dsp(mcu_dw_dsp_scratch_t *scratch, const mcu_depthwise_conv_params_t *p,
                const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    const int32_t out_h = p->output.h;
    const int32_t out_w = p->output.w;
    const int32_t out_c = p->output.c;
    const int32_t in_batch = in_h * in_w * p->input.c;
    const int32_t out_batch = out_h * out_w * out_c;
    mcu_dw_lanes2_t *const l = scratch->l;
    mcu_dw_group4_t *const g = &scratch->g;
    mcu_dw_pass_t s;
    s.p = p;
    s.g = g;
    s.seg = scratch->seg;
    s.offset2 = pack16(p->q.input_offset, p->q.input_offset);
    s.in_row = in_w * p->input.c;
    s.x_col = p->dilation_w * p->input.c;
    s.out_row = out_w * out_c;
    s.full = p->q.act_min == MCU_INT8_MIN && p->q.act_max == MCU_INT8_MAX;
    /* output columns whose window lies inside the input horizontally: in_x >= 0 and
     * in_x + (KW - 1) * dilation_w < W_in, with in_x = out_x * stride_w - pad_left */
    const int32_t span = (p->filter.w - 1) * p->dilation_w;
    const int32_t last = in_w - 1 - span + p->pad_left;
    s.x_begin = (p->pad_left + p->stride_w - 1) / p->stride_w;
    s.x_end = last < 0 ? 0 : last / p->stride_w + 1;
    if (s.x_end > out_w) {
        s.x_end = out_w;
    }
    if (s.x_begin > out_w) { /* (a left padding wider than the output) */
        s.x_begin = out_w;
    }
    if (s.x_end < s.x_begin) {
        s.x_end = s.x_begin;
    }
    const int pairs = p->filter.h == 3 && p->filter.w == 3 && p->stride_h == 1 &&
                      p->dilation_h == 1 && mcu_dw_plan_segments(&s);
    for (int32_t c = 0; c + 4 <= out_c; c += 4) {
        prepare_group(g, l, p, filter, bias, c);
        for (int32_t b = 0; b < p->input.n; ++b) {
            const int8_t *const in = input + b * in_batch + c; /* 4-byte loads */
            int8_t *const out = output + b * out_batch + c;
            for (int32_t y = 0; y < out_h;) {
                /* rows y, y + 1 (y = out_h - 2 for the last of an odd count, redoing row y):
                 * input rows in_y .. in_y + 3, stride 1 */
                const int32_t top = y + 1 < out_h ? y : y - 1;
                const int32_t in_y = top - p->pad_top;
                const int rows = in_y < 0 ? DW_ROWS_NO_TOP
                                          : (in_y + 3 >= in_h ? DW_ROWS_NO_BOTTOM : DW_ROWS_ALL);
                if (pairs && top >= 0 && in_y >= -1 && in_y + 3 <= in_h &&
                    (in_h >= 3 || rows == DW_ROWS_ALL)) {
                    const int8_t *const x_rows = in + (in_y + (in_y < 0)) * s.in_row;
                    s.l = &l[0];
                    mcu_dw_pair_sweep_even(&s, x_rows, out + top * s.out_row, rows);
                    s.l = &l[1];
                    mcu_dw_pair_sweep_odd(&s, x_rows, out + top * s.out_row + 1, rows);
                    y = top + 2;
                } else {
                    row_sweep(&s, in, out + y * s.out_row, y);
                    y += 1;
                }
            }
        }
    }
}

#endif
