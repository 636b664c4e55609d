/*
 * mcu_depthwise_conv2d_s8_mve_ring.c - the MVE path of mcu_depthwise_conv2d_s8 for 3x3 filters
 * on narrow outputs (dw_mve_ring_bytes() > 0): one full group of eight channels at a time, the
 * input rows its windows read copied into a ring of three rows padded with the input zero point
 * (zp = -input_offset), so that every window, the border ones too, is whole: nine taps from
 * bias_full (zp * w = -input_offset * w cancels the tap's share of it), no per-position tests.
 * Ring row r holds padded input row r (input row r - pad_top, zp outside the input) in slot
 * r % 3, its columns from padded column 0 (input column -pad_left), 8 bytes each.
 * Same sums as mcu_dw_mve's other loops (bit-exact with the reference, see _mve.c).
 */
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE

#include <arm_mve.h>
#include <stdint.h>

#include "mcu_depthwise_conv2d_s8_internal.h"

/* Padded input row `row` (channels c .. c + 7 at in) into dst: `cols` columns of 8 bytes. */
static void ring_row(int8_t *dst, const mcu_depthwise_conv_params_t *p, const int8_t *in,
                     int32_t row, int32_t cols)
{
    const int16x8_t zp = vdupq_n_s16((int16_t)-p->q.input_offset);
    const int32_t in_y = row - p->pad_top;
    int32_t left = cols;
    int32_t inside = 0;
    if (in_y >= 0 && in_y < p->input.h) {
        left = p->pad_left < cols ? p->pad_left : cols;
        const int32_t end = p->pad_left + p->input.w < cols ? p->pad_left + p->input.w : cols;
        inside = end > left ? end - left : 0;
    }
    const int32_t right = cols - left - inside;
    for (int32_t i = left; i > 0; --i, dst += 8) {
        vstrbq_s16(dst, zp);
    }
    const int32_t in_c = p->input.c;
    const int8_t *src = inside > 0 ? in + in_y * p->input.w * in_c : in;
    for (int32_t i = inside; i > 0; --i, dst += 8, src += in_c) {
        vstrbq_s16(dst, vldrbq_s16(src));
    }
    for (int32_t i = right; i > 0; --i, dst += 8) {
        vstrbq_s16(dst, zp);
    }
}

#if defined(__GNUC__)

/* Tap kx of a window row at %[a] (column bytes x) with weights at %[g] + w (bytes). */
#define DW_RING_TAP(x, w)                                                                         \
    "vldrb.s16 q2, [%[a], #" x "]\n\t"                                                            \
    "vldrh.u16 q3, [%[g], #" w "]\n\t"                                                            \
    "vmullb.s16 q4, q2, q3\n\t"                                                                   \
    "vadd.i32 q0, q0, q4\n\t"                                                                     \
    "vmullt.s16 q4, q2, q3\n\t"                                                                   \
    "vadd.i32 q1, q1, q4\n\t"

/* One output position: the window's rows at r0 + xo, r1 + xo, r2 + xo. */
static inline __attribute__((always_inline)) void ring_window(const mcu_dw_mve_scratch_t *g,
                                                              const int8_t *r0, const int8_t *r1,
                                                              const int8_t *r2, int32_t xo,
                                                              int8_t *out, int16x8_t lo,
                                                              int16x8_t hi)
{
    const int8_t *a;
    __asm__ volatile(
        "vldrw.u32 q0, [%[g], #432]\n\t"
        "vldrw.u32 q1, [%[g], #448]\n\t"
        "add %[a], %[r0], %[xo]\n\t"
        DW_RING_TAP("0", "0") DW_RING_TAP("8", "16") DW_RING_TAP("16", "32")
        "add %[a], %[r1], %[xo]\n\t"
        DW_RING_TAP("0", "48") DW_RING_TAP("8", "64") DW_RING_TAP("16", "80")
        "add %[a], %[r2], %[xo]\n\t"
        DW_RING_TAP("0", "96") DW_RING_TAP("8", "112") DW_RING_TAP("16", "128")
        DW_REQUANT_STORE
        : [a] "=&l"(a)
        : [g] "r"(g), [q] "r"(g->mult), [r0] "r"(r0), [r1] "r"(r1), [r2] "r"(r2), [xo] "r"(xo),
          [out] "l"(out), [lo] "w"(lo), [hi] "w"(hi)
        : "q0", "q1", "q2", "q3", "q4", "memory");
}

#else

static inline void ring_tap(int32x4_t *e, int32x4_t *o, const int8_t *x, const int16_t *w)
{
    const int16x8_t xv = vldrbq_s16(x);
    const int16x8_t wv = vld1q_s16(w);
    *e = vaddq_s32(*e, vmullbq_int_s16(xv, wv));
    *o = vaddq_s32(*o, vmulltq_int_s16(xv, wv));
}

/* ring_window in intrinsics (compilers without GCC's inline assembly). */
static void ring_window(const mcu_dw_mve_scratch_t *g, const int8_t *r0, const int8_t *r1,
                        const int8_t *r2, int32_t xo, int8_t *out, int16x8_t lo, int16x8_t hi)
{
    int32x4_t e = vld1q_s32(g->bias_full[0]);
    int32x4_t o = vld1q_s32(g->bias_full[1]);
    const int8_t *const rows[3] = {r0 + xo, r1 + xo, r2 + xo};
    for (int32_t t = 0; t < 9; ++t) {
        ring_tap(&e, &o, rows[t / 3] + 8 * (t % 3), g->w[t]);
    }
    e = requant4(e, vld1q_s32(g->mult[0]), vld1q_s32(g->base[0]), vld1q_s32(g->shift[0]));
    o = requant4(o, vld1q_s32(g->mult[1]), vld1q_s32(g->base[1]), vld1q_s32(g->shift[1]));
    int16x8_t v = vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), e), o);
    v = vminq_s16(vmaxq_s16(v, lo), hi);
    vstrbq_s16(out, v);
}

#endif

void mcu_dw_mve_ring(const mcu_dw_mve_scratch_t *g, int8_t *ring,
                     const mcu_depthwise_conv_params_t *p, const int8_t *in, int8_t *out)
{
    const int32_t out_c = p->output.c;
    const int32_t out_w = p->output.w;
    const int32_t cols = (out_w - 1) * p->stride_w + 3;
    const int32_t ring_row_bytes = 8 * cols;
    const int32_t x_step = 8 * p->stride_w;
    const int16x8_t lo = vdupq_n_s16((int16_t)p->q.act_min);
    const int16x8_t hi = vdupq_n_s16((int16_t)p->q.act_max);
    int32_t next = 0; /* the first padded row not in the ring yet */
    for (int32_t out_y = 0; out_y < p->output.h; ++out_y) {
        const int32_t top = out_y * p->stride_h;
        next = next > top ? next : top;
        for (; next < top + 3; ++next) {
            ring_row(ring + (next % 3) * ring_row_bytes, p, in, next, cols);
        }
        const int8_t *const r0 = ring + (top % 3) * ring_row_bytes;
        const int8_t *const r1 = ring + ((top + 1) % 3) * ring_row_bytes;
        const int8_t *const r2 = ring + ((top + 2) % 3) * ring_row_bytes;
        int8_t *o = out + out_y * out_w * out_c;
        for (int32_t xo = 0, n = out_w; n > 0; --n, xo += x_step, o += out_c) {
            ring_window(g, r0, r1, r2, xo, o, lo, hi);
        }
    }
}

#endif
