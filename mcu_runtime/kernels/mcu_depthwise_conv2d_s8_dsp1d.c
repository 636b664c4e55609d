/*
 * mcu_depthwise_conv2d_s8_dsp1d.c - the DSP path of mcu_depthwise_conv2d_s8 for 1-D filters
 * (mcu_dw_dsp_lines): KW == 1 (Kx1, lines down the output columns) or KH == 1 (1xK, lines along
 * the output rows), every line inside the input across it (no padding across the line, see
 * mcu_dw_dsp_line_ok in the internal header). Audio models' depthwise-separable blocks are made of these.
 *
 * The four channels of the current group (mcu_dw_pass_t.g, prepared by _dsp.c: weights doubled,
 * in tap order, which is the line's order for both orientations) over each line, one output
 * position at a time: the valid taps of the window (all K inside the line's interior), two taps
 * per step; per tap one 4-byte load, two SXTAB16 (input offset) and four SMLABB/SMLATT, 2
 * instructions per MAC; requantization as in _dsp.c (mcu_requant2).
 *
 * Two output positions of a line sharing input rows (pairs of taps per SMLAD) would save the
 * loads but spend as much again on packing the lanes (PKHBT/PKHTB) with 4 channels in 14
 * registers; the per-position overhead was what made the row sweep slow on these shapes.
 */
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_DSP

#include <arm_acle.h>
#include <stdint.h>

#include "mcu_depthwise_conv2d_s8_internal.h"

/* One output position, four channels: n taps, input at x + i * step, weights w[i]; requantized
 * into out[0..3]. */
DW_INLINE void line4_px(const mcu_dw_pass_t *s, const int8_t *x, int32_t step,
                        const int32_t (*w)[2], int32_t n, int8_t *out)
{
    const mcu_dw_group4_t *const g = s->g;
    const int32_t offset2 = s->offset2;
    int32_t a0 = g->bias2[0], a1 = g->bias2[1], a2 = g->bias2[2], a3 = g->bias2[3];
    for (; n >= 2; n -= 2, x += 2 * step, w += 2) {
        mcu_dw_mac4(&a0, &a1, &a2, &a3, x, w[0], offset2);
        mcu_dw_mac4(&a0, &a1, &a2, &a3, x + step, w[1], offset2);
    }
    if (n > 0) {
        mcu_dw_mac4(&a0, &a1, &a2, &a3, x, w[0], offset2);
    }
    mcu_dw_store4(s, a0, a1, a2, a3, out);
}

/* The geometry of the lines: along H (KW == 1) or along W (KH == 1). */
typedef struct {
    int32_t lines, count;   /* lines, output positions per line */
    int32_t size, taps;     /* input positions per line, K */
    int32_t stride, dil, pad;
    int32_t in_line, out_line; /* bytes from one line's first input / output to the next's */
    int32_t in_step, out_step; /* bytes from one position of a line to the next */
} mcu_dw_lines_t;

static void lines_of(const mcu_depthwise_conv_params_t *p, mcu_dw_lines_t *l)
{
    const int32_t in_c = p->input.c;
    const int32_t in_row = p->input.w * in_c;
    const int32_t out_c = p->output.c;
    const int32_t out_row = p->output.w * out_c;
    if (p->filter.w == 1) {
        *l = (mcu_dw_lines_t){.lines = p->output.w, .count = p->output.h, .size = p->input.h,
                              .taps = p->filter.h, .stride = p->stride_h, .dil = p->dilation_h,
                              .pad = p->pad_top, .in_line = p->stride_w * in_c,
                              .out_line = out_c, .in_step = in_row, .out_step = out_row};
    } else {
        *l = (mcu_dw_lines_t){.lines = p->output.h, .count = p->output.w, .size = p->input.w,
                              .taps = p->filter.w, .stride = p->stride_w, .dil = p->dilation_w,
                              .pad = p->pad_left, .in_line = p->stride_h * in_row,
                              .out_line = out_row, .in_step = in_c, .out_step = out_c};
    }
}

/* A position whose window sticks out of the line: its valid taps only. */
DW_NOINLINE static void line4_border(const mcu_dw_pass_t *s, const mcu_dw_lines_t *l,
                                     const int8_t *x_line, int32_t o, int8_t *out)
{
    const int32_t origin = o * l->stride - l->pad;
    int32_t begin, end;
    valid_taps(origin, l->dil, l->taps, l->size, &begin, &end);
    const int32_t n = end - begin;
    const int8_t *const x = n > 0 ? x_line + (origin + begin * l->dil) * l->in_step : x_line;
    line4_px(s, x, l->dil * l->in_step, s->w + begin, n, out + o * l->out_step);
}

void mcu_dw_dsp_lines(const mcu_dw_pass_t *s, const int8_t *in, int8_t *out)
{
    mcu_dw_lines_t l;
    lines_of(s->p, &l);
    /* positions [first, past) have every tap inside the line: origin = o * stride - pad >= 0 and
     * origin + (K - 1) * dil <= size - 1 */
    const int32_t last = l.size - 1 - (l.taps - 1) * l.dil + l.pad;
    int32_t first = (l.pad + l.stride - 1) / l.stride;
    int32_t past = last < 0 ? 0 : last / l.stride + 1;
    first = first < l.count ? first : l.count;
    past = past < l.count ? past : l.count;
    past = past > first ? past : first;
    const int32_t step = l.dil * l.in_step;
    const int32_t x_step = l.stride * l.in_step;
    const int32_t(*const w)[2] = s->w;
    const int32_t taps = l.taps;
    for (int32_t line = 0; line < l.lines; ++line) {
        const int8_t *const x_line = in + line * l.in_line;
        int8_t *const o_line = out + line * l.out_line;
        for (int32_t o = 0; o < first; ++o) {
            line4_border(s, &l, x_line, o, o_line);
        }
        if (first < past) {
            const int8_t *x = x_line + (first * l.stride - l.pad) * l.in_step;
            int8_t *o_px = o_line + first * l.out_step;
            for (int32_t o = first; o < past; ++o, x += x_step, o_px += l.out_step) {
                line4_px(s, x, step, w, taps, o_px);
            }
        }
        for (int32_t o = past; o < l.count; ++o) {
            line4_border(s, &l, x_line, o, o_line);
        }
    }
}

#endif
