/*
 * mcu_depthwise_conv2d_s4_dsp.c - the DSP path of mcu_depthwise_conv2d_s4 (Cortex-M4/M7/M33,
 * depth multiplier 1): per output position, eight channels a step (a group of the filter layout;
 * the last C_out % 8 channels through the generic pair loop), eight int32 sums: per tap inside the
 * input, the group's weight word (low nibbles: channels 0..3, high: 4..7) masked to the high half of
 * each byte and split by SXTB16 / SXTB16 ROR 8 into int16 pairs 16 w, the eight inputs plus the
 * input offset by SXTAB16 into the matching pairs, and one SMLABB or SMLATT per channel. The sums
 * are 16 times the dot products (exact: |16 w (x + offset)| < 2^15 a term); requantized by
 * mcu_requant2 when every channel allows it (per-channel bases and starting sums in scratch, as on
 * MVE), else mcu_output_stage.
 */
#include "mcu_depthwise_conv2d_s4_internal.h"

#if MCU_ISA_NATIVE == MCU_ISA_DSP
#include <stdint.h>
#include <string.h>

#include "mcu_kernel_util.h"
#include "mcu_requant.h"

static inline uint32_t read_u32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* a[0..7] += one tap's products: weight word w, the 8 inputs at x, offset pair off2 */
#define MCU_DW_S4_TAP(w, x)                                                                     \
    do {                                                                                        \
        const uint32_t l_ = ((w) << 4) & 0xF0F0F0F0u;                                           \
        const uint32_t u_ = (w)&0xF0F0F0F0u;                                                    \
        const uint32_t x0_ = read_u32(x);                                                       \
        const uint32_t x1_ = read_u32((x) + 4);                                                 \
        const int32_t le = __sxtb16((int32_t)l_), lo = sxtb16_ror8(l_);                         \
        const int32_t ue = __sxtb16((int32_t)u_), uo = sxtb16_ror8(u_);                         \
        const int32_t xe0 = __sxtab16(off2, (int32_t)x0_), xo0 = sxtab16_ror8(off2, x0_);       \
        const int32_t xe1 = __sxtab16(off2, (int32_t)x1_), xo1 = sxtab16_ror8(off2, x1_);       \
        a0 = __smlabb(xe0, le, a0);                                                             \
        a2 = __smlatt(xe0, le, a2);                                                             \
        a1 = __smlabb(xo0, lo, a1);                                                             \
        a3 = __smlatt(xo0, lo, a3);                                                             \
        a4 = __smlabb(xe1, ue, a4);                                                             \
        a6 = __smlatt(xe1, ue, a6);                                                             \
        a5 = __smlabb(xo1, uo, a5);                                                             \
        a7 = __smlatt(xo1, uo, a7);                                                             \
    } while (0)

MCU_ALWAYS_INLINE int8_t out_one(const mcu_depthwise_conv_params_t *p, int32_t acc16, int32_t oc,
                             const int32_t *base, const int32_t *init, int fast)
{
    if (fast) {
        const int32_t acc2 = (int32_t)((uint32_t)(acc16 >> 3) + 2u * (uint32_t)init[oc]);
        const int32_t v = mcu_requant2(acc2, p->multiplier[oc], base[oc], -p->shift[oc]);
        return (int8_t)mcu_clamp_s32(v, p->q.act_min, p->q.act_max);
    }
    const int32_t acc = (int32_t)((uint32_t)(acc16 >> 4) + (uint32_t)init[oc]);
    return mcu_output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q);
}

void mcu_depthwise_conv2d_s4_dsp(const mcu_depthwise_conv_params_t *p, const int8_t *input,
                                 const uint8_t *filter, const int32_t *bias, int8_t *output,
                                 void *scratch)
{
    const int32_t c = p->output.c;
    const int32_t row = (c + 1) / 2;
    const int32_t dy = p->dilation_h * p->input.w * c;
    const int32_t dx = p->dilation_w * c;
    int32_t *const base = (int32_t *)scratch;
    int32_t *const init = base + c;
    const int fast = mcu_dw_s4_constants(p, bias, base, init);
    const int32_t off = p->q.input_offset;
    const int32_t off2 = (int32_t)(((uint32_t)off & 0xFFFFu) | ((uint32_t)off << 16));
    const int32_t whole = c - c % MCU_DW_S4_GROUP;
    int8_t *out = output;
    for (int32_t bt = 0; bt < p->output.n; ++bt) {
        const int8_t *image = input + (size_t)bt * (size_t)(p->input.h * p->input.w * c);
        for (int32_t oy = 0; oy < p->output.h; ++oy) {
            for (int32_t ox = 0; ox < p->output.w; ++ox, out += c) {
                mcu_dw_s4_window_t win;
                mcu_dw_s4_window(p, image, oy, ox, &win);
                for (int32_t g = 0; g < whole; g += MCU_DW_S4_GROUP) {
                    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
                    const int8_t *xr = win.x + g;
                    for (int32_t ky = win.ky0; ky < win.ky1; ++ky, xr += dy) {
                        const uint8_t *w = filter + (ky * p->filter.w + win.kx0) * row + g / 2;
                        const int8_t *x = xr;
                        for (int32_t kx = win.kx0; kx < win.kx1; ++kx, x += dx, w += row) {
                            const uint32_t wv = read_u32(w);
                            MCU_DW_S4_TAP(wv, x);
                        }
                    }
                    int8_t *const o = out + g;
                    o[0] = out_one(p, a0, g, base, init, fast);
                    o[1] = out_one(p, a1, g + 1, base, init, fast);
                    o[2] = out_one(p, a2, g + 2, base, init, fast);
                    o[3] = out_one(p, a3, g + 3, base, init, fast);
                    o[4] = out_one(p, a4, g + 4, base, init, fast);
                    o[5] = out_one(p, a5, g + 5, base, init, fast);
                    o[6] = out_one(p, a6, g + 6, base, init, fast);
                    o[7] = out_one(p, a7, g + 7, base, init, fast);
                }
                if (whole < c) {
                    mcu_dw_s4_tail(p, &win, filter, bias, out, whole);
                }
            }
        }
    }
}
#endif
