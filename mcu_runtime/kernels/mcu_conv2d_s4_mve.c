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

/* s_c += window x's block (offset off; first half H taps, second half from off + H) against
 * channel c's unpacked weights (l: first half, u: second half), c = 0 and, when n_ch > 1, 1;
 * LOAD(ptr) loads 16 or fewer bytes (predicated in the tail block) */
#define MCU_S4_MVE_POS(x, sa, sb, LOADL, LOADU, H)                                              \
    do {                                                                                         \
        const int8x16_t xl = LOADL((x) + off);                                                   \
        const int8x16_t xu = LOADU((x) + off + (H));                                             \
        sa = vmladavaq_s8(vmladavaq_s8(sa, xl, l0), xu, u0);                                     \
        if (n_ch > 1) {                                                                          \
            sb = vmladavaq_s8(vmladavaq_s8(sb, xl, l1), xu, u1);                                 \
        }                                                                                        \
    } while (0)

/* One block of weights (both channels) at every window */
#define MCU_S4_MVE_BLOCK(LOADW, LOADL, LOADU, H)                                                \
    do {                                                                                         \
        const int8x16_t v0 = LOADW(w0);                                                          \
        const int8x16_t l0 = vshrq_n_s8(vshlq_n_s8(v0, 4), 4);                                   \
        const int8x16_t u0 = vshrq_n_s8(v0, 4);                                                  \
        int8x16_t l1 = l0, u1 = u0;                                                              \
        if (n_ch > 1) {                                                                          \
            const int8x16_t v1 = LOADW(w1);                                                      \
            l1 = vshrq_n_s8(vshlq_n_s8(v1, 4), 4);                                               \
            u1 = vshrq_n_s8(v1, 4);                                                              \
        }                                                                                        \
        MCU_S4_MVE_POS(x0, s0, s3, LOADL, LOADU, H);                                             \
        if (n_pos > 1) {                                                                         \
            MCU_S4_MVE_POS(x1, s1, s4, LOADL, LOADU, H);                                         \
        }                                                                                        \
        if (n_pos > 2) {                                                                         \
            MCU_S4_MVE_POS(x2, s2, s5, LOADL, LOADU, H);                                         \
        }                                                                                        \
    } while (0)

#define MCU_S4_LOADW(p) vreinterpretq_s8_u8(vld1q_u8(p))
#define MCU_S4_LOADX(p) vld1q_s8(p)
#define MCU_S4_LOADW_T(p) vreinterpretq_s8_u8(vldrbq_z_u8((p), pl))
#define MCU_S4_LOADL_T(p) vldrbq_z_s8((p), pl)
#define MCU_S4_LOADU_T(p) vldrbq_z_s8((p), pu)

/* a[c * 3 + q] = c_c + the dot product of channel c (weights w0, w1) with window q, for n_ch
 * channels (1 or 2) and n_pos windows (1..3): per block, the weights unpacked once (4 vectors),
 * each window's two halves loaded once; the whole blocks without predication, the tail block
 * (t taps: h and t - h) with predicated loads */
MCU_CONV_S4_INLINE void dots(const uint8_t *w0, const uint8_t *w1, const int8_t *const x[3],
                             int32_t k, int32_t a[6], int32_t n_ch, int32_t n_pos, int32_t c0,
                             int32_t c1)
{
    int32_t s0 = c0, s1 = c0, s2 = c0, s3 = c1, s4 = c1, s5 = c1;
    const int8_t *const x0 = x[0];
    const int8_t *const x1 = x[1];
    const int8_t *const x2 = x[2];
    int32_t off = 0;
    for (; off + MCU_S4_BLOCK <= k; off += MCU_S4_BLOCK, w0 += 16, w1 += 16) {
        MCU_S4_MVE_BLOCK(MCU_S4_LOADW, MCU_S4_LOADX, MCU_S4_LOADX, MCU_S4_BLOCK / 2);
    }
    if (off < k) {
        const int32_t t = k - off;
        const int32_t h = (t + 1) >> 1;
        const mve_pred16_t pl = vctp8q((uint32_t)h);
        const mve_pred16_t pu = vctp8q((uint32_t)(t - h));
        MCU_S4_MVE_BLOCK(MCU_S4_LOADW_T, MCU_S4_LOADL_T, MCU_S4_LOADU_T, h);
    }
    a[0] = s0;
    a[1] = s1;
    a[2] = s2;
    a[3] = s3;
    a[4] = s4;
    a[5] = s5;
}

/* One row of n int32 sums requantized (mcu_requant4), clamped and stored at o, four a vector. */
static void requant_row(const int32_t *sums, const int32_t *mult, const int32_t *base,
                        const int32_t *shift, int8_t *o, int32_t n, int32x4_t lo, int32x4_t hi)
{
    for (; n > 0; n -= 4, sums += 4, mult += 4, base += 4, shift += 4, o += 4) {
        const mve_pred16_t pr = vctp32q((uint32_t)n);
        const int32x4_t v = mcu_requant4(vldrwq_z_s32(sums, pr), vldrwq_z_s32(mult, pr),
                                         vldrwq_z_s32(base, pr), vldrwq_z_s32(shift, pr));
        vstrbq_p_s32(o, vminq_s32(vmaxq_s32(v, lo), hi), pr);
    }
}

/* n_pos windows x, the channels [oc0, oc1): their sums start at init[oc - oc0] and go to rows (row
 * words apart); fast: requantized from the rows, else one at a time. */
MCU_CONV_S4_INLINE void pass(const mcu_conv_params_t *p, const uint8_t *filter, const int32_t *sums,
                             const int8_t *const x[3], int8_t *out, int32_t n_pos, int32_t oc0,
                             int32_t oc1, const int32_t *init, const int32_t *base,
                             int32_t *rows, int fast)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t row = (k + 1) / 2;
    const int32_t c_out = p->output.c;
    const int32_t n = oc1 - oc0;
    int32_t a[6];
    int32_t j = 0;
    for (; j + 2 <= n; j += 2) {
        const uint8_t *w = filter + (size_t)(oc0 + j) * (size_t)row;
        dots(w, w + row, x, k, a, 2, n_pos, init[j], init[j + 1]);
        for (int32_t q = 0; q < n_pos; ++q) {
            rows[q * MCU_CONV_S4_MVE_OC_BLOCK + j] = a[q];
            rows[q * MCU_CONV_S4_MVE_OC_BLOCK + j + 1] = a[3 + q];
        }
    }
    if (j < n) {
        const uint8_t *w = filter + (size_t)(oc0 + j) * (size_t)row;
        dots(w, w, x, k, a, 1, n_pos, init[j], 0);
        for (int32_t q = 0; q < n_pos; ++q) {
            rows[q * MCU_CONV_S4_MVE_OC_BLOCK + j] = a[q];
        }
    }
    if (fast) {
        const int32x4_t lo = vdupq_n_s32(p->q.act_min);
        const int32x4_t hi = vdupq_n_s32(p->q.act_max);
        for (int32_t q = 0; q < n_pos; ++q) {
            requant_row(rows + q * MCU_CONV_S4_MVE_OC_BLOCK, p->multiplier + oc0, base,
                        p->shift + oc0, out + q * c_out + oc0, n, lo, hi);
        }
        return;
    }
    (void)sums;
    for (int32_t q = 0; q < n_pos; ++q) {
        for (j = 0; j < n; ++j) {
            const int32_t oc = oc0 + j;
            out[q * c_out + oc] = mcu_output_stage(rows[q * MCU_CONV_S4_MVE_OC_BLOCK + j],
                                                   p->multiplier[oc], p->shift[oc], &p->q);
        }
    }
}

void mcu_conv2d_s4_mve(const mcu_conv_params_t *p, const int8_t *input, const uint8_t *filter,
                       const int32_t *sums, int8_t *output, void *scratch)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t positions = p->input.n * p->output.h * p->output.w;
    const int32_t c_out = p->output.c;
    const int fast = mcu_conv2d_s4_requant2(p, sums);
    /* scratch: a block's starting sums and bases, three rows of sums, the patches */
    int32_t *const init = (int32_t *)scratch;
    int32_t *const base = init + MCU_CONV_S4_MVE_OC_BLOCK;
    int32_t *const rows = base + MCU_CONV_S4_MVE_OC_BLOCK;
    int8_t *const patch = mcu_conv2d_s4_gathers(p)
                              ? (int8_t *)(rows + MCU_CONV_S4_MVE_POSITIONS * MCU_CONV_S4_MVE_OC_BLOCK)
                              : NULL;
    for (int32_t oc0 = 0; oc0 < c_out; oc0 += MCU_CONV_S4_MVE_OC_BLOCK) {
        const int32_t oc1 = c_out - oc0 < MCU_CONV_S4_MVE_OC_BLOCK ? c_out : oc0 + MCU_CONV_S4_MVE_OC_BLOCK;
        for (int32_t oc = oc0; oc < oc1; ++oc) {
            int32_t lift = 0;
            if (fast && p->q.rounding == MCU_ROUND_NEAREST_NO_TIE) { /* acc + lift, base' */
                int32_t lift2;
                base[oc - oc0] = mcu_requant2_no_tie(p->multiplier[oc], p->shift[oc], p->q.output_offset,
                                                     &lift2);
                lift = (int32_t)((uint32_t)lift2 >> 1);
            } else if (fast) {
                base[oc - oc0] = mcu_requant2_base(p->shift[oc], p->q.output_offset);
            }
            init[oc - oc0] = (int32_t)((uint32_t)sums[oc] + (uint32_t)lift);
        }
        for (int32_t pos = 0; pos < positions; pos += MCU_CONV_S4_MVE_POSITIONS) {
            const int32_t n = positions - pos < 3 ? positions - pos : 3;
            const int8_t *x[3];
            for (int32_t q = 0; q < 3; ++q) {
                x[q] = q < n ? mcu_conv2d_s4_window(p, input, pos + q, patch != NULL ? patch + q * k : NULL)
                             : x[0];
            }
            int8_t *const out = output + (size_t)pos * (size_t)c_out;
            if (n == 3) {
                pass(p, filter, sums, x, out, 3, oc0, oc1, init, base, rows, fast);
            } else if (n == 2) {
                pass(p, filter, sums, x, out, 2, oc0, oc1, init, base, rows, fast);
            } else {
                pass(p, filter, sums, x, out, 1, oc0, oc1, init, base, rows, fast);
            }
        }
    }
}
#endif
