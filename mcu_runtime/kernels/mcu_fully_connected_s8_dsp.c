/*
 * mcu_fully_connected_s8_dsp.c - the DSP path of mcu_fully_connected_s8 (__ARM_FEATURE_DSP; see
 * mcu_fully_connected_s8.c for the dispatch).
 *
 * A block of four rows at a time, its accumulators starting at the kernel sums: each input word
 * (four int8) is unpacked once (SXTB16, SXTB16 ROR 8: lanes (x0, x2), (x1, x3)) for the four
 * rows, whose words follow one another in the layout (row r of a 16-input chunk at + 16 r);
 * every weight word is unpacked the same way and two SMLAD add its four products, exactly as
 * four scalar MACs. 23 instructions per 16 MACs.
 * Output stage: mcu_requant2 (mcu_requant.h) on 2 * acc, exact for |acc| < 2^30, i.e. whenever
 * 2 * acc does not overflow (else mcu_output_stage_tflite for that output); the dispatcher checked
 * TFLite rounding, shift in [-20, -1] and multiplier >= 0 on every output.
 */
#include <stdint.h>
#include <string.h>

#include "mcu_fully_connected_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_DSP
#include <arm_acle.h>

/* a += the four products of input word xv with weight word at w: SMLAD on lanes 0/2, 1/3 */
#define MCU_FC_MAC4(a, x02, x13, w)                                                         \
    do {                                                                                    \
        const uint32_t wv_ = read_s8x4(w);                                                  \
        (a) = __smlad((x02), __sxtb16((int32_t)wv_), (a));                                  \
        (a) = __smlad((x13), sxtb16_ror8(wv_), (a));                                        \
    } while (0)

#if defined(__OPTIMIZE__) && defined(__GNUC__)

/* One row's word: a += lanes (x0, x2) . (w0, w2) + (x1, x3) . (w1, w3), the weight word at w + off */
#define MCU_FC_ROW(acc, off)                                                                    \
    "ldr     %[t], [%[w], #" #off "]\n\t"                                                       \
    "sxtb16  %[u], %[t]\n\t"                                                                    \
    "smlad   %[" #acc "], %[xe], %[u], %[" #acc "]\n\t"                                         \
    "sxtb16  %[u], %[t], ror #8\n\t"                                                            \
    "smlad   %[" #acc "], %[xo], %[u], %[" #acc "]\n\t"
/* Four inputs (one word, unpacked once) for the four rows: 23 instructions, 16 MACs */
#define MCU_FC_STEP(j0, j1, j2, j3)                                                             \
    "ldr     %[xo], [%[x]], #4\n\t"                                                             \
    "sxtb16  %[xe], %[xo]\n\t"                                                                  \
    "sxtb16  %[xo], %[xo], ror #8\n\t"                                                          \
    MCU_FC_ROW(a0, j0) MCU_FC_ROW(a1, j1) MCU_FC_ROW(a2, j2) MCU_FC_ROW(a3, j3)

/* a[r] += the products of `chunks` (>= 1) whole 16-input chunks; advances *xp and *wp */
static inline void dot_chunks(int32_t a[4], const int8_t **xp, const int8_t **wp, int32_t chunks)
{
    const int8_t *x = *xp;
    const int8_t *w = *wp;
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    int32_t xe, xo, t, u;
    __asm__("1:\n\t"
            MCU_FC_STEP(0, 16, 32, 48)
            MCU_FC_STEP(4, 20, 36, 52)
            MCU_FC_STEP(8, 24, 40, 56)
            MCU_FC_STEP(12, 28, 44, 60)
            "adds    %[w], %[w], #64\n\t"
            "subs    %[n], %[n], #1\n\t"
            "bne     1b\n\t"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x),
              [w] "+r"(w), [n] "+r"(chunks), [xe] "=&r"(xe), [xo] "=&r"(xo), [t] "=&r"(t),
              [u] "=&r"(u)
            :
            : "cc", "memory");
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
    *xp = x;
    *wp = w;
}

#else /* unoptimized builds: the same in C */

static inline void dot_chunks(int32_t a[4], const int8_t **xp, const int8_t **wp, int32_t chunks)
{
    const int8_t *x = *xp;
    const int8_t *w = *wp;
    for (; chunks > 0; --chunks) {
        for (int32_t j = 0; j < MCU_FC_CHUNK; j += 4) {
            const uint32_t xv = read_s8x4(x + j);
            const int32_t x02 = __sxtb16((int32_t)xv);
            const int32_t x13 = sxtb16_ror8(xv);
            for (int32_t r = 0; r < 4; ++r) {
                MCU_FC_MAC4(a[r], x02, x13, w + r * MCU_FC_CHUNK + j);
            }
        }
        x += MCU_FC_CHUNK;
        w += 4 * MCU_FC_CHUNK;
    }
    *xp = x;
    *wp = w;
}

#endif

/* a[r] += sum_k x[k] * w[r, k], r < 4, over one block of the layout */
static inline void block4(const int8_t *x, const int8_t *w, int32_t k, int32_t a[4])
{
    if (k >= MCU_FC_CHUNK) {
        dot_chunks(a, &x, &w, k >> 4);
    }
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    const int32_t tail = k & (MCU_FC_CHUNK - 1); /* rows at w + r * tail */
    int32_t i = 0;
    for (; i + 4 <= tail; i += 4) {
        const uint32_t xv = read_s8x4(x + i);
        const int32_t x02 = __sxtb16((int32_t)xv);
        const int32_t x13 = sxtb16_ror8(xv);
        MCU_FC_MAC4(a0, x02, x13, w + i);
        MCU_FC_MAC4(a1, x02, x13, w + tail + i);
        MCU_FC_MAC4(a2, x02, x13, w + 2 * tail + i);
        MCU_FC_MAC4(a3, x02, x13, w + 3 * tail + i);
    }
    for (; i < tail; ++i) {
        const int32_t xv = (int32_t)x[i];
        a0 += xv * (int32_t)w[i];
        a1 += xv * (int32_t)w[tail + i];
        a2 += xv * (int32_t)w[2 * tail + i];
        a3 += xv * (int32_t)w[3 * tail + i];
    }
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

/* mcu_output_stage_tflite, out of line (rare: it keeps the block loop's registers free) */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static int32_t out1_wide(int32_t acc, int32_t m, int32_t shift, const mcu_quant_io_t *q)
{
    return mcu_output_stage_tflite(acc, m, shift, q);
}

/* One output before its clamp: mcu_requant2 of 2 * acc (multiplier m, base, right = -shift),
 * saturated to int8; mcu_output_stage_tflite (with its clamp) when 2 * acc overflows. */
static inline int32_t out1(int32_t acc, int32_t m, int32_t base, int32_t right,
                           const mcu_quant_io_t *q)
{
    int32_t acc2;
    if (__builtin_add_overflow(acc, acc, &acc2)) {
        return out1_wide(acc, m, -right, q);
    }
    return mcu_ssat8(mcu_smmlar(acc2, m, base + (acc2 >> 31)) >> right);
}

#if defined(__OPTIMIZE__) && defined(__GNUC__)

/* Four int8 lanes clamped to [lo, hi] (each lane of lo4/hi4): SSUB8 sets the GE flags, SEL picks
 * (in one asm: nothing may come between them). */
static inline uint32_t clamp4(uint32_t v, uint32_t lo4, uint32_t hi4)
{
    uint32_t t;
    __asm__("ssub8   %[t], %[v], %[lo]\n\t"
            "sel     %[v], %[v], %[lo]\n\t"
            "ssub8   %[t], %[v], %[hi]\n\t"
            "sel     %[v], %[hi], %[v]\n\t"
            : [v] "+r"(v), [t] "=&r"(t)
            : [lo] "r"(lo4), [hi] "r"(hi4)
            : "cc");
    return v;
}

#else /* unoptimized builds: the same in C */

static inline uint32_t clamp4(uint32_t v, uint32_t lo4, uint32_t hi4)
{
    uint32_t out = 0u;
    for (int32_t i = 0; i < 32; i += 8) {
        const int32_t x = mcu_clamp_s32((int8_t)(v >> i), (int8_t)(lo4 >> i), (int8_t)(hi4 >> i));
        out |= (uint32_t)(uint8_t)x << i;
    }
    return out;
}

#endif

/* four int8 (in int32) in the bytes of a word, lane r = v[r] */
static inline uint32_t pack4(int32_t v0, int32_t v1, int32_t v2, int32_t v3)
{
    return ((uint32_t)v0 & 0xFFu) | (((uint32_t)v1 & 0xFFu) << 8) |
           (((uint32_t)v2 & 0xFFu) << 16) | ((uint32_t)v3 << 24);
}

void mcu_fully_connected_s8_dsp(const mcu_fc_params_t *p, const int8_t *input,
                                const int8_t *weights, const int32_t *sums, int8_t *output)
{
    const mcu_quant_io_t q = p->q; /* a local copy: int8_t stores may alias anything */
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t blocked = n_out - n_out % MCU_FC_BLOCK_ROWS;
    const uint32_t lo4 = 0x01010101u * (uint8_t)q.act_min;
    const uint32_t hi4 = 0x01010101u * (uint8_t)q.act_max;
    /* per-tensor constants (per-channel: per row) */
    const int32_t m = p->multiplier[0];
    const int32_t right = -p->shift[0];
    const int32_t base = mcu_requant2_base(p->shift[0], q.output_offset);
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *const in_row = input + b * k;
        int8_t *const out_row = output + b * n_out;
        const int8_t *w = weights;
        for (int32_t n = 0; n < blocked; n += MCU_FC_BLOCK_ROWS) {
            int32_t a[4] = {0, 0, 0, 0};
            if (sums != NULL) {
                a[0] = sums[n];
                a[1] = sums[n + 1];
                a[2] = sums[n + 2];
                a[3] = sums[n + 3];
            }
            block4(in_row, w, k, a);
            w += MCU_FC_BLOCK_ROWS * k;
            uint32_t v;
            if (p->per_channel) {
                int32_t o[4];
                for (int32_t r = 0; r < 4; ++r) {
                    const int32_t s = p->shift[n + r];
                    o[r] = out1(a[r], p->multiplier[n + r], mcu_requant2_base(s, q.output_offset), -s,
                                &q);
                }
                v = pack4(o[0], o[1], o[2], o[3]);
            } else {
                v = pack4(out1(a[0], m, base, right, &q), out1(a[1], m, base, right, &q),
                          out1(a[2], m, base, right, &q), out1(a[3], m, base, right, &q));
            }
            v = clamp4(v, lo4, hi4);
            memcpy(out_row + n, &v, sizeof v); /* one STR (unaligned stores are allowed) */
        }
        if (blocked < n_out) {
            mcu_fully_connected_s8_rows(p, in_row, weights, sums, blocked, out_row);
        }
    }
}

#endif
