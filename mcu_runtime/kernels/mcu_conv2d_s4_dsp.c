/*
 * mcu_conv2d_s4_dsp.c - the DSP path of mcu_conv2d_s4 (Cortex-M4/M7/M33, __ARM_FEATURE_DSP): up
 * to four output positions a pass, their windows widened to int16 once (mcu_conv2d_s4_widened's
 * order: each group of 4 taps as the pairs (x0, x2), (x1, x3), as SXTB16 makes them), then every
 * channel's weights read once a pass: a word of 8 weights (4 low nibbles: taps j..j+3 of a block's
 * first half, 4 high nibbles: the same taps of its second half) becomes, masked to the high half
 * of each byte, four words of int16 pairs 16 w (SXTB16, SXTB16 ROR 8) that pair with the window
 * words (SMLAD). The sums are 16 times the dot products: |16 x w| <= 2^14, K <= 65535 taps keep
 * them inside int32 and the shift right by 4 exact.
 */
#include "mcu_conv2d_s4_internal.h"

#if MCU_ISA_NATIVE == MCU_ISA_DSP
#include <stdint.h>
#include <string.h>

#include "mcu_kernel_util.h"

/* n (<= 4) taps from x as one group of two int16 pairs at d: (x0, x2), (x1, x3), zeros past n */
static inline void widen_group(const int8_t *x, int32_t n, int32_t *d)
{
    if (n >= 4) {
        const uint32_t v = read_s8x4(x);
        d[0] = __sxtb16((int32_t)v);
        d[1] = sxtb16_ror8(v);
        return;
    }
    int8_t t[4] = {0, 0, 0, 0};
    memcpy(t, x, (size_t)n);
    const uint32_t v = read_s8x4(t);
    d[0] = __sxtb16((int32_t)v);
    d[1] = sxtb16_ror8(v);
}

/* n taps (a block half) as `groups` groups (>= ceil(n / 4)), zeros past n */
static inline int32_t *widen_half(const int8_t *x, int32_t n, int32_t groups, int32_t *d)
{
    for (int32_t i = 0; i < 4 * groups; i += 4, d += 2) {
        widen_group(x + i, n - i >= 4 ? 4 : (n - i > 0 ? n - i : 0), d);
    }
    return d;
}

/* One window of k taps in the widened order (mcu_conv2d_s4_widened(k) int16 values at d) */
static void widen(const int8_t *x, int32_t k, int32_t *d)
{
    for (; k > 0; k -= MCU_S4_BLOCK, x += MCU_S4_BLOCK) {
        const int32_t t = k < MCU_S4_BLOCK ? k : MCU_S4_BLOCK;
        const int32_t h = (t + 1) / 2;
        const int32_t groups = (h + 3) / 4;
        d = widen_half(x, h, groups, d);
        d = widen_half(x + h, t - h, groups, d);
    }
}

/* A word of 8 packed weights from n (<= 4) bytes, zeros past n. */
static inline uint32_t read_tail(const uint8_t *w, int32_t n)
{
    uint8_t t[4] = {0, 0, 0, 0};
    memcpy(t, w, (size_t)n);
    uint32_t v;
    memcpy(&v, t, sizeof v);
    return v;
}

/* a[p] += the products of one weight word (its low nibbles with the window words at lo, its high
 * nibbles with those at hi; window p is `step` words further) */
MCU_CONV_S4_INLINE void mac_word(int32_t *a, uint32_t word, const int32_t *lo, const int32_t *hi,
                                 int32_t step, int32_t per_pass)
{
    const uint32_t l = (word << 4) & 0xF0F0F0F0u;
    const uint32_t u = word & 0xF0F0F0F0u;
    const int32_t l0 = __sxtb16((int32_t)l);
    const int32_t l1 = sxtb16_ror8(l);
    const int32_t u0 = __sxtb16((int32_t)u);
    const int32_t u1 = sxtb16_ror8(u);
    for (int32_t p = 0; p < per_pass; ++p) {
        const int32_t *xl = lo + p * step;
        const int32_t *xu = hi + p * step;
        a[p] = __smlad(xl[0], l0, a[p]);
        a[p] = __smlad(xl[1], l1, a[p]);
        a[p] = __smlad(xu[0], u0, a[p]);
        a[p] = __smlad(xu[1], u1, a[p]);
    }
}

/* One pass: per_pass windows widened at xs (`step` words apart), every channel. */
MCU_CONV_S4_INLINE void pass(const mcu_conv_params_t *p, const uint8_t *filter, const int32_t *sums,
                             const int32_t *xs, int32_t step, int8_t *out, int32_t per_pass)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t row = (k + 1) / 2;
    const int32_t c_out = p->output.c;
    const int32_t full = k / MCU_S4_BLOCK;
    const int32_t t = k % MCU_S4_BLOCK;
    const int32_t h = (t + 1) / 2;
    const int32_t h4 = (h + 3) & ~3; /* taps of the tail block's half, padded */
    const uint8_t *w = filter;
    for (int32_t oc = 0; oc < c_out; ++oc, w += row) {
        int32_t a[4] = {0, 0, 0, 0};
        const uint8_t *wb = w;
        const int32_t *x = xs;
        for (int32_t blk = 0; blk < full; ++blk, wb += 16, x += 16) {
            uint32_t words[4];
            memcpy(words, wb, sizeof words);
            mac_word(a, words[0], x, x + 8, step, per_pass);
            mac_word(a, words[1], x + 2, x + 10, step, per_pass);
            mac_word(a, words[2], x + 4, x + 12, step, per_pass);
            mac_word(a, words[3], x + 6, x + 14, step, per_pass);
        }
        for (int32_t i = 0; i < h; i += 4) {
            const uint32_t word = h - i >= 4 ? read_tail(wb + i, 4) : read_tail(wb + i, h - i);
            mac_word(a, word, x + i / 2, x + h4 / 2 + i / 2, step, per_pass);
        }
        for (int32_t q = 0; q < per_pass; ++q) {
            const int32_t acc = (int32_t)((uint32_t)(a[q] >> 4) + (uint32_t)sums[oc]);
            out[q * c_out + oc] = mcu_output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q);
        }
    }
}

void mcu_conv2d_s4_dsp(const mcu_conv_params_t *p, const int8_t *input, const uint8_t *filter,
                       const int32_t *sums, int8_t *output, int32_t per_pass, void *scratch)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t step = mcu_conv2d_s4_widened(k) / 2; /* words per widened window */
    int32_t *const xs = (int32_t *)scratch;
    int8_t *const patch =
        mcu_conv2d_s4_gathers(p) ? (int8_t *)(xs + (size_t)per_pass * (size_t)step) : NULL;
    const int32_t positions = p->input.n * p->output.h * p->output.w;
    const int32_t c_out = p->output.c;
    int32_t pos = 0;
    for (; pos + per_pass <= positions; pos += per_pass) {
        for (int32_t q = 0; q < per_pass; ++q) {
            widen(mcu_conv2d_s4_window(p, input, pos + q, patch), k, xs + q * step);
        }
        int8_t *const out = output + (size_t)pos * (size_t)c_out;
        if (per_pass == 4) {
            pass(p, filter, sums, xs, step, out, 4);
        } else if (per_pass == 2) {
            pass(p, filter, sums, xs, step, out, 2);
        } else {
            pass(p, filter, sums, xs, step, out, 1);
        }
    }
    for (; pos < positions; ++pos) { /* the last positions % per_pass, one at a time */
        widen(mcu_conv2d_s4_window(p, input, pos, patch), k, xs);
        pass(p, filter, sums, xs, step, output + (size_t)pos * (size_t)c_out, 1);
    }
}
#endif
