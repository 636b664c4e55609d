/*
 * mcu_depthwise_conv2d_s8_mve.c - the MVE (Helium) path of mcu_depthwise_conv2d_s8 (Cortex-M55):
 * depth_multiplier == 1, eight channels at a time over the whole output (the last group
 * predicated), their weights as int16 and their requantization constants prepared once per
 * group into the scratch (mcu_dw_mve_scratch_t: the constants, then the filter's taps only,
 * MCU_DW_MVE_GROUP_BYTES(KH * KW) bytes).
 * Per tap: the eight inputs widened to int16 (plus the input offset where the window has taps
 * outside the input), VMULLB/VMULLT by the weights into two int32x4 accumulators (even and odd
 * channels); per position: mcu_requant4 (mcu_requant.h) of both, VMOVNB/VMOVNT back into channel
 * order, one narrowing store. Whole windows (every tap inside the input) start from bias_full
 * and read the inputs without the offset, in runs: 3x3 in one inline-assembly block (with GCC,
 * mve_window3x3 in the internal header), one-row/one-column filters (Kx1, 1xK: 1-D
 * convolutions) two positions per weight load, others nested; border windows take their valid
 * taps with the offset. 3x3 filters on narrow outputs (dw_mve_ring_cols() > 0) run their full
 * groups in _mve_ring.c instead (every window whole, through a zero-point-padded row ring);
 * the groups' preparation (mcu_dw_mve_prepare) is there too. Other 3x3 calls with GCC whose
 * border windows have one column of taps outside the input at most (m->rows3: the lean call's
 * bands, wide outputs) run every window of a full group in assembly, a border one from start
 * sums that hold the missing taps' zero-point products (start_sums: bias_full + zp * their
 * weights, as the ring's padding adds them) and then only its taps inside (rows_3x3, row2_3x3).
 * Conditions (mcu_depthwise_conv2d_s8_path; else the generic loops run, their channel blocks
 * from mcu_dw_channel_blocks_mve at the end of this file): mcu_requant2_ok() for every channel,
 * KH * KW <= DW_MVE_MAX_TAPS (then |acc| < 2^29 + 25 * 255 * 128 < 2^30).
 */
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE

#include <arm_mve.h>
#include <stdint.h>

#include "mcu_depthwise_conv2d_s8_internal.h"

/* What a group's positions share. */
typedef struct {
    const mcu_depthwise_conv_params_t *p;
    const mcu_dw_mve_scratch_t *g;
    int32_t in_row;   /* bytes of one input row */
    int32_t x_row;    /* dilation_h * in_row: from one tap row to the next */
    int32_t x_col;    /* dilation_w * C: from one tap column to the next */
    int32_t x_step;   /* stride_w * C: from one output column's window to the next */
    int32_t x_begin;  /* output columns [x_begin, x_end) have every kx inside the input */
    int32_t x_end;
    int32_t y_begin;  /* output rows [y_begin, y_end) have every ky inside the input */
    int32_t y_end;
    mve_pred16_t pred; /* the group's channels (all 8 unless the last group is partial) */
    int full;          /* act_min == -128 and act_max == 127 */
    int32_t whole[9];  /* 3x3 filters: tap t's input bytes from its window's first tap */
    /* rows_3x3 (3x3 filters whose border windows in rows [y_begin, y_end) are edges, GCC): */
    int rows3;         /* rows_3x3 runs those rows */
    int32_t edge[2];   /* left, right: the edge windows a row (0 or 1) */
    int32_t at[3];     /* bytes from a row's first input byte: left edge's first tap (column 1),
                        * the first whole window's, the right edge's first tap */
    const int32_t *edges; /* the lean call's build-time edge sums (MCU_DW_MVE_EDGE_BYTES a
                           * group), or NULL: edge_sums computes them */
} mve_ctx_t;

/* acc_e/acc_o += (x + offset) * w over one tap: x the eight inputs at xp (lanes past `pred`
 * not read when `partial`), w eight int16 weights */
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

/* mcu_requant4 with the group's constants (g), clamp (full: to int8 only, else to [lo, hi]), back
 * into channel order, one narrowing store of the group's channels (`pred` when partial) */
static inline __attribute__((always_inline)) void mve_store(const mcu_dw_mve_scratch_t *g,
                                                            int full, int32_t lo, int32_t hi,
                                                            int32x4_t e, int32x4_t o,
                                                            int8_t *out, mve_pred16_t pred,
                                                            int partial)
{
    e = mcu_requant4(e, vld1q_s32(g->mult[0]), vld1q_s32(g->base[0]), vld1q_s32(g->shift[0]));
    o = mcu_requant4(o, vld1q_s32(g->mult[1]), vld1q_s32(g->base[1]), vld1q_s32(g->shift[1]));
    int16x8_t v;
    if (full) { /* saturate to int16 while restoring the channel order, then to int8 */
        v = vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), e), o);
        v = vreinterpretq_s16_s8(vqmovnbq_s16(vdupq_n_s8(0), v));
    } else {
        e = vminq_s32(vmaxq_s32(e, vdupq_n_s32(lo)), vdupq_n_s32(hi));
        o = vminq_s32(vmaxq_s32(o, vdupq_n_s32(lo)), vdupq_n_s32(hi));
        v = vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), e), o);
    }
    if (partial) {
        vstrbq_p_s16(out, v, pred);
    } else {
        vstrbq_s16(out, v);
    }
}

/* One output position from `rows` x `cols` taps: tap (j, i) at x + j * x_row + i * x_col,
 * its weights at w + 8 * (j * KW + i). whole (a constant where inlined): every tap of the
 * filter, inside the input (bias_full, no offset). */
static inline __attribute__((always_inline)) void mve_px(const mve_ctx_t *m, const int8_t *x,
                                                         const int16_t *w, int32_t rows,
                                                         int32_t cols, int whole, int8_t *out,
                                                         int partial)
{
    const mcu_dw_mve_scratch_t *const g = m->g;
    const int16x8_t offset = vdupq_n_s16((int16_t)m->p->q.input_offset);
    const mve_pred16_t pred = m->pred;
    const int32_t x_row = m->x_row;
    const int32_t x_col = m->x_col;
    const int32_t k_w = m->p->filter.w;
    int32x4_t e = vld1q_s32(whole ? g->bias_full[0] : g->bias[0]);
    int32x4_t o = vld1q_s32(whole ? g->bias_full[1] : g->bias[1]);
    if (rows == 1 || cols == 1) { /* one row or one column of taps: one loop */
        const int32_t x_step = cols == 1 ? x_row : x_col;
        const int32_t w_step = cols == 1 ? 8 * k_w : 8;
        for (int32_t t = rows * cols; t > 0; --t, x += x_step, w += w_step) {
            mve_tap(&e, &o, x, w, offset, pred, partial, !whole);
        }
    } else {
        for (int32_t j = rows; j > 0; --j, x += x_row, w += 8 * k_w) {
            const int8_t *xp = x;
            const int16_t *wp = w;
            for (int32_t i = cols; i > 0; --i, xp += x_col, wp += 8) {
                mve_tap(&e, &o, xp, wp, offset, pred, partial, !whole);
            }
        }
    }
    mve_store(g, m->full, m->p->q.act_min, m->p->q.act_max, e, o, out, pred, partial);
}

#if DW_ASM3
/* 3x3 filters, full groups: the starting sums of a window some of whose taps lie outside the
 * input (the set `missing`, bit t for tap t): bias_full + zp * their weights (zp = -input_offset,
 * the products the ring's padding would add: they cancel bias_full's share of those taps), so that
 * the others are met without the offset. */
static inline __attribute__((always_inline)) void start_sums(const mcu_dw_mve_scratch_t *g,
                                                             int16x8_t zp, uint32_t missing,
                                                             int32_t *acc)
{
    int16x8_t w = vdupq_n_s16(0); /* |w| <= 5 * 128 */
#define DW_MISSING_TAP(t)                                                                          \
    if ((missing >> (t)) & 1u) {                                                                   \
        w = vaddq_s16(w, vld1q_s16(g->w[t]));                                                      \
    }
    /* (unrolled: a constant `missing` leaves only its taps' loads) */
    DW_MISSING_TAP(0) DW_MISSING_TAP(1) DW_MISSING_TAP(2) DW_MISSING_TAP(3) DW_MISSING_TAP(4)
    DW_MISSING_TAP(5) DW_MISSING_TAP(6) DW_MISSING_TAP(7) DW_MISSING_TAP(8)
#undef DW_MISSING_TAP
    vst1q_s32(acc, vaddq_s32(vld1q_s32(g->bias_full[0]), vmullbq_int_s16(w, zp)));
    vst1q_s32(acc + 4, vaddq_s32(vld1q_s32(g->bias_full[1]), vmulltq_int_s16(w, zp)));
}

/* The taps of a column / row of a 3x3 filter (bits of start_sums' `missing`). */
#define DW_COL(i) (0x49u << (i))
#define DW_ROW(j) (0x7u << (3 * (j)))

/* The starting sums of a row's left (edge 0) and right (edge 1) windows, every tap row inside. */
typedef struct {
    int32_t acc[2][2][4]; /* [edge][even, odd channels][lane] */
} dw_edges_t;

DW_NOINLINE static void edge_sums(const mcu_dw_mve_scratch_t *g, int32_t input_offset,
                                  dw_edges_t *ed)
{
    const int16x8_t zp = vdupq_n_s16((int16_t)-input_offset);
    start_sums(g, zp, DW_COL(0), ed->acc[0][0]);
    start_sums(g, zp, DW_COL(2), ed->acc[1][0]);
}

typedef char dw_edges_layout_ok[sizeof(dw_edges_t) == MCU_DW_MVE_EDGE_BYTES ? 1 : -1];

/* The edge sums of the group at channel c: the lean call's (m->edges), or edge_sums' into *own. */
static inline const dw_edges_t *edges_at(const mve_ctx_t *m, int32_t c, dw_edges_t *own)
{
    if (m->edges != NULL) {
        const int32_t *const at = m->edges + (c >> 3) * (MCU_DW_MVE_EDGE_BYTES / 4);
        return (const dw_edges_t *)(const void *)at;
    }
    edge_sums(m->g, m->p->q.input_offset, own);
    return own;
}

/* A tap at %[a], its weights wb bytes from %[w]. */
#define DW_EDGE_TAP(wb) "vldrb.s16 q2, [%[a]]\n\t" DW_MAC(wb)
#define DW_NEXT_COL "add %[a], %[col]\n\t"

/* One output position of a full group from the starting sums acc (start_sums) and a rectangle of
 * taps at x + j * x_row + i * x_col, their weights w + 24 j + 8 i (int16: g->w[t] of its first
 * tap t): mve_edge3x2 three rows of two, mve_edge2x3 two of three, mve_edge2x2 two of two;
 * mcu_requant4, clamp and store as mve_window3x3. */
#define DW_EDGE(NAME, TAPS)                                                                       \
    static inline __attribute__((always_inline)) void NAME(                                       \
        const mcu_dw_mve_scratch_t *g, const int32_t *acc, const int16_t *w, const int8_t *x,      \
        int32_t x_row, int32_t x_col, int8_t *out, int16x8_t lo, int16x8_t hi)                     \
    {                                                                                              \
        const int8_t *a;                                                                           \
        __asm__ volatile("vldrw.u32 q0, [%[acc]]\n\t"                                              \
                         "vldrw.u32 q1, [%[acc], #16]\n\t"                                         \
                         "mov %[a], %[x]\n\t" TAPS DW_REQUANT_STORE                                \
                         : [a] "=&l"(a)                                                            \
                         : [acc] "r"(acc), [w] "r"(w), [q] "r"(g->mult), [x] "r"(x),               \
                           [row] "r"(x_row), [col] "r"(x_col), [out] "l"(out), [lo] "w"(lo),       \
                           [hi] "w"(hi)                                                            \
                         : "q0", "q1", "q2", "q3", "q4", "memory");                                \
    }
DW_EDGE(mve_edge3x2, DW_EDGE_TAP("0") DW_NEXT_COL DW_EDGE_TAP("16")
        "add %[a], %[x], %[row]\n\t" DW_EDGE_TAP("48") DW_NEXT_COL DW_EDGE_TAP("64")
        "add %[a], %[x], %[row], lsl #1\n\t" DW_EDGE_TAP("96") DW_NEXT_COL DW_EDGE_TAP("112"))
DW_EDGE(mve_edge2x3, DW_EDGE_TAP("0") DW_NEXT_COL DW_EDGE_TAP("16") DW_NEXT_COL DW_EDGE_TAP("32")
        "add %[a], %[x], %[row]\n\t" DW_EDGE_TAP("48") DW_NEXT_COL DW_EDGE_TAP("64") DW_NEXT_COL
        DW_EDGE_TAP("80"))
DW_EDGE(mve_edge2x2, DW_EDGE_TAP("0") DW_NEXT_COL DW_EDGE_TAP("16")
        "add %[a], %[x], %[row]\n\t" DW_EDGE_TAP("48") DW_NEXT_COL DW_EDGE_TAP("64"))
#else
typedef struct {
    int32_t unused;
} dw_edges_t;
#endif

/* One output position whose window may stick out of the input: its valid taps, with the
 * offset (rows: its valid tap rows [ky_begin, ky_end) start at x_rows). */
static inline __attribute__((always_inline)) void mve_border(const mve_ctx_t *m,
                                                             const int8_t *x_rows,
                                                             int32_t ky_begin, int32_t rows,
                                                             int32_t out_x, int8_t *out,
                                                             int partial)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    const int32_t in_x = out_x * p->stride_w - p->pad_left;
    int32_t kx_begin, kx_end;
    valid_taps(in_x, p->dilation_w, p->filter.w, p->input.w, &kx_begin, &kx_end);
    const int32_t cols = kx_end - kx_begin;
    const int32_t in_c = p->input.c;
    if (rows == 0 || cols == 0) { /* no tap inside: the bias alone */
        mve_px(m, x_rows, m->g->w[0], 0, 0, 0, out, partial);
        return;
    }
    mve_px(m, x_rows + (in_x + kx_begin * p->dilation_w) * in_c,
           m->g->w[ky_begin * p->filter.w + kx_begin], rows, cols, 0, out, partial);
}

/* Runs of n positions with whole windows (every tap inside the input), full groups: the first
 * window at x, output o, the next ones x_step and C bytes on. Everything the loop reads is in
 * locals (the output stores may alias any memory). */
typedef struct {
    const mcu_dw_mve_scratch_t *g;
    int32_t x_row;
    int32_t x_col;
    int32_t out_c;
    int32_t lo;
    int32_t hi;
    int full;
} mve_run_t;

static mve_run_t run_of(const mve_ctx_t *m)
{
    const mve_run_t r = {m->g, m->x_row, m->x_col, m->p->output.c, m->p->q.act_min,
                         m->p->q.act_max, m->full};
    return r;
}

/* 3x3 windows, unrolled (with GCC: mve_window3x3). */
DW_NOINLINE static void run_3x3(const mve_ctx_t *m, const int8_t *x, int8_t *o, int32_t n,
                                int32_t x_step)
{
    const mve_run_t r = run_of(m);
#if DW_ASM3
    const int16x8_t lo = vdupq_n_s16((int16_t)r.lo);
    const int16x8_t hi = vdupq_n_s16((int16_t)r.hi);
    for (; n > 0; --n, x += x_step, o += r.out_c) {
        mve_window3x3(r.g, x, m->whole, o, lo, hi);
    }
#else
    const int16x8_t none = vdupq_n_s16(0);
    const mve_pred16_t all = vctp16q(8u);
    for (; n > 0; --n, x += x_step, o += r.out_c) {
        int32x4_t e = vld1q_s32(r.g->bias_full[0]);
        int32x4_t od = vld1q_s32(r.g->bias_full[1]);
        const int8_t *xr = x;
        const int16_t *w = r.g->w[0];
        for (int32_t j = 0; j < 3; ++j, xr += r.x_row, w += 24) {
            mve_tap(&e, &od, xr, w, none, all, 0, 0);
            mve_tap(&e, &od, xr + r.x_col, w + 8, none, all, 0, 0);
            mve_tap(&e, &od, xr + 2 * r.x_col, w + 16, none, all, 0, 0);
        }
        mve_store(r.g, r.full, r.lo, r.hi, e, od, o, all, 0);
    }
#endif
}

#if DW_ASM3
/* n_rows output rows (o: the first one's first output) whose tap rows are all inside the input
 * and whose border windows are edges (m->rows3): a row's left edge, its whole windows, its right
 * edge, all in assembly (mve_edge3x2 from edge_sums' sums ed, mve_window3x3). */
DW_NOINLINE static void rows_3x3(const mve_ctx_t *m, const dw_edges_t *ed, const int8_t *x_rows,
                                 int8_t *o, int32_t n_rows)
{
    const mcu_dw_mve_scratch_t *const g = m->g;
    const mcu_depthwise_conv_params_t *const p = m->p;
    const int16x8_t lo = vdupq_n_s16((int16_t)p->q.act_min);
    const int16x8_t hi = vdupq_n_s16((int16_t)p->q.act_max);
    const int32_t out_c = p->output.c;
    const int32_t out_row = p->output.w * out_c;
    const int32_t y_step = p->stride_h * m->in_row;
    const int32_t x_row = m->x_row;
    const int32_t x_col = m->x_col;
    const int32_t x_step = m->x_step;
    const int32_t whole = m->x_end - m->x_begin;
    for (; n_rows > 0; --n_rows, x_rows += y_step, o += out_row) {
        int8_t *op = o;
        if (m->edge[0] != 0) {
            mve_edge3x2(g, ed->acc[0][0], g->w[1], x_rows + m->at[0], x_row, x_col, op, lo, hi);
            op += out_c;
        }
        const int8_t *x = x_rows + m->at[1];
        for (int32_t n = whole; n > 0; --n, x += x_step, op += out_c) {
            mve_window3x3(g, x, m->whole, op, lo, hi);
        }
        if (m->edge[1] != 0) {
            mve_edge3x2(g, ed->acc[1][0], g->w[0], x_rows + m->at[2], x_row, x_col, op, lo, hi);
        }
    }
}

/* One output row whose windows lack their top (ky_begin 1) or bottom tap row (ky_begin 0), the
 * other two inside the input from x_rows on (m->rows3): every window from start_sums' sums, in
 * assembly (mve_edge2x2 for the edges, mve_edge2x3 between them). */
DW_NOINLINE static void row2_3x3(const mve_ctx_t *m, const int8_t *x_rows, int32_t ky_begin,
                                 int8_t *o)
{
    const mcu_dw_mve_scratch_t *const g = m->g;
    const mcu_depthwise_conv_params_t *const p = m->p;
    const int16x8_t lo = vdupq_n_s16((int16_t)p->q.act_min);
    const int16x8_t hi = vdupq_n_s16((int16_t)p->q.act_max);
    const int16x8_t zp = vdupq_n_s16((int16_t)-p->q.input_offset);
    const uint32_t missing = DW_ROW(ky_begin == 0 ? 2 : 0);
    const int16_t *const w = g->w[3 * ky_begin];
    const int32_t out_c = p->output.c;
    int32_t acc[8];
    if (m->edge[0] != 0) {
        start_sums(g, zp, missing | DW_COL(0), acc);
        mve_edge2x2(g, acc, w + 8, x_rows + m->at[0], m->x_row, m->x_col, o, lo, hi);
        o += out_c;
    }
    start_sums(g, zp, missing, acc);
    const int8_t *x = x_rows + m->at[1];
    for (int32_t n = m->x_end - m->x_begin; n > 0; --n, x += m->x_step, o += out_c) {
        mve_edge2x3(g, acc, w, x, m->x_row, m->x_col, o, lo, hi);
    }
    if (m->edge[1] != 0) {
        start_sums(g, zp, missing | DW_COL(2), acc);
        mve_edge2x2(g, acc, w, x_rows + m->at[2], m->x_row, m->x_col, o, lo, hi);
    }
}
#endif

/* One-row or one-column filters (`taps` taps, x_tap bytes apart): two positions at a time, each
 * weight vector loaded once for both. */
DW_NOINLINE static void run_1d(const mve_ctx_t *m, const int8_t *x, int8_t *o, int32_t n,
                               int32_t x_step, int32_t taps, int32_t x_tap)
{
    const mve_run_t r = run_of(m);
    const mve_pred16_t all = vctp16q(8u);
    for (; n > 0; n -= 2, x += 2 * x_step, o += 2 * r.out_c) {
        const int two = n > 1;
        const int8_t *x0 = x;
        const int8_t *x1 = two ? x + x_step : x; /* (a lone last position: computed twice) */
        const int16_t *w = r.g->w[0];
        int32x4_t e0 = vld1q_s32(r.g->bias_full[0]);
        int32x4_t o0 = vld1q_s32(r.g->bias_full[1]);
        int32x4_t e1 = e0;
        int32x4_t o1 = o0;
        for (int32_t t = taps; t > 0; --t, x0 += x_tap, x1 += x_tap, w += 8) {
            const int16x8_t wv = vld1q_s16(w);
            const int16x8_t a = vldrbq_s16(x0);
            e0 = vaddq_s32(e0, vmullbq_int_s16(a, wv));
            o0 = vaddq_s32(o0, vmulltq_int_s16(a, wv));
            const int16x8_t b = vldrbq_s16(x1);
            e1 = vaddq_s32(e1, vmullbq_int_s16(b, wv));
            o1 = vaddq_s32(o1, vmulltq_int_s16(b, wv));
#if defined(__GNUC__)
            __asm__ volatile("" : "+w"(e0), "+w"(o0), "+w"(e1), "+w"(o1));
#endif
        }
        mve_store(r.g, r.full, r.lo, r.hi, e0, o0, o, all, 0);
        if (two) {
            mve_store(r.g, r.full, r.lo, r.hi, e1, o1, o + r.out_c, all, 0);
        }
    }
}

/* n positions with whole windows from x / o (see above); other filters and the last group
 * (partial) through mve_px's nested loops. */
static inline __attribute__((always_inline)) void mve_run(const mve_ctx_t *m, const int8_t *x,
                                                          int8_t *o, int32_t n, int32_t x_step,
                                                          int partial)
{
    const int32_t k_h = m->p->filter.h;
    const int32_t k_w = m->p->filter.w;
    if (!partial && k_h == 3 && k_w == 3) {
        run_3x3(m, x, o, n, x_step);
    } else if (!partial && (k_w == 1 || k_h == 1)) {
        run_1d(m, x, o, n, x_step, k_h * k_w, k_w == 1 ? m->x_row : m->x_col);
    } else {
        for (; n > 0; --n, x += x_step, o += m->p->output.c) {
            mve_px(m, x, m->g->w[0], k_h, k_w, 1, o, partial);
        }
    }
}

/* One output row whose windows may stick out of the input at the top or bottom: the valid
 * tap rows of every column (out: the row's first output at channel c). */
static inline __attribute__((always_inline)) void mve_row(const mve_ctx_t *m, const int8_t *in,
                                                          int8_t *out, int32_t out_y,
                                                          int partial, int rows3)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    const int32_t out_c = p->output.c;
    const mcu_dw_tap_rows_t r = mcu_dw_tap_rows(p, in, &m->in_row, out_y);
#if DW_ASM3
    if (rows3 && r.rows == 2) {
        row2_3x3(m, r.x, r.ky_begin, out);
        return;
    }
#else
    (void)rows3;
#endif
    for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
        mve_border(m, r.x, r.ky_begin, r.rows, out_x, out + out_x * out_c, partial);
    }
}

/* Every output of one group: in/out the batch's tensors at channel c. Rows [y_begin, y_end)
 * have every tap row inside the input; in them, columns [x_begin, x_end) are whole windows,
 * one run of positions (all rows at once when the output is one column wide: 1-D along H);
 * with edges (m->rows3: edge_sums' sums), those rows through rows_3x3. */
static inline __attribute__((always_inline)) void mve_group_body(const mve_ctx_t *m,
                                                                 const int8_t *in, int8_t *out,
                                                                 int partial,
                                                                 const dw_edges_t *edges)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    const int32_t in_c = p->input.c;
    const int32_t out_c = p->output.c;
    const int32_t out_w = p->output.w;
    const int32_t k_h = p->filter.h;
    const int32_t out_row = out_w * out_c;
    const int32_t y_begin = m->y_begin;
    const int32_t y_end = m->y_end;
    const int32_t x_begin = m->x_begin;
    const int32_t x_end = m->x_end;
    for (int32_t out_y = 0; out_y < y_begin; ++out_y) {
        mve_row(m, in, out + out_y * out_row, out_y, partial, edges != NULL);
    }
    const int32_t y_step = p->stride_h * m->in_row;
    const int8_t *x_rows = in + (y_begin * p->stride_h - p->pad_top) * m->in_row;
#if DW_ASM3
    if (edges != NULL) {
        rows_3x3(m, edges, x_rows, out + y_begin * out_row, y_end - y_begin);
    } else
#else
    (void)edges;
#endif
    if (out_w == 1 && x_begin == 0 && x_end == 1) { /* one column: a run down the rows */
        mve_run(m, x_rows - p->pad_left * in_c, out + y_begin * out_c, y_end - y_begin, y_step,
                partial);
    } else {
        for (int32_t out_y = y_begin; out_y < y_end; ++out_y, x_rows += y_step) {
            int8_t *const o_row = out + out_y * out_row;
            for (int32_t out_x = 0; out_x < x_begin; ++out_x) {
                mve_border(m, x_rows, 0, k_h, out_x, o_row + out_x * out_c, partial);
            }
            mve_run(m, x_rows + (x_begin * p->stride_w - p->pad_left) * in_c,
                    o_row + x_begin * out_c, x_end - x_begin, m->x_step, partial);
            for (int32_t out_x = x_end; out_x < out_w; ++out_x) {
                mve_border(m, x_rows, 0, k_h, out_x, o_row + out_x * out_c, partial);
            }
        }
    }
    for (int32_t out_y = y_end > y_begin ? y_end : y_begin; out_y < p->output.h; ++out_y) {
        mve_row(m, in, out + out_y * out_row, out_y, partial, edges != NULL);
    }
}

/* The full group at channel c (m->rows3: its rows with every tap row inside through rows_3x3). */
DW_NOINLINE static void mve_group(const mve_ctx_t *m, int32_t c, const int8_t *in, int8_t *out)
{
    dw_edges_t edges;
    const dw_edges_t *rows3 = NULL;
#if DW_ASM3
    if (m->rows3) {
        rows3 = &edges;
        if ((m->edge[0] != 0 || m->edge[1] != 0) && m->y_end > m->y_begin) {
            rows3 = edges_at(m, c, &edges);
        }
    }
#else
    (void)c;
#endif
    mve_group_body(m, in, out, 0, rows3);
}

/* The last group when C % 8 != 0 (predicated loads and stores). */
DW_NOINLINE static void mve_group_partial(const mve_ctx_t *m, const int8_t *in, int8_t *out)
{
    mve_group_body(m, in, out, 1, NULL);
}


/* m->rows3 and its edges: 3x3 filters (GCC) whose rows with every tap row inside have at most
 * one border window on either side, each with one column of taps outside (an edge). */
static void rows3_plan(mve_ctx_t *m)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    m->rows3 = 0;
#if DW_ASM3
    if (p->filter.h != 3 || p->filter.w != 3) {
        return;
    }
    const int32_t out_w = p->output.w;
    const int32_t in_c = p->input.c;
    const int32_t border[2] = {m->x_begin, out_w - m->x_end};
    const int32_t x[2] = {0, out_w - 1};
    for (int32_t e = 0; e < 2; ++e) {
        m->edge[e] = border[e];
        if (border[e] == 0) {
            continue;
        }
        const int32_t in_x = x[e] * p->stride_w - p->pad_left;
        int32_t kx_begin, kx_end;
        valid_taps(in_x, p->dilation_w, 3, p->input.w, &kx_begin, &kx_end);
        if (border[e] != 1 || kx_end - kx_begin != 2 || (kx_begin == 0) != (e == 1)) {
            return;
        }
        m->at[2 * e] = (in_x + kx_begin * p->dilation_w) * in_c;
    }
    m->at[1] = (m->x_begin * p->stride_w - p->pad_left) * in_c;
    m->rows3 = 1;
#endif
}

/* Group c's constants and weights: the lean call's build-time groups, or prepared into scratch. */
static const mcu_dw_mve_scratch_t *group_at(const mve_ctx_t *m, mcu_dw_mve_scratch_t *scratch,
                                            const int32_t *groups, const int8_t *filter,
                                            const int32_t *bias, int32_t c)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    if (groups != NULL) {
        return (const mcu_dw_mve_scratch_t *)(const void *)(
            groups + (c >> 3) * (MCU_DW_MVE_GROUP_BYTES(p->filter.h * p->filter.w) / 4));
    }
    mcu_dw_mve_prepare(scratch, p, filter, bias, c);
    return scratch;
}

/* The full groups of a call whose output rows all have every tap row inside the input (m->rows3,
 * y_begin 0, y_end output.h): per group (group_at), its edge sums (edges_at), then rows_3x3's
 * rows of every batch. Returns the first channel left (a partial group's). */
static int32_t rows3_groups(mve_ctx_t *m, mcu_dw_mve_scratch_t *scratch, const int32_t *groups,
                            const int8_t *input, const int8_t *filter, const int32_t *bias,
                            int8_t *output)
{
#if DW_ASM3
    const mcu_depthwise_conv_params_t *const p = m->p;
    const int32_t out_c = p->output.c;
    const int32_t in_batch = p->input.h * m->in_row;
    const int32_t out_batch = p->output.h * p->output.w * out_c;
    int32_t c = 0;
    for (; c + 8 <= out_c; c += 8) {
        m->g = group_at(m, scratch, groups, filter, bias, c);
        dw_edges_t edges;
        const dw_edges_t *ed = &edges;
        if (m->edge[0] != 0 || m->edge[1] != 0) {
            ed = edges_at(m, c, &edges);
        }
        for (int32_t b = 0; b < p->input.n; ++b) {
            rows_3x3(m, ed, input + b * in_batch + c, output + b * out_batch + c, p->output.h);
        }
    }
    return c;
#else
    (void)m, (void)scratch, (void)groups, (void)input, (void)filter, (void)bias, (void)output;
    return 0;
#endif
}

/* The whole convolution through the MVE path (mcu_depthwise_conv2d_s8_path() == MCU_PATH_MVE); with
 * `groups` (the lean call's params->mve_groups) each group read from there, nothing prepared, no
 * scratch and no ring. */
mcu_status_t mcu_dw_mve(mcu_dw_mve_scratch_t *scratch, const mcu_depthwise_conv_params_t *p,
                        const int8_t *input, const int8_t *filter, const int32_t *bias,
                        int8_t *output, const int32_t *groups)
{
    const int32_t in_w = p->input.w;
    const int32_t out_c = p->output.c;
    const int32_t in_batch = p->input.h * in_w * p->input.c;
    const int32_t out_batch = p->output.h * p->output.w * out_c;
    int32_t ring_lanes = 0;
    if (groups == NULL) { /* (the lean call's build-time groups: no scratch, so no ring) */
        (void)dw_mve_ring_cols(p, &ring_lanes);
    }
    mve_ctx_t m;
    m.p = p;
    m.g = scratch;
    m.in_row = in_w * p->input.c;
    m.x_row = p->dilation_h * m.in_row;
    m.x_col = p->dilation_w * p->input.c;
    m.x_step = p->stride_w * p->input.c;
    m.full = p->q.act_min == MCU_INT8_MIN && p->q.act_max == MCU_INT8_MAX;
    m.edges = groups != NULL && p->filter.h == 3 && p->filter.w == 3
                  ? groups + ((out_c + 7) >> 3) * (MCU_DW_MVE_GROUP_BYTES(9) / 4)
                  : NULL;
    if (p->filter.h == 3 && p->filter.w == 3) {
        for (int32_t j = 0; j < 3; ++j) {
            const int32_t row = j * m.x_row;
            m.whole[3 * j] = row;
            m.whole[3 * j + 1] = row + m.x_col;
            m.whole[3 * j + 2] = row + 2 * m.x_col;
        }
    }
    mcu_inside_positions(p->pad_left, p->stride_w, p->dilation_w, p->filter.w, in_w, p->output.w,
                         &m.x_begin, &m.x_end);
    mcu_inside_positions(p->pad_top, p->stride_h, p->dilation_h, p->filter.h, p->input.h,
                         p->output.h, &m.y_begin, &m.y_end);
    rows3_plan(&m);
    /* the full groups through the ring when it is planned (dw_mve_ring_bytes() > 0), or through
     * rows3_groups when every row is rows_3x3's */
    int32_t c = 0;
    if (ring_lanes > 0) {
        c = mcu_dw_mve_ring(scratch, p, input, filter, bias, output);
    } else if (m.rows3 && m.y_begin == 0 && m.y_end == p->output.h) {
        c = rows3_groups(&m, scratch, groups, input, filter, bias, output);
    }
    for (; c < out_c; c += 8) {
        m.g = group_at(&m, scratch, groups, filter, bias, c);
        m.pred = vctp16q((uint32_t)(out_c - c));
        for (int32_t b = 0; b < p->input.n; ++b) {
            if (c + 8 <= out_c) {
                mve_group(&m, c, input + b * in_batch + c, output + b * out_batch + c);
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
    even = mcu_output_stage4(
        even, vldrwq_gather_shifted_offset_z_s32(params->multiplier + c, lanes, p_even),
        vldrwq_gather_shifted_offset_z_s32(params->shift + c, lanes, p_even), &params->q);
    vstrbq_scatter_offset_p_s32(out_px + c, lanes, even, p_even);
    odd = mcu_output_stage4(
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
