/*
 * mcu_depthwise_conv2d_s8_dsp.c - the DSP path of mcu_depthwise_conv2d_s8 (__ARM_FEATURE_DSP:
 * Cortex-M4, M7, M33, ...): depth_multiplier == 1, the channels in blocks of four, one block at a
 * time over the whole output, each block in two passes of two channels: c, c + 2 (the even bytes
 * of a 4-byte load) and c + 1, c + 3 (the odd bytes). A block's weights and requantization
 * constants are prepared once per call into the scratch (mcu_dw_dsp_scratch_t). The lean call's
 * variant (mcu_depthwise_conv2d_s8_lean) prepares only the group and its taps' weights
 * (DW_DSP_LEAN_BYTES) and runs single rows and lines, never the row pairs.
 *
 * Multiply-accumulate: a 4-byte load brings four channels of one input pixel; SXTAB16 adds the
 * input offset to the pass's two channels as int16 lanes, SMLABB/SMLATT multiply each lane by the
 * matching int16 lane of the prepared weights. 3x3 filters with vertical stride and dilation 1
 * compute output rows in pairs: each input row loaded and unpacked serves both, four
 * accumulators in all (pair3x3: inline assembly, as gcc does not keep it in registers, beside
 * its C fallback for unoptimized builds). A window that sticks out of the input on the left or
 * right is shifted inward and meets zero weights instead (mcu_dw_lanes2_t.wcol has two zero
 * columns on each side, plan_segments); one that sticks out at the top or bottom by one row
 * skips that row (DW_ROWS_NO_TOP/NO_BOTTOM). 1-D filters (Kx1, 1xK) run as lines (_dsp1d.c).
 * Other rows and filters run row_sweep: one output row, all four channels of each load (valid
 * taps only). A lone row (an odd last row, a call of one output row) takes row_sweep too: fewer
 * instructions than redoing it as the bottom of a pair, and than a one-row pair3x3 (measured:
 * two channels a load, 4 instructions per 2 MACs against 7 per 4, and it needs wcol); a call
 * of one row then prepares no pair weights (wcol) nor segments.
 *
 * Requantization in four instructions (mcu_requant2 in mcu_requant.h): the weights are stored
 * doubled, so the accumulators hold 2 * acc exactly. Conditions (mcu_depthwise_conv2d_s8_path;
 * else the generic loops run): mcu_requant2_ok() for every channel, KH * KW <= DW_DSP_MAX_TAPS (then
 * |acc| < 2^29 + 25 * 255 * 128 < 2^30).
 */
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_DSP

#include <arm_acle.h>
#include <stdint.h>

#include "mcu_depthwise_conv2d_s8_internal.h"

/*
 * A 3x3 window pair, in assembly (gcc does not keep this in 12 registers): output rows top and
 * bottom (one input row lower), two lanes each; input rows 0..3 at x + r * in_row, tap columns
 * k = 0..2 at x + k * x_col, weights w[3 k + ky]. Input row r adds to the top output with tap
 * row r (r <= 2) and to the bottom one with tap row r - 1 (r >= 1):
 *   t[l] += sum_{k, r=0..2} x[r][k] * w[k][r],  b[l] += sum_{k, r=1..3} x[r][k] * w[k][r - 1]
 * for both lanes l (SMLABB: lane 0, SMLATT: lane 1). Variants: DW_ROWS_ALL; DW_ROWS_NO_TOP
 * (input row 0 is padding: not read, x points at row 1); DW_ROWS_NO_BOTTOM (row 3 is padding).
 * Per column: the weights (LDRD + LDR), the rows (LDR, SXTAB16 with the input offset), 12 MACs.
 * It reads memory (the input, the weights): the "memory" clobber keeps gcc from moving or
 * dropping the stores that fill them.
 */
#define DW_LOAD(ROT, ADDR)                                                                     \
    "ldr     %[v], " ADDR "\n\t"                                                               \
    "sxtab16 %[v], %[off], %[v]" ROT "\n\t"
#define DW_MAC(ACC0, ACC1, W)                                                                  \
    "smlabb  %[" ACC0 "], %[v], %[" W "], %[" ACC0 "]\n\t"                                     \
    "smlatt  %[" ACC1 "], %[v], %[" W "], %[" ACC1 "]\n\t"
/* rows 0..3 of one column; wa, wb = tap rows 0, 1; then wa = tap row 2, wb = the row 3 address */
#define DW_COL_ALL(ROT, OFS)                                                                   \
    "ldrd    %[wa], %[wb], [%[w], #" OFS "]\n\t"                                               \
    DW_LOAD(ROT, "[%[p]]") DW_MAC("t0", "t1", "wa")                                            \
    DW_LOAD(ROT, "[%[p], %[row]]") DW_MAC("t0", "t1", "wb") DW_MAC("b0", "b1", "wa")           \
    "ldr     %[wa], [%[w], #" OFS "+8]\n\t"                                                    \
    DW_LOAD(ROT, "[%[p], %[row], lsl #1]") DW_MAC("t0", "t1", "wa") DW_MAC("b0", "b1", "wb")   \
    "add     %[wb], %[p], %[row], lsl #1\n\t"                                                  \
    DW_LOAD(ROT, "[%[wb], %[row]]") DW_MAC("b0", "b1", "wa")                                   \
    "add     %[p], %[p], %[col]\n\t"
/* rows 1..3 of one column (p at row 1) */
#define DW_COL_NO_TOP(ROT, OFS)                                                                \
    "ldrd    %[wa], %[wb], [%[w], #" OFS "]\n\t"                                               \
    DW_LOAD(ROT, "[%[p]]") DW_MAC("t0", "t1", "wb") DW_MAC("b0", "b1", "wa")                   \
    "ldr     %[wa], [%[w], #" OFS "+8]\n\t"                                                    \
    DW_LOAD(ROT, "[%[p], %[row]]") DW_MAC("t0", "t1", "wa") DW_MAC("b0", "b1", "wb")           \
    DW_LOAD(ROT, "[%[p], %[row], lsl #1]") DW_MAC("b0", "b1", "wa")                            \
    "add     %[p], %[p], %[col]\n\t"
/* rows 0..2 of one column */
#define DW_COL_NO_BOTTOM(ROT, OFS)                                                             \
    "ldrd    %[wa], %[wb], [%[w], #" OFS "]\n\t"                                               \
    DW_LOAD(ROT, "[%[p]]") DW_MAC("t0", "t1", "wa")                                            \
    DW_LOAD(ROT, "[%[p], %[row]]") DW_MAC("t0", "t1", "wb") DW_MAC("b0", "b1", "wa")           \
    "ldr     %[wa], [%[w], #" OFS "+8]\n\t"                                                    \
    DW_LOAD(ROT, "[%[p], %[row], lsl #1]") DW_MAC("t0", "t1", "wa") DW_MAC("b0", "b1", "wb")   \
    "add     %[p], %[p], %[col]\n\t"
#define DW_PAIR3X3(COL, ROT)                                                                   \
    __asm__(COL(ROT, "0") COL(ROT, "12") COL(ROT, "24")                                        \
            : [t0] "+r"(t0), [t1] "+r"(t1), [b0] "+r"(b0), [b1] "+r"(b1), [p] "+r"(p),        \
              [v] "=&r"(v), [wa] "=&r"(wa), [wb] "=&r"(wb)                                     \
            : [row] "r"(in_row), [col] "r"(x_col), [w] "r"(w), [off] "r"(offset2)             \
            : "memory")

#if defined(__OPTIMIZE__) && defined(__GNUC__)

DW_INLINE void pair3x3(int32_t acc[4], const int8_t *x, int32_t in_row, int32_t x_col,
                       const int32_t *w, int32_t offset2, int rows, int odd)
{
    int32_t t0 = acc[0], t1 = acc[1], b0 = acc[2], b1 = acc[3];
    const int8_t *p = x;
    int32_t v, wa, wb;
    if (odd) {
        if (rows == DW_ROWS_ALL) {
            DW_PAIR3X3(DW_COL_ALL, ", ror #8");
        } else if (rows == DW_ROWS_NO_TOP) {
            DW_PAIR3X3(DW_COL_NO_TOP, ", ror #8");
        } else {
            DW_PAIR3X3(DW_COL_NO_BOTTOM, ", ror #8");
        }
    } else {
        if (rows == DW_ROWS_ALL) {
            DW_PAIR3X3(DW_COL_ALL, "");
        } else if (rows == DW_ROWS_NO_TOP) {
            DW_PAIR3X3(DW_COL_NO_TOP, "");
        } else {
            DW_PAIR3X3(DW_COL_NO_BOTTOM, "");
        }
    }
    acc[0] = t0;
    acc[1] = t1;
    acc[2] = b0;
    acc[3] = b1;
}

#else /* unoptimized builds cannot give the assembly its 12 registers: the same in C */

/* The pass's two channels of the input pixel at x, plus the input offset, as int16 lanes. */
DW_INLINE int32_t load2(const int8_t *x, int32_t offset2, int odd)
{
    const uint32_t v = read_s8x4(x);
    return odd ? sxtab16_ror8(offset2, v) : __sxtab16(offset2, (int32_t)v);
}

/* acc[0..1] += input pixel v times the weight pair w (lane 0, lane 1) */
DW_INLINE void mac(int32_t *a0, int32_t *a1, int32_t v, int32_t w)
{
    *a0 = __smlabb(v, w, *a0);
    *a1 = __smlatt(v, w, *a1);
}

DW_INLINE void pair3x3(int32_t acc[4], const int8_t *x, int32_t in_row, int32_t x_col,
                       const int32_t *w, int32_t offset2, int rows, int odd)
{
    int32_t t0 = acc[0], t1 = acc[1], b0 = acc[2], b1 = acc[3];
    const int32_t r_begin = rows == DW_ROWS_NO_TOP ? 1 : 0;
    const int32_t r_end = rows == DW_ROWS_NO_BOTTOM ? 3 : 4;
    for (int32_t k = 0; k < 3; ++k, w += 3) {
        for (int32_t r = r_begin; r < r_end; ++r) { /* x: row r_begin */
            const int32_t v = load2(x + (r - r_begin) * in_row + k * x_col, offset2, odd);
            if (r < 3) {
                mac(&t0, &t1, v, w[r]);
            }
            if (r > 0) {
                mac(&b0, &b1, v, w[r - 1]);
            }
        }
    }
    acc[0] = t0;
    acc[1] = t1;
    acc[2] = b0;
    acc[3] = b1;
}

#endif

/* One position of a row pair: bias, the 3x3 window pair at x with weights w, requantized into
 * out[0], out[2] (top row) and out[out_row], out[out_row + 2] (bottom row). */
DW_INLINE void pair3x3_px(const mcu_dw_pass_t *s, const int8_t *x, const int32_t *w, int8_t *out,
                          int rows, int odd)
{
    const mcu_dw_lanes2_t *const l = s->l;
    int32_t acc[4];
    acc[0] = acc[2] = l->bias2[0];
    acc[1] = acc[3] = l->bias2[1];
    pair3x3(acc, x, s->in_row, s->x_col, w, s->offset2, rows, odd);
    /* (locals: an int8_t store may alias anything, through l they would be read again after
     * every store) */
    const int32_t m0 = l->mult[0], m1 = l->mult[1], base0 = l->base[0], base1 = l->base[1];
    const int32_t r0 = l->right[0], r1 = l->right[1];
    int32_t v0 = mcu_requant2(acc[0], m0, base0, r0);
    int32_t v1 = mcu_requant2(acc[1], m1, base1, r1);
    int32_t v2 = mcu_requant2(acc[2], m0, base0, r0);
    int32_t v3 = mcu_requant2(acc[3], m1, base1, r1);
    mcu_dw_clamp4(s, &v0, &v1, &v2, &v3);
    const int32_t out_row = s->out_row;
    out[0] = (int8_t)v0;
    out[2] = (int8_t)v1;
    out[out_row] = (int8_t)v2;
    out[out_row + 2] = (int8_t)v3;
}

/* One pass over output rows y, y + 1 of a 3x3 filter (stride_h == dilation_h == 1): input rows
 * from x_rows (channel c; the first one read when rows == DW_ROWS_NO_TOP); out: row y at the
 * pass's channel. Column by column segment (mcu_dw_pass_t.seg). */
DW_INLINE void pair3x3_sweep(const mcu_dw_pass_t *s, const int8_t *x_rows, int8_t *out,
                             int rows, int odd)
{
    const int32_t in_c = s->p->input.c;
    const int32_t out_c = s->p->output.c;
    const int32_t x_step = s->p->stride_w * in_c;
    const mcu_dw_segment_t *const end = s->seg + s->segments;
    for (const mcu_dw_segment_t *g = s->seg; g < end; ++g) {
        const int8_t *x = x_rows + g->in_x * in_c;
        const int32_t *const w = s->l->wcol[g->col];
        int8_t *o = out + g->out_x * out_c;
        for (int32_t n = g->count; n > 0; --n, x += x_step, o += out_c) {
            pair3x3_px(s, x, w, o, rows, odd);
        }
    }
}

/* mcu_dw_pass_t.seg: the output columns in runs of equal weight shift. A window sticking out
 * on the left or right (kx in [kx_begin, kx_end) inside the input) is shifted inward by `shift` tap
 * columns, its weights by as many columns into wcol's zero columns: tap column k then meets
 * weight column k + shift, zero outside 0..2. Returns 0 when the input is too narrow for that
 * (no valid tap, or the shifted window leaves the input) or there are too many runs. */
static int plan_segments(mcu_dw_pass_t *s)
{
    const mcu_depthwise_conv_params_t *const p = s->p;
    s->segments = 0;
    for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
        int32_t in_x = out_x * p->stride_w - p->pad_left;
        int32_t kx_begin, kx_end;
        valid_taps(in_x, p->dilation_w, 3, p->input.w, &kx_begin, &kx_end);
        if (kx_end <= kx_begin || (kx_begin > 0 && kx_end < 3)) {
            return 0;
        }
        const int32_t shift = kx_begin > 0 ? kx_begin : kx_end - 3;
        in_x += shift * p->dilation_w;
        if (in_x < 0 || in_x + 2 * p->dilation_w >= p->input.w) {
            return 0;
        }
        mcu_dw_segment_t *const last = s->segments > 0 ? &s->seg[s->segments - 1] : NULL;
        if (last != NULL && last->col == 2 + shift && shift == 0) {
            ++last->count; /* unshifted windows: consecutive, stride_w apart */
            continue;
        }
        if (s->segments == DW_MAX_SEGMENTS) {
            return 0;
        }
        mcu_dw_segment_t *const g = &s->seg[s->segments++];
        g->out_x = out_x;
        g->in_x = in_x;
        g->col = 2 + shift;
        g->count = 1;
    }
    return 1;
}

/* The sweeps with the pass fixed at compile time; kept out of line so that the lanes they read
 * are written before they run. */
DW_NOINLINE static void pair_even(const mcu_dw_pass_t *s, const int8_t *x, int8_t *out, int rows)
{
    pair3x3_sweep(s, x, out, rows, 0);
}

DW_NOINLINE static void pair_odd(const mcu_dw_pass_t *s, const int8_t *x, int8_t *out, int rows)
{
    pair3x3_sweep(s, x, out, rows, 1);
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
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x, w[0], offset2);
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x + x_col, w[1], offset2);
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x + 2 * x_col, w[2], offset2);
            continue;
        }
        const int8_t *xp = x;
        for (int32_t i = 0; i < cols; ++i, xp += x_col) {
            mcu_dw_mac4(&a0, &a1, &a2, &a3, xp, w[i], offset2);
        }
    }
    mcu_dw_store4(s, a0, a1, a2, a3, out);
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
    if (cols == 2 && rows == 3) { /* a 3x3 window one column out: the taps known at compile time */
        row4_px(s, x, w_rows + kx_begin, 3, 2, out + out_x * p->output.c);
        return;
    }
    row4_px(s, x, w_rows + kx_begin, cols > 0 ? rows : 0, cols, out + out_x * p->output.c);
}

/* One output row y, four channels (s->g), any filter: the valid taps of each position. in: the
 * batch's input at channel c; out: row y at channel c. */
DW_NOINLINE static void row_sweep(const mcu_dw_pass_t *s, const int8_t *in, int8_t *out,
                                  int32_t out_y)
{
    const mcu_depthwise_conv_params_t *const p = s->p;
    const int32_t k_w = p->filter.w;
    const mcu_dw_tap_rows_t r = mcu_dw_tap_rows(p, in, &s->in_row, out_y);
    const int8_t *const x_rows = r.x;
    const int32_t rows = r.rows;
    const int32_t(*const w_rows)[2] = s->w + r.ky_begin * k_w;
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

/* One output row of the lean call's 3x3 variant (mcu_dw_dsp_lean_shifted), four channels: `rows`
 * tap rows from x_rows, their weights w (DW_DSP_SHIFTED_COLS a row, from the first valid tap
 * row); a window one column out reads the three columns inside, its weights one column over (onto
 * a zero column). What a position needs is in locals: through `s` each output byte stored (an
 * int8_t, which may alias anything) would have the compiler load the pass's fields again. */
DW_NOINLINE static void shifted_row(const mcu_dw_pass_t *s, const int8_t *x_rows, int32_t rows,
                                    const int32_t (*w)[2], int8_t *out)
{
    const mcu_depthwise_conv_params_t *const p = s->p;
    const mcu_dw_group4_t *const g = s->g;
    const int32_t c_in = p->input.c;
    const int32_t x_row = p->dilation_h * s->in_row;
    const int32_t stride = p->stride_w;
    const int32_t pad = p->pad_left;
    const int32_t last = p->input.w - 3;
    const int32_t out_w = p->output.w;
    const int32_t out_c = p->output.c;
    const int32_t offset2 = s->offset2;
    const int full = s->full;
    const mcu_quant_io_t *const q = &p->q;
    for (int32_t x = 0; x < out_w; ++x, out += out_c) {
        const int32_t in_x = x * stride - pad;
        const int32_t b = in_x < 0 ? 0 : (in_x > last ? last : in_x);
        const int8_t *const x0 = x_rows + b * c_in;
        const int32_t(*const wp)[2] = w + (b - in_x + 1);
        int32_t a0 = g->bias2[0], a1 = g->bias2[1], a2 = g->bias2[2], a3 = g->bias2[3];
        if (rows == 3) {
            const int8_t *const x1 = x0 + x_row, *const x2 = x1 + x_row;
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x0, wp[0], offset2);
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x0 + c_in, wp[1], offset2);
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x0 + 2 * c_in, wp[2], offset2);
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x1, wp[DW_DSP_SHIFTED_COLS], offset2);
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x1 + c_in, wp[DW_DSP_SHIFTED_COLS + 1], offset2);
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x1 + 2 * c_in, wp[DW_DSP_SHIFTED_COLS + 2], offset2);
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x2, wp[2 * DW_DSP_SHIFTED_COLS], offset2);
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x2 + c_in, wp[2 * DW_DSP_SHIFTED_COLS + 1], offset2);
            mcu_dw_mac4(&a0, &a1, &a2, &a3, x2 + 2 * c_in, wp[2 * DW_DSP_SHIFTED_COLS + 2], offset2);
        } else {
            const int8_t *xj = x0;
            for (int32_t j = 0; j < rows; ++j, xj += x_row) {
                const int32_t(*const wj)[2] = wp + j * DW_DSP_SHIFTED_COLS;
                mcu_dw_mac4(&a0, &a1, &a2, &a3, xj, wj[0], offset2);
                mcu_dw_mac4(&a0, &a1, &a2, &a3, xj + c_in, wj[1], offset2);
                mcu_dw_mac4(&a0, &a1, &a2, &a3, xj + 2 * c_in, wj[2], offset2);
            }
        }
        mcu_dw_requant_store4(g, full, q, a0, a1, a2, a3, out);
    }
}

static int32_t pack16(int32_t lo, int32_t hi)
{
    return (int32_t)(((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16));
}

/* The four channels from c: g and w (single rows; `shifted`: the lean 3x3 variant's layout, w[ky *
 * DW_DSP_SHIFTED_COLS + kx + 1] between zero columns) and, when `pairs` (3x3 filters), l[0]
 * (channels c, c + 2) and l[1] (c + 1, c + 3) (row pairs). */
static void prepare_group(mcu_dw_group4_t *g, int32_t (*w)[2], mcu_dw_lanes2_t *l,
                          const mcu_depthwise_conv_params_t *p, const int8_t *filter,
                          const int32_t *bias, int32_t c, int pairs, int shifted)
{
    if (shifted) { /* 3x3: each row of taps between zero columns */
        const int32_t col = p->output.c; /* filter bytes from one tap to the next */
        for (int32_t ky = 0; ky < 3; ++ky) {
            int32_t(*const wr)[2] = w + ky * DW_DSP_SHIFTED_COLS;
            const int8_t *const f = filter + 3 * ky * col + c;
            wr[0][0] = wr[0][1] = wr[4][0] = wr[4][1] = 0;
            for (int32_t kx = 0; kx < 3; ++kx) {
                wr[kx + 1][0] = pack16(2 * f[kx * col], 2 * f[kx * col + 2]);
                wr[kx + 1][1] = pack16(2 * f[kx * col + 1], 2 * f[kx * col + 3]);
            }
        }
    } else {
        const int32_t taps = p->filter.h * p->filter.w;
        for (int32_t t = 0; t < taps; ++t) {
            const int8_t *const f = filter + t * p->output.c + c;
            w[t][0] = pack16(2 * f[0], 2 * f[2]);
            w[t][1] = pack16(2 * f[1], 2 * f[3]);
        }
    }
    for (int32_t k = 0; k < 4; ++k) {
        const int32_t ch = c + (k >> 1) + 2 * (k & 1);
        const int32_t b = bias != NULL ? bias[ch] : 0;
        if (p->q.rounding == MCU_ROUND_NEAREST_NO_TIE) { /* every multiplier > 0 (fast_round_ok) */
            int32_t lift2;
            g->base[k] = mcu_requant2_no_tie_q(p->multiplier[ch], p->shift[ch], p->q.output_offset, &lift2);
            g->bias2[k] = 2 * b + lift2;
        } else {
            g->base[k] = mcu_requant2_base(p->shift[ch], p->q.output_offset);
            g->bias2[k] = 2 * b;
        }
        g->mult[k] = p->multiplier[ch];
        g->right[k] = -p->shift[ch];
    }
    if (!pairs) {
        return;
    }
    for (int32_t odd = 0; odd < 2; ++odd) {
        mcu_dw_lanes2_t *const lp = &l[odd];
        for (int32_t ky = 0; ky < 3; ++ky) { /* columns 2 .. 4 the taps, the shifted ones 0 */
            lp->wcol[0][ky] = 0;
            lp->wcol[1][ky] = 0;
            lp->wcol[2][ky] = w[3 * ky][odd];
            lp->wcol[3][ky] = w[3 * ky + 1][odd];
            lp->wcol[4][ky] = w[3 * ky + 2][odd];
            lp->wcol[5][ky] = 0;
            lp->wcol[6][ky] = 0;
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

/* The four channels from c for the pass s: the build-time group of `groups` (p->dsp_groups: single
 * rows and lines), else prepare_group into g and w (and l when `pairs`). */
static void use_group(mcu_dw_pass_t *s, const int32_t *groups, mcu_dw_group4_t *g,
                      int32_t (*w)[2], mcu_dw_lanes2_t *l, const int8_t *filter,
                      const int32_t *bias, int32_t c, int pairs)
{
    if (groups != NULL) {
        const int32_t words = DW_DSP_GROUP_WORDS(mcu_dw_dsp_group_taps(s->p));
        const int32_t *const q = groups + (c >> 2) * words;
        s->g = (const mcu_dw_group4_t *)(const void *)q;
        s->w = (const int32_t(*)[2])(const void *)(q + 16);
        return;
    }
    prepare_group(g, w, l, s->p, filter, bias, c, pairs, 0);
    s->g = g;
    s->w = (const int32_t(*)[2])w;
}

/* Channels 0 .. 4 * floor(C / 4) - 1 of every output. */
void mcu_dw_dsp(void *scratch, const mcu_depthwise_conv_params_t *p, const int8_t *input,
                const int8_t *filter, const int32_t *bias, int8_t *output, int lean,
                mcu_dw_dsp_lean3x3_fn lean3x3)
{
    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    const int32_t out_h = p->output.h;
    const int32_t out_w = p->output.w;
    const int32_t out_c = p->output.c;
    const int32_t in_batch = in_h * in_w * p->input.c;
    const int32_t out_batch = out_h * out_w * out_c;
    mcu_dw_dsp_scratch_t *const full = lean ? NULL : (mcu_dw_dsp_scratch_t *)scratch;
    /* lean with build-time groups (p->dsp_groups): no scratch, nothing prepared */
    const int32_t *const groups = lean ? p->dsp_groups : NULL;
    mcu_dw_group4_t *const g = (mcu_dw_group4_t *)scratch; /* first in both layouts */
    int32_t(*const w)[2] = g == NULL ? NULL : lean ? (int32_t(*)[2])(void *)(g + 1) : full->w;
    mcu_dw_lanes2_t *const l = lean ? NULL : full->l;
    mcu_dw_pass_t s;
    s.p = p;
    s.g = g;
    s.w = (const int32_t(*)[2])w;
    s.seg = lean ? NULL : full->seg;
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
    if ((p->filter.w == 1 || p->filter.h == 1) && mcu_dw_dsp_line_ok(p)) { /* 1-D filters */
        for (int32_t c = 0; c + 4 <= out_c; c += 4) {
            use_group(&s, groups, g, w, l, filter, bias, c, 0);
            for (int32_t b = 0; b < p->input.n; ++b) {
                mcu_dw_dsp_lines(&s, input + b * in_batch + c, output + b * out_batch + c);
            }
        }
        return;
    }
    if (lean && lean3x3 != NULL && mcu_dw_dsp_lean_shifted(p)) { /* shifted windows */
        lean3x3(&s, g, w, input, filter, bias, output);
        return;
    }
    const int pairs = !lean && out_h > 1 && p->filter.h == 3 && p->filter.w == 3 &&
                      p->stride_h == 1 && p->dilation_h == 1 && plan_segments(&s);
    for (int32_t c = 0; c + 4 <= out_c; c += 4) {
        use_group(&s, groups, g, w, l, filter, bias, c, pairs);
        for (int32_t b = 0; b < p->input.n; ++b) {
            const int8_t *const in = input + b * in_batch + c; /* 4-byte loads */
            int8_t *const out = output + b * out_batch + c;
            for (int32_t y = 0; y < out_h;) {
                /* rows y, y + 1 (not the last of an odd count: row_sweep): input rows
                 * in_y .. in_y + 3, stride 1 */
                const int32_t in_y = y - p->pad_top;
                const int rows = in_y < 0 ? DW_ROWS_NO_TOP
                                          : (in_y + 3 >= in_h ? DW_ROWS_NO_BOTTOM : DW_ROWS_ALL);
                if (pairs && mcu_dw_dsp_pair_at(y, p->pad_top, in_h, out_h)) {
                    const int8_t *const x_rows = in + (in_y + (in_y < 0)) * s.in_row;
                    s.l = &l[0];
                    pair_even(&s, x_rows, out + y * s.out_row, rows);
                    s.l = &l[1];
                    pair_odd(&s, x_rows, out + y * s.out_row + 1, rows);
                    y += 2;
                } else {
                    row_sweep(&s, in, out + y * s.out_row, y);
                    y += 1;
                }
            }
        }
    }
}

/* The lean call's 3x3 variant: per group of four channels, its weights between zero columns
 * (prepare_group, shifted, or the build-time group of p->dsp_groups), then every output row
 * through shifted_row. */
void mcu_dw_dsp_shifted(const mcu_dw_pass_t *s, mcu_dw_group4_t *g, int32_t (*w)[2],
                        const int8_t *input, const int8_t *filter, const int32_t *bias,
                        int8_t *output)
{
    const mcu_depthwise_conv_params_t *const p = s->p;
    const int32_t in_batch = p->input.h * p->input.w * p->input.c;
    const int32_t out_batch = p->output.h * p->output.w * p->output.c;
    mcu_dw_pass_t t = *s;
    for (int32_t c = 0; c + 4 <= p->output.c; c += 4) {
        const int32_t(*wg)[2] = (const int32_t(*)[2])w;
        if (p->dsp_groups != NULL) { /* prepared at build time, in this layout */
            const int32_t words = DW_DSP_GROUP_WORDS(3 * DW_DSP_SHIFTED_COLS);
            const int32_t *const q = p->dsp_groups + (c >> 2) * words;
            t.g = (const mcu_dw_group4_t *)(const void *)q;
            wg = (const int32_t(*)[2])(const void *)(q + 16);
        } else {
            prepare_group(g, w, NULL, p, filter, bias, c, 0, 1);
            t.g = g;
        }
        for (int32_t b = 0; b < p->input.n; ++b) {
            const int8_t *const in = input + b * in_batch + c;
            int8_t *const out = output + b * out_batch + c;
            for (int32_t y = 0; y < p->output.h; ++y) {
                const mcu_dw_tap_rows_t r = mcu_dw_tap_rows(p, in, &t.in_row, y);
                shifted_row(&t, r.x, r.rows, wg + r.ky_begin * DW_DSP_SHIFTED_COLS,
                            out + y * t.out_row);
            }
        }
    }
}

#endif
