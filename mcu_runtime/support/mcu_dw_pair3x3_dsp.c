/*
 * mcu_dw_pair3x3_dsp.c - the 3x3 row pairs of mcu_depthwise_conv2d_s8's DSP path
 * (../kernels/mcu_depthwise_conv2d_s8_dsp.c): 3x3 filters with vertical stride and dilation 1
 * compute output rows in pairs, each input row loaded and unpacked (SXTAB16) once for both, four
 * accumulators per pass (pair3x3: inline assembly, beside its C fallback for unoptimized builds).
 * A window that sticks out of the input on the left or right is shifted inward and meets zero
 * weights instead (mcu_dw_lanes2_t.wcol has two zero columns on each side, mcu_dw_plan_segments);
 * one that sticks out at the top or bottom by one row skips that row (DW_ROWS_NO_TOP/NO_BOTTOM).
 */
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_DSP

#include <arm_acle.h>
#include <stdint.h>

#include "../kernels/mcu_depthwise_conv2d_s8_internal.h"

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

/* The requantization constants of a pass's two lanes, read into locals (an int8_t store may
 * alias anything: through the pointer they would be read again after every store). */
typedef struct {
    int32_t mult0, mult1, base0, base1, right0, right1;
} rq2_t;

DW_INLINE rq2_t rq2(const mcu_dw_lanes2_t *l)
{
    rq2_t r;
    r.mult0 = l->mult[0];
    r.mult1 = l->mult[1];
    r.base0 = l->base[0];
    r.base1 = l->base[1];
    r.right0 = l->right[0];
    r.right1 = l->right[1];
    return r;
}

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
    const rq2_t r = rq2(l);
    int32_t v0 = requant2(acc[0], r.mult0, r.base0, r.right0);
    int32_t v1 = requant2(acc[1], r.mult1, r.base1, r.right1);
    int32_t v2 = requant2(acc[2], r.mult0, r.base0, r.right0);
    int32_t v3 = requant2(acc[3], r.mult1, r.base1, r.right1);
    if (!s->full) {
        const int32_t lo = s->p->q.act_min;
        const int32_t hi = s->p->q.act_max;
        v0 = mcu_clamp_s32(v0, lo, hi);
        v1 = mcu_clamp_s32(v1, lo, hi);
        v2 = mcu_clamp_s32(v2, lo, hi);
        v3 = mcu_clamp_s32(v3, lo, hi);
    }
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
int mcu_dw_plan_segments(mcu_dw_pass_t *s)
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

/* The sweeps with the pass fixed at compile time. */
void mcu_dw_pair_sweep_even(const mcu_dw_pass_t *s, const int8_t *x, int8_t *out, int rows)
{
    pair3x3_sweep(s, x, out, rows, 0);
}

void mcu_dw_pair_sweep_odd(const mcu_dw_pass_t *s, const int8_t *x, int8_t *out, int rows)
{
    pair3x3_sweep(s, x, out, rows, 1);
}

#endif
