/*
 * mcu_depthwise_conv2d_s4_mve.c - the MVE path of mcu_depthwise_conv2d_s4 (Cortex-M55, depth
 * multiplier 1): per output position, eight channels a step (a group of the filter layout, or the
 * last C_out % 8 channels with predicated loads and stores), their sums in two int32x4 vectors (the
 * group's first h channels, then the rest): per tap inside the input, the eight inputs (VLDRB.S32,
 * plus the input offset), the group's four weight bytes (VLDRB.S32) as the low nibbles (VSHL #28,
 * VSHR #28) and the high ones (VSHL #24, VSHR #28), two VMUL and VADD. Requantized four channels
 * a vector
 * (mcu_requant4) when every channel allows it (scratch: per channel its base and its bias plus
 * lift, 8 * C_out bytes), else one at a time (mcu_output_stage).
 */
#include "mcu_depthwise_conv2d_s4_internal.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>
#include <stdint.h>

#include "mcu_kernel_util.h"
#include "mcu_requant.h"

/* The sums of channels c .. c + n - 1 stored at o (predicated), requantized */
MCU_ALWAYS_INLINE void store(const mcu_depthwise_conv_params_t *p, int32x4_t acc, int32_t c, int32_t n,
                             const int32_t *base, int fast, int8_t *o)
{
    const mve_pred16_t pr = vctp32q((uint32_t)n);
    if (fast) {
        const int32x4_t v = mcu_requant4(acc, vldrwq_z_s32(p->multiplier + c, pr), vldrwq_z_s32(base + c, pr),
                                         vldrwq_z_s32(p->shift + c, pr));
        vstrbq_p_s32(o + c, vminq_s32(vmaxq_s32(v, vdupq_n_s32(p->q.act_min)), vdupq_n_s32(p->q.act_max)), pr);
        return;
    }
    int32_t a[4];
    vst1q_s32(a, acc);
    for (int32_t i = 0; i < n; ++i) {
        o[c + i] = mcu_output_stage(a[i], p->multiplier[c + i], p->shift[c + i], &p->q);
    }
}

void mcu_depthwise_conv2d_s4_mve(const mcu_depthwise_conv_params_t *p, const int8_t *input,
                                 const uint8_t *filter, const int32_t *bias, int8_t *output,
                                 void *scratch)
{
    const int32_t c = p->output.c;
    const int32_t row = (c + 1) / 2;
    const int32_t dy = p->dilation_h * p->input.w * c;
    const int32_t dx = p->dilation_w * c;
    int32_t *const base = (int32_t *)scratch; /* per channel: base, then bias (+ lift) */
    int32_t *const init = base + c;
    const int fast = mcu_dw_s4_constants(p, bias, base, init);
    const int32x4_t off = vdupq_n_s32(p->q.input_offset);
    int8_t *out = output;
    for (int32_t bt = 0; bt < p->output.n; ++bt) {
        const int8_t *image = input + (size_t)bt * (size_t)(p->input.h * p->input.w * c);
        for (int32_t oy = 0; oy < p->output.h; ++oy) {
            for (int32_t ox = 0; ox < p->output.w; ++ox, out += c) {
                mcu_dw_s4_window_t win;
                mcu_dw_s4_window(p, image, oy, ox, &win);
                int32_t g = 0;
                for (; g + MCU_DW_S4_GROUP <= c; g += MCU_DW_S4_GROUP) { /* whole groups */
                    int32x4_t al = vldrwq_s32(init + g);
                    int32x4_t au = vldrwq_s32(init + g + 4);
                    const int8_t *xr = win.x + g;
                    const uint8_t *wr = filter + (win.ky0 * p->filter.w + win.kx0) * row + g / 2;
                    for (int32_t ky = win.ky0; ky < win.ky1; ++ky, xr += dy, wr += p->filter.w * row) {
                        const uint8_t *w = wr;
                        const int8_t *x = xr;
                        for (int32_t kx = win.kx0; kx < win.kx1; ++kx, x += dx, w += row) {
                            const int32x4_t v = vldrbq_s32((const int8_t *)w);
                            const int32x4_t wl = vshrq_n_s32(vshlq_n_s32(v, 28), 28);
                            const int32x4_t wu = vshrq_n_s32(vshlq_n_s32(v, 24), 28);
                            al = vaddq_s32(al, vmulq_s32(vaddq_s32(vldrbq_s32(x), off), wl));
                            au = vaddq_s32(au, vmulq_s32(vaddq_s32(vldrbq_s32(x + 4), off), wu));
                        }
                    }
                    store(p, al, g, 4, base, fast, out);
                    store(p, au, g + 4, 4, base, fast, out);
                }
                if (g < c) { /* the last C_out % 8 channels, predicated */
                    const int32_t r = c - g;
                    const int32_t h = (r + 1) / 2;
                    const mve_pred16_t pl = vctp32q((uint32_t)h);
                    const mve_pred16_t pu = vctp32q((uint32_t)(r - h));
                    int32x4_t al = vldrwq_z_s32(init + g, pl);
                    int32x4_t au = vldrwq_z_s32(init + g + h, pu);
                    const int8_t *xr = win.x + g;
                    for (int32_t ky = win.ky0; ky < win.ky1; ++ky, xr += dy) {
                        const uint8_t *w = filter + (ky * p->filter.w + win.kx0) * row + g / 2;
                        const int8_t *x = xr;
                        for (int32_t kx = win.kx0; kx < win.kx1; ++kx, x += dx, w += row) {
                            const int32x4_t v = vldrbq_z_s32((const int8_t *)w, pl);
                            const int32x4_t wl = vshrq_n_s32(vshlq_n_s32(v, 28), 28);
                            const int32x4_t wu = vshrq_n_s32(vshlq_n_s32(v, 24), 28);
                            al = vaddq_s32(al, vmulq_s32(vaddq_s32(vldrbq_z_s32(x, pl), off), wl));
                            au = vaddq_s32(au, vmulq_s32(vaddq_s32(vldrbq_z_s32(x + h, pu), off), wu));
                        }
                    }
                    store(p, al, g, h, base, fast, out);
                    store(p, au, g + h, r - h, base, fast, out);
                }
            }
        }
    }
}
#endif
