/*
 * mcu_depthwise_conv2d_s8_mve_ring.c - part of the MVE path of mcu_depthwise_conv2d_s8 (see
 * _mve.c): the preparation of a group of eight channels (mcu_dw_mve_prepare: int16 weights,
 * requantization constants, bias_full), and 3x3 filters with dilation 1 on narrow outputs
 * (dw_mve_ring_cols() > 0): the full groups of sixteen (or eight) channels, the input rows
 * their windows read copied into a ring of three rows padded with the input zero point
 * (zp = -input_offset), so that every window, the border ones too, is whole: nine taps from
 * bias_full (zp * w = -input_offset * w cancels the tap's share of it), no per-position tests,
 * one inline-assembly block a window with GCC.
 * Padded row r (input row r - pad_top; zp outside the input) lies in ring slot r % 3, its
 * columns from padded column 0 (input column -pad_left), 8 or 16 bytes each (the group's
 * channels). Same integer sums as the reference (bit-exact), as the rest of the path.
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
    const int32_t taps = p->filter.h * p->filter.w;
    const mve_pred16_t lanes = vctp16q((uint32_t)(out_c - c));
    int16x8_t w_sum = vdupq_n_s16(0);
    const int8_t *f = filter + c;
    int16_t *gw = g->w[0];
    if (out_c - c >= 8) { /* (no predication) */
        for (int32_t t = taps; t > 0; --t, f += out_c, gw += 8) {
            const int16x8_t w = vldrbq_s16(f);
            vst1q_s16(gw, w);
            w_sum = vaddq_s16(w_sum, w); /* |sum| <= 25 * 128 */
        }
    } else {
        for (int32_t t = taps; t > 0; --t, f += out_c, gw += 8) {
            const int16x8_t w = vldrbq_z_s16(f, lanes);
            vst1q_s16(gw, w);
            w_sum = vaddq_s16(w_sum, w);
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
 * mcu_requant2_lift added to the sums' starting values, base' (mcu_requant2_no_tie_q). */
static void mve_prepare_no_tie(mcu_dw_mve_scratch_t *g, const mcu_depthwise_conv_params_t *p,
                               int32_t c)
{
    for (int32_t k = 0; k < 8 && c + k < p->output.c; ++k) {
        const int32_t odd = k & 1;
        const int32_t j = k >> 1;
        int32_t lift2;
        g->base[odd][j] = mcu_requant2_no_tie_q(p->multiplier[c + k], p->shift[c + k],
                                            p->q.output_offset, &lift2);
        g->bias[odd][j] += lift2 / 2;
        g->bias_full[odd][j] += lift2 / 2;
    }
}

/* mve_prepare, and mve_prepare_no_tie for onnxruntime's rounding (for _mve_ring.c too). */
void mcu_dw_mve_prepare(mcu_dw_mve_scratch_t *g, const mcu_depthwise_conv_params_t *p,
                        const int8_t *filter, const int32_t *bias, int32_t c)
{
    mve_prepare(g, p, filter, bias, c);
    if (p->q.rounding == MCU_ROUND_NEAREST_NO_TIE) {
        mve_prepare_no_tie(g, p, c);
    }
}

/* The second group of a 16-lane ring: DW_MVE_RING_GROUP_BYTES after the first, g. */
static inline const mcu_dw_mve_scratch_t *ring_group2(const mcu_dw_mve_scratch_t *g)
{
    return (const mcu_dw_mve_scratch_t *)(const void *)((const char *)g + DW_MVE_RING_GROUP_BYTES);
}

/* The columns of a padded row inside the input: [left, left + inside) of `cols`. */
typedef struct {
    int32_t left;
    int32_t inside;
    int32_t right;
    int32_t cols;
    int32_t in_c;
    int8x16_t zp; /* (as int16 lanes for 8-byte columns: vstrb.16 stores their low bytes) */
} ring_cols_t;

/* One padded row into dst: src (the input row at channel c), or zero points when src is NULL;
 * 8 or, wide, 16 bytes a column. */
static inline __attribute__((always_inline)) void ring_row(int8_t *dst, const ring_cols_t *rc,
                                                           const int8_t *src, int wide)
{
    const int32_t step = wide ? 16 : 8;
    const int8x16_t zp = rc->zp;
    if (src == NULL) {
        for (int32_t i = rc->cols; i > 0; --i, dst += step) {
            wide ? vst1q_s8(dst, zp) : vstrbq_s16(dst, vreinterpretq_s16_s8(zp));
        }
        return;
    }
    for (int32_t i = rc->left; i > 0; --i, dst += step) {
        wide ? vst1q_s8(dst, zp) : vstrbq_s16(dst, vreinterpretq_s16_s8(zp));
    }
    const int32_t in_c = rc->in_c;
    for (int32_t i = rc->inside; i > 0; --i, dst += step, src += in_c) {
        wide ? vst1q_s8(dst, vld1q_s8(src)) : vstrbq_s16(dst, vldrbq_s16(src));
    }
    for (int32_t i = rc->right; i > 0; --i, dst += step) {
        wide ? vst1q_s8(dst, zp) : vstrbq_s16(dst, vreinterpretq_s16_s8(zp));
    }
}

#if defined(__GNUC__)

/* Tap kx of a window row at %[a] (column bytes x) with weights at %[w] + w (bytes). */
#define DW_RING_TAP(x, w) "vldrb.s16 q2, [%[a], #" x "]\n\t" DW_MAC(w)

/* One output position: the window's rows at r0 + xo, r1 + xo, r2 + xo (g's constants around
 * %[q], g->mult, as in mve_window3x3). */
static inline __attribute__((always_inline)) void ring_window(const mcu_dw_mve_scratch_t *g,
                                                              const int8_t *r0, const int8_t *r1,
                                                              const int8_t *r2, int32_t xo,
                                                              int8_t *out, int16x8_t lo,
                                                              int16x8_t hi)
{
    const int8_t *a;
    __asm__ volatile(
        "vldrw.u32 q0, [%[q], #-32]\n\t"
        "vldrw.u32 q1, [%[q], #-16]\n\t"
        "add %[a], %[r0], %[xo]\n\t"
        DW_RING_TAP("0", "0") DW_RING_TAP("8", "16") DW_RING_TAP("16", "32")
        "add %[a], %[r1], %[xo]\n\t"
        DW_RING_TAP("0", "48") DW_RING_TAP("8", "64") DW_RING_TAP("16", "80")
        "add %[a], %[r2], %[xo]\n\t"
        DW_RING_TAP("0", "96") DW_RING_TAP("8", "112") DW_RING_TAP("16", "128")
        DW_REQUANT_STORE
        : [a] "=&l"(a)
        : [w] "r"(g->w), [q] "r"(g->mult), [r0] "r"(r0), [r1] "r"(r1), [r2] "r"(r2), [xo] "r"(xo),
          [out] "l"(out), [lo] "w"(lo), [hi] "w"(hi)
        : "q0", "q1", "q2", "q3", "q4", "memory");
}

/* Tap t of a 16-channel window: column bytes x of the row at %[a], the two groups' weights w[t]
 * (at %[w] and %[w2] + w bytes); q0/q1 the even/odd sums of channels 0..7, q2/q3 of 8..15. */
#define DW_RING16_TAP(x, x8, w)                                                                   \
    "vldrb.s16 q4, [%[a], #" x "]\n\t"                                                            \
    "vldrh.u16 q5, [%[w], #" w "]\n\t"                                                            \
    "vmullb.s16 q6, q4, q5\n\t"                                                                   \
    "vadd.i32 q0, q0, q6\n\t"                                                                     \
    "vmullt.s16 q6, q4, q5\n\t"                                                                   \
    "vadd.i32 q1, q1, q6\n\t"                                                                     \
    "vldrb.s16 q4, [%[a], #" x8 "]\n\t"                                                           \
    "vldrh.u16 q5, [%[w2], #" w "]\n\t"                                                           \
    "vmullb.s16 q6, q4, q5\n\t"                                                                   \
    "vadd.i32 q2, q2, q6\n\t"                                                                     \
    "vmullt.s16 q6, q4, q5\n\t"                                                                   \
    "vadd.i32 q3, q3, q6\n\t"

/* mcu_requant4 of E (even) and O (odd channels) with the constants at %[a] (mult), temps q4, q5 */
#define DW_RING16_RQ(E, O)                                                                        \
    "vldrw.u32 q4, [%[a], #0]\n\t"                                                                \
    "vqrdmulh.s32 q5, " E ", q4\n\t"                                                              \
    "vldrw.u32 q4, [%[a], #32]\n\t"                                                               \
    "vadd.i32 q5, q5, q4\n\t"                                                                     \
    "vshr.s32 q4, " E ", #31\n\t"                                                                 \
    "vadd.i32 q5, q5, q4\n\t"                                                                     \
    "vldrw.u32 q4, [%[a], #64]\n\t"                                                               \
    "vshl.s32 " E ", q5, q4\n\t"                                                                  \
    "vldrw.u32 q4, [%[a], #16]\n\t"                                                               \
    "vqrdmulh.s32 q5, " O ", q4\n\t"                                                              \
    "vldrw.u32 q4, [%[a], #48]\n\t"                                                               \
    "vadd.i32 q5, q5, q4\n\t"                                                                     \
    "vshr.s32 q4, " O ", #31\n\t"                                                                 \
    "vadd.i32 q5, q5, q4\n\t"                                                                     \
    "vldrw.u32 q4, [%[a], #80]\n\t"                                                               \
    "vshl.s32 " O ", q5, q4\n\t"

/* One output position of sixteen channels (g: channels 0..7, the group DW_MVE_RING_GROUP_BYTES
 * on: 8..15; 16-byte ring columns): as ring_window, each group's constants addressed from its
 * weights (mcu_dw_mve_layout_ok: bias_full 128, mult 96 bytes before w); lohi: act_min in its
 * low, act_max in its high half. */
static inline __attribute__((always_inline)) void ring_window16(const mcu_dw_mve_scratch_t *g,
                                                                const int8_t *const rows[3],
                                                                int32_t xo, int8_t *out,
                                                                int32_t lohi)
{
    const mcu_dw_mve_scratch_t *const g2 = ring_group2(g);
    const int8_t *a;
    __asm__ volatile(
        "vldrw.u32 q0, [%[w], #-128]\n\t"
        "vldrw.u32 q1, [%[w], #-112]\n\t"
        "vldrw.u32 q2, [%[w2], #-128]\n\t"
        "vldrw.u32 q3, [%[w2], #-112]\n\t"
        "ldr %[a], [%[rows], #0]\n\t"
        "add %[a], %[xo]\n\t"
        DW_RING16_TAP("0", "8", "0") DW_RING16_TAP("16", "24", "16")
        DW_RING16_TAP("32", "40", "32")
        "ldr %[a], [%[rows], #4]\n\t"
        "add %[a], %[xo]\n\t"
        DW_RING16_TAP("0", "8", "48") DW_RING16_TAP("16", "24", "64")
        DW_RING16_TAP("32", "40", "80")
        "ldr %[a], [%[rows], #8]\n\t"
        "add %[a], %[xo]\n\t"
        DW_RING16_TAP("0", "8", "96") DW_RING16_TAP("16", "24", "112")
        DW_RING16_TAP("32", "40", "128")
        "sub %[a], %[w], #96\n\t"
        DW_RING16_RQ("q0", "q1")
        "sub %[a], %[w2], #96\n\t"
        DW_RING16_RQ("q2", "q3")
        "vqmovnb.s32 q4, q0\n\t"
        "vqmovnt.s32 q4, q1\n\t"
        "vqmovnb.s32 q5, q2\n\t"
        "vqmovnt.s32 q5, q3\n\t"
        "vdup.16 q6, %[lohi]\n\t"
        "vmax.s16 q4, q4, q6\n\t"
        "vmax.s16 q5, q5, q6\n\t"
        "asrs %[a], %[lohi], #16\n\t"
        "vdup.16 q6, %[a]\n\t"
        "vmin.s16 q4, q4, q6\n\t"
        "vmin.s16 q5, q5, q6\n\t"
        "vstrb.16 q4, [%[out]]\n\t"
        "vstrb.16 q5, [%[out], #8]\n\t"
        : [a] "=&l"(a)
        : [w] "r"(g->w), [w2] "r"(g2->w), [rows] "r"(rows), [xo] "r"(xo), [out] "l"(out),
          [lohi] "r"(lohi)
        : "q0", "q1", "q2", "q3", "q4", "q5", "q6", "memory", "cc");
}

#else

static inline void ring_tap(int32x4_t *e, int32x4_t *o, const int8_t *x, const int16_t *w)
{
    const int16x8_t xv = vldrbq_s16(x);
    const int16x8_t wv = vld1q_s16(w);
    *e = vaddq_s32(*e, vmullbq_int_s16(xv, wv));
    *o = vaddq_s32(*o, vmulltq_int_s16(xv, wv));
}

/* ring_window in intrinsics (compilers without GCC's inline assembly), columns `col` bytes
 * apart. */
static void ring_window_c(const mcu_dw_mve_scratch_t *g, const int8_t *r0, const int8_t *r1,
                          const int8_t *r2, int32_t xo, int8_t *out, int16x8_t lo, int16x8_t hi,
                          int32_t col)
{
    int32x4_t e = vld1q_s32(g->bias_full[0]);
    int32x4_t o = vld1q_s32(g->bias_full[1]);
    const int8_t *const rows[3] = {r0 + xo, r1 + xo, r2 + xo};
    for (int32_t t = 0; t < 9; ++t) {
        ring_tap(&e, &o, rows[t / 3] + col * (t % 3), g->w[t]);
    }
    e = mcu_requant4(e, vld1q_s32(g->mult[0]), vld1q_s32(g->base[0]), vld1q_s32(g->shift[0]));
    o = mcu_requant4(o, vld1q_s32(g->mult[1]), vld1q_s32(g->base[1]), vld1q_s32(g->shift[1]));
    int16x8_t v = vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), e), o);
    v = vminq_s16(vmaxq_s16(v, lo), hi);
    vstrbq_s16(out, v);
}

static void ring_window(const mcu_dw_mve_scratch_t *g, const int8_t *r0, const int8_t *r1,
                        const int8_t *r2, int32_t xo, int8_t *out, int16x8_t lo, int16x8_t hi)
{
    ring_window_c(g, r0, r1, r2, xo, out, lo, hi, 8);
}

/* ring_window16 as two ring_windows (16-byte columns: the second eight channels 8 bytes on; their
 * group DW_MVE_RING_GROUP_BYTES on). */
static void ring_window16(const mcu_dw_mve_scratch_t *g, const int8_t *const rows[3], int32_t xo,
                          int8_t *out, int32_t lohi)
{
    const int8_t *const r0 = rows[0];
    const int8_t *const r1 = rows[1];
    const int8_t *const r2 = rows[2];
    const int16x8_t lo = vdupq_n_s16((int16_t)lohi);
    const int16x8_t hi = vdupq_n_s16((int16_t)(lohi >> 16));
    ring_window_c(g, r0, r1, r2, xo, out, lo, hi, 16);
    const mcu_dw_mve_scratch_t *const g2 = ring_group2(g);
    ring_window_c(g2, r0 + 8, r1 + 8, r2 + 8, xo, out + 8, lo, hi, 16);
}

#endif

/* What every group's rows share. */
typedef struct {
    ring_cols_t rc;
    int32_t row_bytes; /* of one ring row */
    int32_t x_step;    /* from one window to the next in a ring row */
    int32_t in_row;    /* bytes of one input row */
    int16x8_t lo;      /* act_min, act_max */
    int16x8_t hi;
    int32_t lohi;      /* act_min in the low, act_max in the high half */
} ring_t;

/* The rows of one group: the ring filled as the windows move down, each output row's windows
 * from its three ring rows. */
static inline __attribute__((always_inline)) void ring_rows(const mcu_dw_mve_scratch_t *g,
                                                            int8_t *ring, const ring_t *r,
                                                            const mcu_depthwise_conv_params_t *p,
                                                            const int8_t *in, int8_t *out,
                                                            int wide)
{
    const int32_t out_c = p->output.c;
    const int32_t out_w = p->output.w;
    const int32_t in_h = p->input.h;
    const int32_t in_row = r->in_row;
    const int32_t row_bytes = r->row_bytes;
    const int32_t x_step = r->x_step;
    int8_t *const slot[3] = {ring, ring + row_bytes, ring + 2 * row_bytes};
    int32_t next = 0;      /* the first padded row not in the ring yet */
    int32_t next_slot = 0; /* its slot: next % 3 */
    int8_t *o = out;
    for (int32_t top = 0, n_y = p->output.h; n_y > 0; --n_y, top += p->stride_h) {
        if (next < top) { /* (strides over 3 skip rows) */
            next_slot = (next_slot + top - next) % 3;
            next = top;
        }
        for (; next < top + 3; ++next) {
            const int32_t in_y = next - p->pad_top;
            ring_row(slot[next_slot], &r->rc,
                     in_y >= 0 && in_y < in_h ? in + in_y * in_row : NULL, wide);
            next_slot = next_slot == 2 ? 0 : next_slot + 1;
        }
        /* rows top, top + 1, top + 2 are the three before `next`: slots next_slot, +1, +2 */
        const int8_t *const rows[3] = {slot[next_slot], slot[next_slot == 2 ? 0 : next_slot + 1],
                                       slot[next_slot == 0 ? 2 : next_slot - 1]};
        for (int32_t xo = 0, n = out_w; n > 0; --n, xo += x_step, o += out_c) {
            if (wide) {
                ring_window16(g, rows, xo, o, r->lohi);
            } else {
                ring_window(g, rows[0], rows[1], rows[2], xo, o, r->lo, r->hi);
            }
        }
    }
}

DW_NOINLINE static void ring_rows8(const mcu_dw_mve_scratch_t *g, int8_t *ring, const ring_t *r,
                                   const mcu_depthwise_conv_params_t *p, const int8_t *in,
                                   int8_t *out)
{
    ring_rows(g, ring, r, p, in, out, 0);
}

DW_NOINLINE static void ring_rows16(const mcu_dw_mve_scratch_t *g, int8_t *ring,
                                    const ring_t *r, const mcu_depthwise_conv_params_t *p,
                                    const int8_t *in, int8_t *out)
{
    ring_rows(g, ring, r, p, in, out, 1);
}

int32_t mcu_dw_mve_ring(mcu_dw_mve_scratch_t *scratch, const mcu_depthwise_conv_params_t *p,
                        const int8_t *input, const int8_t *filter, const int32_t *bias,
                        int8_t *output)
{
    int32_t lanes;
    ring_t r;
    r.rc.cols = dw_mve_ring_cols(p, &lanes);
    r.rc.left = p->pad_left < r.rc.cols ? p->pad_left : r.rc.cols;
    const int32_t end = p->pad_left + p->input.w;
    r.rc.inside = (end < r.rc.cols ? end : r.rc.cols) - r.rc.left;
    r.rc.inside = r.rc.inside > 0 ? r.rc.inside : 0;
    r.rc.right = r.rc.cols - r.rc.left - r.rc.inside;
    r.rc.in_c = p->input.c;
    r.rc.zp = vdupq_n_s8((int8_t)-p->q.input_offset);
    r.in_row = p->input.w * p->input.c;
    r.lo = vdupq_n_s16((int16_t)p->q.act_min);
    r.hi = vdupq_n_s16((int16_t)p->q.act_max);
    r.lohi = (int32_t)(((uint32_t)p->q.act_max << 16) | ((uint32_t)p->q.act_min & 0xFFFFu));
    /* the ring after the groups (mcu_dw_mve_group: DW_MVE_RING_GROUP_BYTES each) */
    int8_t *const ring = (int8_t *)mcu_dw_mve_group(scratch, 9, lanes == 16 ? 2 : 1);
    const int32_t out_c = p->output.c;
    const int32_t in_batch = p->input.h * r.in_row;
    const int32_t out_batch = p->output.h * p->output.w * out_c;
    int32_t c = 0;
    for (; c + 8 <= out_c; c += lanes) {
        lanes = lanes == 16 && c + 16 <= out_c ? 16 : 8;
        r.row_bytes = lanes * r.rc.cols;
        r.x_step = lanes * p->stride_w;
        for (int32_t k = 0; k < lanes; k += 8) {
            mcu_dw_mve_prepare(mcu_dw_mve_group(scratch, 9, k / 8), p, filter, bias, c + k);
        }
        for (int32_t b = 0; b < p->input.n; ++b) {
            if (lanes == 16) {
                ring_rows16(scratch, ring, &r, p, input + b * in_batch + c,
                            output + b * out_batch + c);
            } else {
                ring_rows8(scratch, ring, &r, p, input + b * in_batch + c,
                           output + b * out_batch + c);
            }
        }
    }
    return c;
}

#endif
