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

/* n (<= 4) taps from x as one group of two int16 pairs at d[0], d[1]: (x0, x2), (x1, x3), zeros
 * past n */
static inline void widen_group(const int8_t *x, int32_t n, int32_t *d)
{
    if (n >= 4) {
        const uint32_t v = read_s8x4(x);
        d[0] = __sxtb16((int32_t)v);
        d[1] = sxtb16_ror8(v);
        return;
    }
    uint32_t v = 0;
    for (int32_t i = 0; i < n; ++i) {
        v |= (uint32_t)(uint8_t)x[i] << (8 * i);
    }
    d[0] = __sxtb16((int32_t)v);
    d[1] = sxtb16_ror8(v);
}

/* n taps (a block half) as `groups` groups (>= ceil(n / 4)), zeros past n */
static inline int32_t *widen_half(const int8_t *x, int32_t n, int32_t groups, int32_t *d,
                                  int32_t stride)
{
    for (int32_t i = 0; i < 4 * groups; i += 4, d += 2 * stride) {
        widen_group(x + i, n - i >= 4 ? 4 : (n - i > 0 ? n - i : 0), d);
    }
    return d;
}

/* One window of k taps in the widened order (mcu_conv2d_s4_widened(k) / 2 words), group g (two
 * words) at d[2 g stride]: the windows of a pass interleaved group by group (stride = per_pass),
 * so that a group's two words are adjacent (LDRD). */
static void widen(const int8_t *x, int32_t k, int32_t *d, int32_t stride)
{
    for (; k > 0; k -= MCU_S4_BLOCK, x += MCU_S4_BLOCK) {
        const int32_t t = k < MCU_S4_BLOCK ? k : MCU_S4_BLOCK;
        const int32_t h = (t + 1) / 2;
        const int32_t groups = (h + 3) / 4;
        d = widen_half(x, h, groups, d, stride);
        d = widen_half(x + h, t - h, groups, d, stride);
    }
}

/* A word of 8 packed weights from 4 bytes at any address */
static inline uint32_t read_word(const uint8_t *w)
{
    uint32_t v;
    memcpy(&v, w, sizeof v);
    return v;
}

/* ... from n (< 4) bytes, zeros past n */
static inline uint32_t read_tail(const uint8_t *w, int32_t n)
{
    uint32_t v = 0;
    for (int32_t i = 0; i < n; ++i) {
        v |= (uint32_t)w[i] << (8 * i);
    }
    return v;
}

/* The four int16 pair words of one weight word: its low nibbles (l0, l1) and its high nibbles
 * (u0, u1), each 16 w. */
#define MCU_S4_UNPACK(word)                                                                     \
    const uint32_t l_ = ((word) << 4) & 0xF0F0F0F0u;                                            \
    const uint32_t u_ = (word)&0xF0F0F0F0u;                                                     \
    const int32_t l0 = __sxtb16((int32_t)l_);                                                   \
    const int32_t l1 = sxtb16_ror8(l_);                                                         \
    const int32_t u0 = __sxtb16((int32_t)u_);                                                   \
    const int32_t u1 = sxtb16_ror8(u_)

/* acc += the products of the unpacked word with the window words at lo (its low nibbles' taps)
 * and hi (its high nibbles' taps) */
#define MCU_S4_MAC(acc, lo, hi)                                                                 \
    do {                                                                                         \
        acc = __smlad((lo)[0], l0, acc);                                                         \
        acc = __smlad((lo)[1], l1, acc);                                                         \
        acc = __smlad((hi)[0], u0, acc);                                                         \
        acc = __smlad((hi)[1], u1, acc);                                                         \
    } while (0)

/* One weight word at the per_pass interleaved windows: lo, hi the first window's words. */
#define MCU_S4_WORD(word, lo, hi)                                                               \
    do {                                                                                         \
        MCU_S4_UNPACK(word);                                                                     \
        MCU_S4_MAC(a0, (lo), (hi));                                                              \
        if (per_pass > 1) {                                                                      \
            MCU_S4_MAC(a1, (lo) + 2, (hi) + 2);                                                  \
        }                                                                                        \
        if (per_pass > 2) {                                                                      \
            MCU_S4_MAC(a2, (lo) + 4, (hi) + 4);                                                  \
            MCU_S4_MAC(a3, (lo) + 6, (hi) + 6);                                                  \
        }                                                                                        \
    } while (0)

#if defined(__OPTIMIZE__) && defined(__GNUC__)
/* One weight word J of a whole block at four interleaved windows (P = 4): lo groups at byte offset
 * 32 J, hi groups at 32 (4 + J), window p 8 p bytes further; two LDRD and four SMLAD a window. */
#define MCU_S4_ASM_WORD(J, LO, HI)                                                              \
    "ldr %[w], [%[wp], #" #J "]\n\t"                                                           \
    "lsl %[l0], %[w], #4\n\t"                                                                  \
    "and %[l0], %[l0], #0xF0F0F0F0\n\t"                                                        \
    "and %[w], %[w], #0xF0F0F0F0\n\t"                                                          \
    "sxtb16 %[l1], %[l0], ror #8\n\t"                                                          \
    "sxtb16 %[l0], %[l0]\n\t"                                                                  \
    "sxtb16 %[u1], %[w], ror #8\n\t"                                                           \
    "sxtb16 %[u0], %[w]\n\t"                                                                   \
    MCU_S4_ASM_POS(a0, LO, HI, 0) MCU_S4_ASM_POS(a1, LO, HI, 8)                                 \
    MCU_S4_ASM_POS(a2, LO, HI, 16) MCU_S4_ASM_POS(a3, LO, HI, 24)
#define MCU_S4_ASM_POS(A, LO, HI, P)                                                            \
    "ldrd %[x0], %[x1], [%[xp], #(" #LO "+" #P ")]\n\t"                                        \
    "smlad %[" #A "], %[x0], %[l0], %[" #A "]\n\t"                                             \
    "smlad %[" #A "], %[x1], %[l1], %[" #A "]\n\t"                                             \
    "ldrd %[x0], %[x1], [%[xp], #(" #HI "+" #P ")]\n\t"                                        \
    "smlad %[" #A "], %[x0], %[u0], %[" #A "]\n\t"                                             \
    "smlad %[" #A "], %[x1], %[u1], %[" #A "]\n\t"

/* a0..a3 += one whole block (16 bytes at wb) at four interleaved windows (64 words at x) */
MCU_CONV_S4_INLINE void block4(const uint8_t *wb, const int32_t *x, int32_t *a0, int32_t *a1,
                               int32_t *a2, int32_t *a3)
{
    uint32_t w, l0, l1, u0, u1, x0, x1;
    __asm__(MCU_S4_ASM_WORD(0, 0, 128) MCU_S4_ASM_WORD(4, 32, 160) MCU_S4_ASM_WORD(8, 64, 192)
                MCU_S4_ASM_WORD(12, 96, 224)
            : [a0] "+r"(*a0), [a1] "+r"(*a1), [a2] "+r"(*a2), [a3] "+r"(*a3), [w] "=&r"(w),
              [l0] "=&r"(l0), [l1] "=&r"(l1), [u0] "=&r"(u0), [u1] "=&r"(u1), [x0] "=&r"(x0),
              [x1] "=&r"(x1)
            : [wp] "r"(wb), [xp] "r"(x)
            : "memory");
}
#define MCU_S4_HAVE_BLOCK4 1
#else
#define MCU_S4_HAVE_BLOCK4 0
#endif

/* One pass: per_pass (1, 2 or 4: a constant where inlined) windows widened and interleaved at xs;
 * every channel. fast: mcu_conv2d_s4_requant2(). */
MCU_CONV_S4_INLINE void pass(const mcu_conv_params_t *p, const uint8_t *filter, const int32_t *sums,
                             const int32_t *xs, int8_t *out, int32_t per_pass, int fast)
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
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        const uint8_t *wb = w;
        const int32_t *x = xs;
        for (int32_t blk = 0; blk < full; ++blk, wb += 16, x += 16 * per_pass) {
            if (MCU_S4_HAVE_BLOCK4 && per_pass == 4) {
#if MCU_S4_HAVE_BLOCK4
                block4(wb, x, &a0, &a1, &a2, &a3);
#endif
                continue;
            }
            for (int32_t j = 0; j < 4; ++j) {
                const uint32_t word = read_word(wb + 4 * j);
                MCU_S4_WORD(word, x + 2 * j * per_pass, x + 2 * (4 + j) * per_pass);
            }
        }
        for (int32_t i = 0; i < h; i += 4) {
            const uint32_t word = h - i >= 4 ? read_word(wb + i) : read_tail(wb + i, h - i);
            MCU_S4_WORD(word, x + 2 * (i / 4) * per_pass, x + 2 * (h4 / 4 + i / 4) * per_pass);
        }
        const int32_t a[4] = {a0, a1, a2, a3};
        if (fast) {
            mcu_conv_s4_rq_t r;
            mcu_conv_s4_rq(p, sums, oc, &r);
            out[oc] = mcu_conv_s4_out(&r, a0 >> 3, &p->q);
            if (per_pass > 1) {
                out[c_out + oc] = mcu_conv_s4_out(&r, a1 >> 3, &p->q);
            }
            if (per_pass > 2) {
                out[2 * c_out + oc] = mcu_conv_s4_out(&r, a2 >> 3, &p->q);
                out[3 * c_out + oc] = mcu_conv_s4_out(&r, a3 >> 3, &p->q);
            }
            continue;
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
    const int fast = mcu_conv2d_s4_requant2(p, sums);
    int32_t pos = 0;
    for (; pos + per_pass <= positions; pos += per_pass) {
        for (int32_t q = 0; q < per_pass; ++q) {
            widen(mcu_conv2d_s4_window(p, input, pos + q, patch), k, xs + 2 * q, per_pass);
        }
        int8_t *const out = output + (size_t)pos * (size_t)c_out;
        if (per_pass == 4) {
            pass(p, filter, sums, xs, out, 4, fast);
        } else if (per_pass == 2) {
            pass(p, filter, sums, xs, out, 2, fast);
        } else {
            pass(p, filter, sums, xs, out, 1, fast);
        }
    }
    for (; pos < positions; ++pos) { /* the last positions % per_pass, one at a time */
        widen(mcu_conv2d_s4_window(p, input, pos, patch), k, xs, 1);
        pass(p, filter, sums, xs, output + (size_t)pos * (size_t)c_out, 1, fast);
    }
}
#endif
