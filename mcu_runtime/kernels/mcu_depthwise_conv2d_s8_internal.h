/*
 * mcu_depthwise_conv2d_s8_internal.h - private to the files of mcu_depthwise_conv2d_s8: the
 * dispatcher (mcu_depthwise_conv2d_s8.c), its paths (_generic.c, _dsp.c, _mve.c) and the
 * reference (_ref.c, tests only).
 *
 * The tuning constants and scratch sizes below are the one definition: the emitter reads them
 * from this file (emitter/kernels/mcu_depthwise_conv2d_s8.py) to predict the path and the scratch
 * of a layer. The scratch layouts hold int32/int16 data only, so their sizes are the same on
 * every target and on the host (checked at compile time in the dispatcher).
 */
#ifndef MCU_DEPTHWISE_CONV2D_S8_INTERNAL_H
#define MCU_DEPTHWISE_CONV2D_S8_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mcu_kernel_util.h"
#include "mcu_nn.h"

#if defined(__GNUC__)
#define DW_INLINE static inline __attribute__((always_inline))
#define DW_NOINLINE __attribute__((noinline))
#else
#define DW_INLINE static inline
#define DW_NOINLINE
#endif

/* The DSP and MVE fast paths take filters of at most this many taps (KH * KW): then
 * |acc| < 2^29 + 25 * 255 * 128 < 2^30, the range of mcu_requant2/mcu_requant4 (mcu_requant.h). */
#define DW_DSP_MAX_TAPS 25
#define DW_MVE_MAX_TAPS 25

/* Scratch bytes of the fast paths: the DSP path's (sizeof mcu_dw_dsp_scratch_t); a prepared MVE
 * group of `taps` taps (mcu_dw_mve_scratch_t up to its weights, then 16 bytes a tap: a multiple of
 * 16, what follows it in the scratch stays aligned). */
#define MCU_DW_DSP_SCRATCH_BYTES 576
#define MCU_DW_MVE_CONST_BYTES 160
#define MCU_DW_MVE_GROUP_BYTES(taps) (MCU_DW_MVE_CONST_BYTES + 16 * (int32_t)(taps))
/* A 3x3 filter's lean call carries, after its ceil(C / 8) groups, each group's edge sums: the
 * starting sums of a row's left and right windows with one column of taps outside the input
 * (_mve.c's dw_edges_t: [edge][even, odd channels][lane] int32, bias_full + zp * that column's
 * weights, zp = -input_offset), so that its band calls compute none. */
#define MCU_DW_MVE_EDGE_BYTES 64

/* Whether the DSP path runs a 1-D filter (KW == 1 or KH == 1) as lines (mcu_dw_dsp_lines, _dsp1d.c):
 * no padding across the lines, every line inside the input. (Here, not in _dsp1d.c: the dispatcher's
 * mcu_depthwise_conv2d_s8_overlap_down asks it on every target.) */
static inline int mcu_dw_dsp_line_ok(const mcu_depthwise_conv_params_t *p)
{
    if (p->filter.w == 1) {
        return p->pad_left == 0 && (p->output.w - 1) * p->stride_w < p->input.w;
    }
    return p->filter.h == 1 && p->pad_top == 0 && (p->output.h - 1) * p->stride_h < p->input.h;
}

/* Which input rows of a row pair are read: all four, or not the top/bottom one (padding). */
enum { DW_ROWS_ALL, DW_ROWS_NO_TOP, DW_ROWS_NO_BOTTOM };

/* The DSP path's 3x3 row pairs (when it takes them, mcu_dw_dsp): whether output rows y and y + 1 run
 * as one pair (input rows y - pad_top - 1 .. y - pad_top + 2, stride 1), else row y alone. */
static inline int mcu_dw_dsp_pair_at(int32_t y, int32_t pad_top, int32_t in_h, int32_t out_h)
{
    const int32_t in_y = y - pad_top;
    return y + 1 < out_h && in_y >= -1 && in_y + 3 <= in_h &&
           (in_h >= 3 || (in_y >= 0 && in_y + 3 < in_h)); /* (in_h < 3: the four rows all inside) */
}

/* The tap rows of one output row inside the input: `rows` of them from tap row ky_begin, the first
 * at input row x (the batch's input itself when there is none). */
typedef struct {
    int32_t rows;
    int32_t ky_begin;
    const int8_t *x;
} mcu_dw_tap_rows_t;

/* The tap rows of output row out_y (in: the batch's input, *in_row bytes a row, read only when a
 * row is valid): the DSP and MVE row loops' windows. */
DW_INLINE mcu_dw_tap_rows_t mcu_dw_tap_rows(const mcu_depthwise_conv_params_t *p,
                                            const int8_t *in, const int32_t *in_row,
                                            int32_t out_y)
{
    const int32_t in_y = out_y * p->stride_h - p->pad_top;
    mcu_dw_tap_rows_t t;
    int32_t ky_end;
    valid_taps(in_y, p->dilation_h, p->filter.h, p->input.h, &t.ky_begin, &ky_end);
    t.rows = ky_end - t.ky_begin;
    /* (only offset by the valid rows when there is one) */
    t.x = t.rows > 0 ? in + (in_y + t.ky_begin * p->dilation_h) * *in_row : in;
    return t;
}

/* The valid taps of one output position (generic path): `rows` x `cols` taps, tap (j, i) of
 * channel 0 at x + j * x_row + i * x_col in the input and w + j * w_row + i * w_col in the
 * filter. */
typedef struct {
    const int8_t *x;
    const int8_t *w;
    int32_t rows;
    int32_t cols;
    int32_t x_row;
    int32_t x_col;
    int32_t w_row;
    int32_t w_col;
} mcu_dw_taps_t;

/* ---- DSP fast path (see _dsp.c) ---- */

/* One pass of the 3x3 row pairs: two channels (lane 0 and lane 1 of every int16 pair). */
typedef struct {
    int32_t bias2[2];   /* 2 * bias */
    int32_t mult[2];    /* multiplier, >= 0 */
    int32_t base[2];    /* 2^(r - 1) + output_offset * 2^r */
    int32_t right[2];   /* r = -shift, in [1, 20] */
    int32_t wcol[7][3]; /* [2 + kx][ky]: int16 lanes 2 w[lane 0], 2 w[lane 1]; zero for kx < 0,
                         * kx > 2 */
} mcu_dw_lanes2_t;

/* The four channels c .. c + 3 of the single-row path, in accumulator order k = c, c + 2,
 * c + 1, c + 3 (the even then the odd bytes of a 4-byte load); their weights follow it in the
 * scratch (mcu_dw_pass_t.w): [ky * KW + kx], int16 lanes (2 w[c], 2 w[c + 2]), (2 w[c + 1],
 * 2 w[c + 3]). */
typedef struct {
    int32_t bias2[4];
    int32_t mult[4];
    int32_t base[4];
    int32_t right[4];
} mcu_dw_group4_t;

/* The lean call's DSP variant (mcu_depthwise_conv2d_s8_lean): single rows and lines, no row pairs;
 * its scratch, the group and the layer's taps' weights, is at most this many bytes (else the lean
 * call runs the generic loops; as MCU_CONV_LEAN_EXTRA for convolutions). */
#define DW_DSP_LEAN_MAX_BYTES 256
#define DW_DSP_LEAN_BYTES(taps) ((int32_t)sizeof(mcu_dw_group4_t) + 8 * (int32_t)(taps))

/* The lean call's 3x3 variant (_dsp.c, lean_shifted): every position of a row through the same
 * nine taps, a window one column out of the input moved in by that column onto zero weights (the
 * weights [ky][kx + 1], DW_DSP_SHIFTED_COLS columns, the first and last zero). Where every window
 * sticks out by at most one column and the input has three (mcu_dw_dsp_shifted_width: the widths
 * alone, the same for every band of a layer), and the call makes more than two rows or its groups
 * are prepared at build time (params->dsp_groups; else a band of one or two rows, as streamed
 * plans call it, runs the row sweep: less set-up). */
#define DW_DSP_SHIFTED_COLS 5
static inline int mcu_dw_dsp_shifted_width(const mcu_depthwise_conv_params_t *p)
{
    return p->filter.h == 3 && p->filter.w == 3 && p->dilation_w == 1 && p->input.w >= 3 &&
           p->pad_left <= 1 && (p->output.w - 1) * p->stride_w - p->pad_left <= p->input.w - 2;
}

static inline int mcu_dw_dsp_lean_shifted(const mcu_depthwise_conv_params_t *p)
{
    return mcu_dw_dsp_shifted_width(p) && (p->output.h > 2 || p->dsp_groups != NULL);
}

/* The taps' weights of one prepared group: the shifted layout's 3 x DW_DSP_SHIFTED_COLS where
 * mcu_dw_dsp_shifted_width(), else KH * KW. params->dsp_groups holds floor(C / 4) groups of
 * DW_DSP_GROUP_WORDS(taps) int32 words: bias2, mult, base, right (mcu_dw_group4_t), then the
 * weights as prepare_group writes them (_dsp.c; emitter/kernels/mcu_depthwise_conv2d_s8.py
 * dsp_groups() writes the same at build time). */
static inline int32_t mcu_dw_dsp_group_taps(const mcu_depthwise_conv_params_t *p)
{
    return mcu_dw_dsp_shifted_width(p) ? 3 * DW_DSP_SHIFTED_COLS : p->filter.h * p->filter.w;
}
#define DW_DSP_GROUP_WORDS(taps) (16 + 2 * (int32_t)(taps))

/* The lean call's DSP scratch without build-time groups (with them it needs none): the group and
 * its taps' weights (shifted: 3 x DW_DSP_SHIFTED_COLS). */
static inline int32_t mcu_dw_dsp_lean_bytes(const mcu_depthwise_conv_params_t *p)
{
    return mcu_dw_dsp_lean_shifted(p) ? DW_DSP_LEAN_BYTES(3 * DW_DSP_SHIFTED_COLS)
                                      : DW_DSP_LEAN_BYTES(p->filter.h * p->filter.w);
}

/* A run of output columns of the 3x3 row-pair path: `count` positions from output column
 * out_x, the first window's input column in_x (shifted inward at a border, see
 * plan_segments in _dsp.c), weights wcol[col] (2 = unshifted). */
typedef struct {
    int32_t out_x;
    int32_t in_x;
    int32_t col;
    int32_t count;
} mcu_dw_segment_t;

#define DW_MAX_SEGMENTS 5

/* The DSP path's scratch: the current four channels, prepared once per group of four, and the
 * output columns of the 3x3 row pairs. */
typedef struct {
    mcu_dw_group4_t g;                     /* single rows (first: the lean layout's too) */
    int32_t w[DW_DSP_MAX_TAPS][2];         /* g's weights */
    mcu_dw_lanes2_t l[2];                  /* row pairs: channels c, c + 2 and c + 1, c + 3 */
    mcu_dw_segment_t seg[DW_MAX_SEGMENTS]; /* row pairs: the runs of output columns */
} mcu_dw_dsp_scratch_t;

/* What every output position of one DSP pass shares. */
typedef struct {
    const mcu_depthwise_conv_params_t *p;
    const mcu_dw_lanes2_t *l; /* the current pass (row pairs) */
    const mcu_dw_group4_t *g; /* the current four channels (single rows) */
    int32_t offset2;          /* input_offset in both int16 lanes */
    int32_t in_row;           /* bytes of one input row */
    int32_t x_col;            /* dilation_w * C: bytes from one tap column to the next */
    int32_t out_row;          /* bytes of one output row */
    int32_t x_begin;          /* output columns [x_begin, x_end) have every kx inside the input */
    int32_t x_end;
    int full; /* act_min == -128 and act_max == 127 */
    mcu_dw_segment_t *seg; /* the output columns of the 3x3 row-pair path (in the scratch) */
    int32_t segments;
    const int32_t (*w)[2]; /* g's weights */
} mcu_dw_pass_t;

#if MCU_ISA_NATIVE == MCU_ISA_DSP
#include <arm_acle.h>

/* acc (mcu_dw_group4_t order) += the four channels of the input pixel at x times the weights w
 * (SXTAB16 adds the input offset to two channels as int16 lanes; SMLABB/SMLATT one lane each) */
DW_INLINE void mcu_dw_mac4(int32_t *a0, int32_t *a1, int32_t *a2, int32_t *a3, const int8_t *x,
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

/* Four requantized values clamped to [act_min, act_max], unless the range is the whole of int8
 * (s->full: mcu_requant2 saturates to it already). */
DW_INLINE void mcu_dw_clamp4(const mcu_dw_pass_t *s, int32_t *v0, int32_t *v1, int32_t *v2,
                             int32_t *v3)
{
    if (!s->full) {
        const int32_t lo = s->p->q.act_min;
        const int32_t hi = s->p->q.act_max;
        *v0 = mcu_clamp_s32(*v0, lo, hi);
        *v1 = mcu_clamp_s32(*v1, lo, hi);
        *v2 = mcu_clamp_s32(*v2, lo, hi);
        *v3 = mcu_clamp_s32(*v3, lo, hi);
    }
}

/* The four sums of g's channels (doubled) requantized (mcu_requant2), clamped to [q->act_min,
 * q->act_max] unless `full` (mcu_requant2 saturates to int8 already; the range is not read) and
 * stored at out[0..3] in channel order. */
DW_INLINE void mcu_dw_requant_store4(const mcu_dw_group4_t *g, int full, const mcu_quant_io_t *q,
                                     int32_t a0, int32_t a1, int32_t a2, int32_t a3, int8_t *out)
{
    a0 = mcu_requant2(a0, g->mult[0], g->base[0], g->right[0]);
    a1 = mcu_requant2(a1, g->mult[1], g->base[1], g->right[1]);
    a2 = mcu_requant2(a2, g->mult[2], g->base[2], g->right[2]);
    a3 = mcu_requant2(a3, g->mult[3], g->base[3], g->right[3]);
    if (!full) {
        const int32_t lo = q->act_min;
        const int32_t hi = q->act_max;
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

/* mcu_dw_requant_store4 of the pass's current channels (s->g) and activation range. */
DW_INLINE void mcu_dw_store4(const mcu_dw_pass_t *s, int32_t a0, int32_t a1, int32_t a2,
                             int32_t a3, int8_t *out)
{
    mcu_dw_requant_store4(s->g, s->full, &s->p->q, a0, a1, a2, a3, out);
}
#endif

/* ---- MVE fast path (see _mve.c) ---- */

/* Eight channels c .. c + 7, prepared once per group. The scratch holds only the layer's taps
 * of w, last: MCU_DW_MVE_GROUP_BYTES(KH * KW) bytes (sizeof: DW_MVE_MAX_TAPS taps), and nothing
 * reads or writes a tap past them; what follows a group starts that many bytes on
 * (mcu_dw_mve_group). */
typedef struct {
    int32_t bias[2][4];            /* [even/odd][lane]: channel c + 2 lane + (odd) */
    int32_t bias_full[2][4];       /* bias + input_offset * (sum of the channel's weights): the
                                    * start of a window with every tap inside the input, whose
                                    * inputs are then taken without the offset */
    int32_t mult[2][4];
    int32_t base[2][4];
    int32_t shift[2][4];
    int16_t w[DW_MVE_MAX_TAPS][8]; /* [ky * KW + kx][channel]: the first KH * KW */
} mcu_dw_mve_scratch_t;

/* The layout MCU_DW_MVE_GROUP_BYTES and the assembly windows assume (a C99 compile-time check):
 * the five constants 32 bytes apart (the windows read bias_full at mult - 32 or w - 128, mult,
 * base and shift at mult + 0, 32, 64), then w at MCU_DW_MVE_CONST_BYTES, a multiple of 16. */
typedef char mcu_dw_mve_layout_ok[offsetof(mcu_dw_mve_scratch_t, bias_full) == 32 &&
                                          offsetof(mcu_dw_mve_scratch_t, mult) == 64 &&
                                          offsetof(mcu_dw_mve_scratch_t, base) == 96 &&
                                          offsetof(mcu_dw_mve_scratch_t, shift) == 128 &&
                                          offsetof(mcu_dw_mve_scratch_t, w) ==
                                              MCU_DW_MVE_CONST_BYTES &&
                                          MCU_DW_MVE_CONST_BYTES % 16 == 0
                                      ? 1 : -1];

/* The k-th group (or, past the groups, their end) of a scratch of groups of `taps` taps. */
static inline mcu_dw_mve_scratch_t *mcu_dw_mve_group(mcu_dw_mve_scratch_t *scratch, int32_t taps,
                                                     int32_t k)
{
    return (mcu_dw_mve_scratch_t *)(void *)((char *)scratch + k * MCU_DW_MVE_GROUP_BYTES(taps));
}

/* _mve.c with GCC: the whole windows of 3x3 filters in full groups through one inline-assembly
 * block (gcc's code for the intrinsics reloads constants and pointers from the stack); its nine
 * taps are read at base + off[t], their weights at %[w] (g->w), the constants around %[q]
 * (g->mult; bias_full 32 bytes before, mcu_dw_mve_layout_ok). */
#if MCU_ISA_NATIVE == MCU_ISA_MVE && defined(__GNUC__)
#define DW_ASM3 1

/* q0 (even) and q1 (odd channels) += the taps in q2 (int8 widened by the caller's vldrb.s16) times
 * their int16 weights wb bytes from %[w]: the one multiply-accumulate of every assembly window. */
#define DW_MAC(wb)                                                                                \
    "vldrh.u16 q3, [%[w], #" wb "]\n\t"                                                            \
    "vmullb.s16 q4, q2, q3\n\t"                                                                    \
    "vadd.i32 q0, q0, q4\n\t"                                                                      \
    "vmullt.s16 q4, q2, q3\n\t"                                                                    \
    "vadd.i32 q1, q1, q4\n\t"

#define DW_TAP(t, wb)                                                                             \
    "ldr %[a], [%[off], #" #t "*4]\n\t"                                                            \
    "add %[a], %[base]\n\t"                                                                        \
    "vldrb.s16 q2, [%[a]]\n\t" DW_MAC(wb)

/* The end of the assembly windows: mcu_requant4 of q0 (even) and q1 (odd channels) with the
 * constants at %[q] (g->mult), both saturated to int16 into channel order, clamped to
 * [%[lo], %[hi]] (int16x8_t operands), one narrowing store at %[out]. */
#define DW_REQUANT_STORE                                                                          \
    "vldrw.u32 q2, [%[q], #0]\n\t"                                                                 \
    "vqrdmulh.s32 q3, q0, q2\n\t"                                                                  \
    "vldrw.u32 q2, [%[q], #32]\n\t"                                                                \
    "vadd.i32 q3, q3, q2\n\t"                                                                      \
    "vshr.s32 q2, q0, #31\n\t"                                                                     \
    "vadd.i32 q3, q3, q2\n\t"                                                                      \
    "vldrw.u32 q2, [%[q], #64]\n\t"                                                                \
    "vshl.s32 q0, q3, q2\n\t"                                                                      \
    "vldrw.u32 q2, [%[q], #16]\n\t"                                                                \
    "vqrdmulh.s32 q3, q1, q2\n\t"                                                                  \
    "vldrw.u32 q2, [%[q], #48]\n\t"                                                                \
    "vadd.i32 q3, q3, q2\n\t"                                                                      \
    "vshr.s32 q2, q1, #31\n\t"                                                                     \
    "vadd.i32 q3, q3, q2\n\t"                                                                      \
    "vldrw.u32 q2, [%[q], #80]\n\t"                                                                \
    "vshl.s32 q1, q3, q2\n\t"                                                                      \
    "vqmovnb.s32 q2, q0\n\t"                                                                       \
    "vqmovnt.s32 q2, q1\n\t"                                                                       \
    "vmax.s16 q2, q2, %q[lo]\n\t"                                                                  \
    "vmin.s16 q2, q2, %q[hi]\n\t"                                                                  \
    "vstrb.16 q2, [%[out]]\n\t"

/* One output position (eight channels, full group): sums from bias_full over the nine taps at
 * base + off[t] (weights g->w[t]), mcu_requant4, clamp to [lo, hi], one narrowing store. */
static inline __attribute__((always_inline)) void mve_window3x3(const mcu_dw_mve_scratch_t *g,
                                                                const int8_t *base,
                                                                const int32_t *off, int8_t *out,
                                                                int16x8_t lo, int16x8_t hi)
{
    const int8_t *a;
    __asm__ volatile(
        "vldrw.u32 q0, [%[q], #-32]\n\t"
        "vldrw.u32 q1, [%[q], #-16]\n\t"
        DW_TAP(0, "0") DW_TAP(1, "16") DW_TAP(2, "32") DW_TAP(3, "48") DW_TAP(4, "64")
        DW_TAP(5, "80") DW_TAP(6, "96") DW_TAP(7, "112") DW_TAP(8, "128")
        DW_REQUANT_STORE
        : [a] "=&l"(a)
        : [w] "r"(g->w), [q] "r"(g->mult), [base] "r"(base), [off] "r"(off), [out] "l"(out),
          [lo] "w"(lo), [hi] "w"(hi)
        : "q0", "q1", "q2", "q3", "q4", "memory");
}

#else
#define DW_ASM3 0
#endif

/* The MVE path's ring of three input rows padded with the input zero point (-input_offset,
 * whose products cancel bias_full's share of the taps outside the input): for 3x3 filters
 * with dilation 1, at least eight channels and outputs at most DW_MVE_RING_COLS padded columns
 * wide, every window of a full group reads whole rows there (_mve_ring.c). Groups of sixteen
 * channels (a second prepared group, then a ring of 16 bytes a column: half the per-group costs,
 * which weigh on the small maps of many channels) when there are at least DW_MVE_RING16_MIN_C
 * channels and at most DW_MVE_RING16_COLS columns, else of eight (8 bytes a column): at most
 * DW_MVE_RING_GROUP_BYTES + 3 * 8 * DW_MVE_RING_COLS bytes after the first group either way
 * (groups of nine taps, DW_MVE_RING_GROUP_BYTES each). They depend on the output width and
 * channels only (the same for every row band of the layer). */
#define DW_MVE_RING_COLS 32
#define DW_MVE_RING16_COLS 16
#define DW_MVE_RING16_MIN_C 128
#define DW_MVE_RING_GROUP_BYTES MCU_DW_MVE_GROUP_BYTES(9)

/* The ring's columns (0: no ring) and its channels a group (8 or 16). */
static inline int32_t dw_mve_ring_cols(const mcu_depthwise_conv_params_t *p, int32_t *lanes)
{
    *lanes = 0;
    if (p->filter.h != 3 || p->filter.w != 3 || p->dilation_h != 1 || p->dilation_w != 1 ||
        p->output.c < 8 || p->output.w > DW_MVE_RING_COLS || p->stride_w > DW_MVE_RING_COLS) {
        return 0;
    }
    const int32_t cols = (p->output.w - 1) * p->stride_w + 3;
    if (cols > DW_MVE_RING_COLS) {
        return 0;
    }
    *lanes = p->output.c >= DW_MVE_RING16_MIN_C && cols <= DW_MVE_RING16_COLS ? 16 : 8;
    return cols;
}

static inline int32_t dw_mve_ring_bytes(const mcu_depthwise_conv_params_t *p)
{
    int32_t lanes;
    const int32_t cols = dw_mve_ring_cols(p, &lanes);
    return lanes == 16 ? DW_MVE_RING_GROUP_BYTES + 3 * 16 * cols : 3 * lanes * cols;
}

/* ---- the paths ---- */

/* _generic.c: output channels first_oc .. C_out - 1 of every position (first_oc is 0, or the
 * channels the DSP path left: C_out % 4 of them). Returns MCU_OK (the dispatcher's tail call). */
mcu_status_t mcu_dw_generic(const mcu_depthwise_conv_params_t *p, const int8_t *input,
                            const int8_t *filter, const int32_t *bias, int8_t *output,
                            int32_t first_oc);

/* The lean call's 3x3 variant (mcu_dw_dsp_shifted, _dsp.c), handed to mcu_dw_dsp by the lean
 * entry only: a bundle that makes no lean call links none of it. */
typedef void (*mcu_dw_dsp_lean3x3_fn)(const mcu_dw_pass_t *s, mcu_dw_group4_t *g, int32_t (*w)[2],
                                      const int8_t *input, const int8_t *filter,
                                      const int32_t *bias, int8_t *output);

/* _dsp.c: channels 0 .. 4 * floor(C / 4) - 1 of every output (mcu_depthwise_conv2d_s8_path()
 * == MCU_PATH_DSP). scratch: an mcu_dw_dsp_scratch_t, or when lean mcu_dw_dsp_lean_bytes() (the
 * group, then its weights: single rows and lines only; lean3x3, mcu_dw_dsp_shifted, where
 * mcu_dw_dsp_lean_shifted()). */
void mcu_dw_dsp(void *scratch, const mcu_depthwise_conv_params_t *p, const int8_t *input,
                const int8_t *filter, const int32_t *bias, int8_t *output, int lean,
                mcu_dw_dsp_lean3x3_fn lean3x3);
void mcu_dw_dsp_shifted(const mcu_dw_pass_t *s, mcu_dw_group4_t *g, int32_t (*w)[2],
                        const int8_t *input, const int8_t *filter, const int32_t *bias,
                        int8_t *output);


/* _dsp1d.c: the four channels s->g of every output of one batch, line by line (in, out: the
 * batch at channel c). */
void mcu_dw_dsp_lines(const mcu_dw_pass_t *s, const int8_t *in, int8_t *out);


/* _mve.c: every output (mcu_depthwise_conv2d_s8_path() == MCU_PATH_MVE); scratch:
 * MCU_DW_MVE_GROUP_BYTES(KH * KW) + dw_mve_ring_bytes() bytes, none with `groups` (the lean
 * call's build-time params->mve_groups: ceil(C / 8) groups in mcu_dw_mve_scratch_t's layout, as
 * mcu_dw_mve_prepare writes them, then for a 3x3 filter MCU_DW_MVE_EDGE_BYTES a group). Returns
 * MCU_OK. */
mcu_status_t mcu_dw_mve(mcu_dw_mve_scratch_t *scratch, const mcu_depthwise_conv_params_t *p,
                        const int8_t *input, const int8_t *filter, const int32_t *bias,
                        int8_t *output, const int32_t *groups);

/* _mve_ring.c, for both MVE files: channels c .. c + 7 of the weights (KH * KW taps of g->w)
 * and requantization constants into g (those past C_out zero). */
void mcu_dw_mve_prepare(mcu_dw_mve_scratch_t *g, const mcu_depthwise_conv_params_t *p,
                        const int8_t *filter, const int32_t *bias, int32_t c);

/* _mve_ring.c: every output of the full groups of eight channels (of sixteen where
 * dw_mve_ring_cols() says so) through the ring, after the prepared group(s) at the start of
 * the scratch, DW_MVE_RING_GROUP_BYTES each (dw_mve_ring_cols() > 0). Returns the first
 * channel left: C_out rounded down to a multiple of 8. */
int32_t mcu_dw_mve_ring(mcu_dw_mve_scratch_t *scratch, const mcu_depthwise_conv_params_t *p,
                        const int8_t *input, const int8_t *filter, const int32_t *bias,
                        int8_t *output);

/* _mve.c, for the generic loops on MVE targets (depth_multiplier == 1): every channel of one
 * output position, eight at a time; returns C_out (the channels done). */
int32_t mcu_dw_channel_blocks_mve(const mcu_dw_taps_t *t, const mcu_depthwise_conv_params_t *p,
                                  const int32_t *bias, int8_t *out_px);

/* _ref.c (tests only): the reference, one output element at a time. Same contract as
 * mcu_depthwise_conv2d_s8 without scratch. */
mcu_status_t mcu_depthwise_conv2d_s8_ref(const mcu_depthwise_conv_params_t *params,
                                         const int8_t *input, const int8_t *filter,
                                         const int32_t *bias, int8_t *output);

#endif /* MCU_DEPTHWISE_CONV2D_S8_INTERNAL_H */
