/*
 * mcu_conv2d_s4_mve.c - the MVE path of mcu_conv2d_s4 (Cortex-M55, __ARM_FEATURE_MVE): three
 * output positions a pass, each window read where it lies in the input when it is one run of it,
 * else gathered into its own K-byte patch; two channels at a time meet the three windows: per
 * block of 32 taps, 16 bytes of each channel's weights become two vectors of 16 weights (low
 * nibbles: VSHL #4 then VSHR #4; high nibbles: VSHR #4), the block's first and second halves, and
 * six pairs of VMLADAVA with the windows' two 16-byte halves. The tail block (t taps, h = ceil(t/2)
 * bytes) is the same with predicated loads (VCTP h and t - h).
 */
#include "mcu_conv2d_s4_internal.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>
#include <stdint.h>

#include "mcu_kernel_util.h"

/* a[c * 3 + q] = sums of channel c (weights w[c], channels), window q, n_ch channels (1 or 2),
 * n_pos windows (1..3) */
MCU_CONV_S4_INLINE void dots(const uint8_t *w0, const uint8_t *w1, const int8_t *const x[3],
                             int32_t k, int32_t a[6], int32_t n_ch, int32_t n_pos)
{
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0;
    int32_t off = 0;
    for (; k > 0; k -= MCU_S4_BLOCK, off += MCU_S4_BLOCK, w0 += 16, w1 += 16) {
        const int32_t t = k < MCU_S4_BLOCK ? k : MCU_S4_BLOCK;
        const int32_t h = (t + 1) / 2;
        const mve_pred16_t pl = vctp8q((uint32_t)h);
        const mve_pred16_t pu = vctp8q((uint32_t)(t - h));
        const int8x16_t v0 = vreinterpretq_s8_u8(vldrbq_z_u8(w0, pl));
        const int8x16_t l0 = vshrq_n_s8(vshlq_n_s8(v0, 4), 4);
        const int8x16_t u0 = vshrq_n_s8(v0, 4);
        const int8x16_t xl0 = vldrbq_z_s8(x[0] + off, pl);
        const int8x16_t xu0 = vldrbq_z_s8(x[0] + off + h, pu);
        s0 = vmladavaq_s8(vmladavaq_s8(s0, xl0, l0), xu0, u0);
        int8x16_t xl1 = xl0, xu1 = xu0, xl2 = xl0, xu2 = xu0;
        if (n_pos > 1) {
            xl1 = vldrbq_z_s8(x[1] + off, pl);
            xu1 = vldrbq_z_s8(x[1] + off + h, pu);
            s1 = vmladavaq_s8(vmladavaq_s8(s1, xl1, l0), xu1, u0);
        }
        if (n_pos > 2) {
            xl2 = vldrbq_z_s8(x[2] + off, pl);
            xu2 = vldrbq_z_s8(x[2] + off + h, pu);
            s2 = vmladavaq_s8(vmladavaq_s8(s2, xl2, l0), xu2, u0);
        }
        if (n_ch > 1) {
            const int8x16_t v1 = vreinterpretq_s8_u8(vldrbq_z_u8(w1, pl));
            const int8x16_t l1 = vshrq_n_s8(vshlq_n_s8(v1, 4), 4);
            const int8x16_t u1 = vshrq_n_s8(v1, 4);
            s3 = vmladavaq_s8(vmladavaq_s8(s3, xl0, l1), xu0, u1);
            if (n_pos > 1) {
                s4 = vmladavaq_s8(vmladavaq_s8(s4, xl1, l1), xu1, u1);
            }
            if (n_pos > 2) {
                s5 = vmladavaq_s8(vmladavaq_s8(s5, xl2, l1), xu2, u1);
            }
        }
    }
    a[0] = s0;
    a[1] = s1;
    a[2] = s2;
    a[3] = s3;
    a[4] = s4;
    a[5] = s5;
}

/* n_pos windows x (positions from pos), every channel */
MCU_CONV_S4_INLINE void pass(const mcu_conv_params_t *p, const uint8_t *filter, const int32_t *sums,
                             const int8_t *const x[3], int8_t *out, int32_t n_pos)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t row = (k + 1) / 2;
    const int32_t c_out = p->output.c;
    int32_t a[6];
    int32_t oc = 0;
    for (; oc + 2 <= c_out; oc += 2) {
        const uint8_t *w = filter + (size_t)oc * (size_t)row;
        dots(w, w + row, x, k, a, 2, n_pos);
        for (int32_t q = 0; q < n_pos; ++q) {
            for (int32_t c = 0; c < 2; ++c) {
                const int32_t acc = (int32_t)((uint32_t)a[c * 3 + q] + (uint32_t)sums[oc + c]);
                out[q * c_out + oc + c] =
                    mcu_output_stage(acc, p->multiplier[oc + c], p->shift[oc + c], &p->q);
            }
        }
    }
    if (oc < c_out) {
        const uint8_t *w = filter + (size_t)oc * (size_t)row;
        dots(w, w, x, k, a, 1, n_pos);
        for (int32_t q = 0; q < n_pos; ++q) {
            const int32_t acc = (int32_t)((uint32_t)a[q] + (uint32_t)sums[oc]);
            out[q * c_out + oc] = mcu_output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q);
        }
    }
}

void mcu_conv2d_s4_mve(const mcu_conv_params_t *p, const int8_t *input, const uint8_t *filter,
                       const int32_t *sums, int8_t *output, void *scratch)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    int8_t *const patch = mcu_conv2d_s4_gathers(p) ? (int8_t *)scratch : NULL;
    const int32_t positions = p->input.n * p->output.h * p->output.w;
    const int32_t c_out = p->output.c;
    for (int32_t pos = 0; pos < positions; pos += MCU_CONV_S4_MVE_POSITIONS) {
        const int32_t n = positions - pos < 3 ? positions - pos : 3;
        const int8_t *x[3];
        for (int32_t q = 0; q < 3; ++q) {
            x[q] = q < n ? mcu_conv2d_s4_window(p, input, pos + q, patch != NULL ? patch + q * k : NULL)
                         : x[0];
        }
        int8_t *const out = output + (size_t)pos * (size_t)c_out;
        if (n == 3) {
            pass(p, filter, sums, x, out, 3);
        } else if (n == 2) {
            pass(p, filter, sums, x, out, 2);
        } else {
            pass(p, filter, sums, x, out, 1);
        }
    }
}
#endif
