/*
 * mcu_fully_connected_s4_dsp.c - the DSP path of mcu_fully_connected_s4 (__ARM_FEATURE_DSP; see
 * mcu_fully_connected_s4.c for the dispatch).
 *
 * A block of four rows at a time. Per four bytes j..j+3 of a 32-input chunk, the input words
 * x[j..j+3] and x[16+j..16+j+3] are unpacked once (SXTB16, SXTB16 ROR 8: int16 lanes (x0, x2),
 * (x1, x3)) for the four rows; each row's weight word (eight unsigned nibbles) gives its four
 * pairs of int16 lanes by one AND each with 0x000F000F of the word shifted by 0, 8, 4 and 12
 * (low nibbles of bytes 0/2, 1/3, high nibbles of bytes 0/2, 1/3), and four SMLAD add its eight
 * products. The optimized chunk loop (inline assembly) takes the low and the high nibbles in two
 * passes, so that it fits the registers: 23 instructions per 16 MACs, as the int8 kernel's. The chunk tails run the
 * same words where both halves are whole, the rest in C; the last N % 4 rows the same words row by
 * row. The input sum (for -8 * sum) is USADA8 of the inputs biased to unsigned. Requantized by
 * mcu_output_stage_tflite / _rne.
 */
#include <stdint.h>

#include "mcu_fully_connected_s4_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"
#include "mcu_nn_s4.h"

#if MCU_ISA_NATIVE == MCU_ISA_DSP
#include <arm_acle.h>

#define NIBBLES 0x000F000Fu

/* four unsigned bytes from any address (one LDR, as read_s8x4) */
static inline uint32_t read_u8x4(const uint8_t *p)
{
    return read_s8x4((const int8_t *)(const void *)p);
}

/* a += the eight products of weight word wv with the unpacked input words (lo: inputs j..j+3,
 * hi: inputs h+j..h+j+3) */
#define MAC8(a, wv, l02, l13, h02, h13)                                                      \
    do {                                                                                     \
        (a) = __smlad((l02), (int32_t)((wv) & NIBBLES), (a));                                \
        (a) = __smlad((l13), (int32_t)(((wv) >> 8) & NIBBLES), (a));                         \
        (a) = __smlad((h02), (int32_t)(((wv) >> 4) & NIBBLES), (a));                         \
        (a) = __smlad((h13), (int32_t)(((wv) >> 12) & NIBBLES), (a));                        \
    } while (0)

/* sum_k x[k]: USADA8 of x + 128 (bytes XOR 0x80) against 0, minus 128 k */
static int32_t input_sum(const int8_t *x, int32_t k)
{
    uint32_t s = 0;
    int32_t i = 0;
    for (; i + 4 <= k; i += 4) {
        s = __usada8(read_s8x4(x + i) ^ 0x80808080u, 0u, s);
    }
    int32_t total = (int32_t)s - 128 * i;
    for (; i < k; ++i) {
        total += x[i];
    }
    return total;
}

/* a[r] += sum over one part of t inputs (h = (t + 1) / 2 bytes per row, rows `stride` bytes
 * apart) of x * u: words where both halves are whole, then bytes. */
static inline void part4(const int8_t *x, const uint8_t *w, int32_t t, int32_t stride, int32_t a[4])
{
    const int32_t h = (t + 1) >> 1;
    int32_t j = 0;
    for (; j + 4 <= t - h; j += 4) {
        const uint32_t xl = read_s8x4(x + j);
        const uint32_t xh = read_s8x4(x + h + j);
        const int32_t l02 = __sxtb16((int32_t)xl), l13 = sxtb16_ror8(xl);
        const int32_t h02 = __sxtb16((int32_t)xh), h13 = sxtb16_ror8(xh);
        for (int32_t r = 0; r < 4; ++r) {
            const uint32_t wv = read_u8x4(w + r * stride + j);
            MAC8(a[r], wv, l02, l13, h02, h13);
        }
    }
    for (; j < h; ++j) {
        const int32_t xl = x[j];
        const int32_t xh = j < t - h ? x[h + j] : 0;
        for (int32_t r = 0; r < 4; ++r) {
            const int32_t b = w[r * stride + j];
            a[r] += xl * (b & 15) + xh * (b >> 4);
        }
    }
}

#if defined(__OPTIMIZE__) && defined(__GNUC__)

/* One row's word for one half: a += lanes (x0, x2) . (u0, u2) + (x1, x3) . (u1, u3), the nibbles
 * of the weight word at w + off shifted right by s0 and s1 (0/8: low nibbles, 4/12: high ones) */
#define S4_ROW(acc, off, s0, s1)                                                                \
    "ldr     %[t], [%[w], #" #off "]\n\t"                                                       \
    "and     %[u], %[m], %[t], lsr #" #s0 "\n\t"                                                \
    "smlad   %[" #acc "], %[xe], %[u], %[" #acc "]\n\t"                                         \
    "and     %[u], %[m], %[t], lsr #" #s1 "\n\t"                                                \
    "smlad   %[" #acc "], %[xo], %[u], %[" #acc "]\n\t"
/* Four inputs at x + xoff (one word, unpacked once) against the four rows' nibbles of bytes
 * j..j+3 (s0, s1 = 0, 8: their low nibbles; 4, 12: their high ones): 23 instructions, 16 MACs */
#define S4_STEP(xoff, j, s0, s1)                                                                \
    "ldr     %[xo], [%[x], #" #xoff "]\n\t"                                                      \
    "sxtb16  %[xe], %[xo]\n\t"                                                                  \
    "sxtb16  %[xo], %[xo], ror #8\n\t"                                                          \
    S4_ROW(a0, j, s0, s1) S4_ROW(a1, 16 + j, s0, s1) S4_ROW(a2, 32 + j, s0, s1)                \
    S4_ROW(a3, 48 + j, s0, s1)

/* a[r] += the products of `chunks` (>= 1) whole 32-input chunks; advances *xp and *wp */
static inline void dot_chunks(int32_t a[4], const int8_t **xp, const uint8_t **wp, int32_t chunks)
{
    const int8_t *x = *xp;
    const uint8_t *w = *wp;
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    int32_t xe, xo, t, u;
    const uint32_t m = NIBBLES;
    __asm__("1:\n\t"
            S4_STEP(0, 0, 0, 8) S4_STEP(16, 0, 4, 12)
            S4_STEP(4, 4, 0, 8) S4_STEP(20, 4, 4, 12)
            S4_STEP(8, 8, 0, 8) S4_STEP(24, 8, 4, 12)
            S4_STEP(12, 12, 0, 8) S4_STEP(28, 12, 4, 12)
            "adds    %[w], %[w], #64\n\t"
            "adds    %[x], %[x], #32\n\t"
            "subs    %[n], %[n], #1\n\t"
            "bne     1b\n\t"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x),
              [w] "+r"(w), [n] "+r"(chunks), [xe] "=&r"(xe), [xo] "=&r"(xo), [t] "=&r"(t),
              [u] "=&r"(u)
            : [m] "r"(m)
            : "cc", "memory");
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
    *xp = x;
    *wp = w;
}

#else /* unoptimized builds: the same in C */

static inline void dot_chunks(int32_t a[4], const int8_t **xp, const uint8_t **wp, int32_t chunks)
{
    const int8_t *x = *xp;
    const uint8_t *w = *wp;
    for (; chunks > 0; --chunks) {
        for (int32_t j = 0; j < 16; j += 4) {
            const uint32_t xl = read_s8x4(x + j);
            const uint32_t xh = read_s8x4(x + 16 + j);
            const int32_t l02 = __sxtb16((int32_t)xl), l13 = sxtb16_ror8(xl);
            const int32_t h02 = __sxtb16((int32_t)xh), h13 = sxtb16_ror8(xh);
            for (int32_t r = 0; r < 4; ++r) {
                const uint32_t wv = read_u8x4(w + 16 * r + j);
                MAC8(a[r], wv, l02, l13, h02, h13);
            }
        }
        x += MCU_FC_S4_CHUNK;
        w += 2 * MCU_FC_S4_CHUNK;
    }
    *xp = x;
    *wp = w;
}

#endif

/* a[r] = sum_k x[k] * u[r, k], r < 4, over one block of the layout */
static inline void block4(const int8_t *x, const uint8_t *w, int32_t k, int32_t a[4])
{
    a[0] = a[1] = a[2] = a[3] = 0;
    if (k >= MCU_FC_S4_CHUNK) {
        dot_chunks(a, &x, &w, k / MCU_FC_S4_CHUNK);
    }
    const int32_t t = k % MCU_FC_S4_CHUNK;
    if (t > 0) { /* the tails, row after row */
        part4(x, w, t, (t + 1) >> 1, a);
    }
}

/* sum_k x[k] * u[k] over one row stored row-major ((K + 1) / 2 bytes: chunks, then the tail) */
static int32_t dot1(const int8_t *x, const uint8_t *w, int32_t k)
{
    int32_t a = 0;
    int32_t i = 0;
    for (; i + MCU_FC_S4_CHUNK <= k; i += MCU_FC_S4_CHUNK) {
        for (int32_t j = 0; j < 16; j += 4) {
            const uint32_t xl = read_s8x4(x + i + j);
            const uint32_t xh = read_s8x4(x + i + 16 + j);
            const uint32_t wv = read_u8x4(w + j);
            MAC8(a, wv, __sxtb16((int32_t)xl), sxtb16_ror8(xl), __sxtb16((int32_t)xh), sxtb16_ror8(xh));
        }
        w += MCU_FC_S4_CHUNK / 2;
    }
    if (i < k) {
        const int32_t t = k - i;
        const int32_t h = (t + 1) >> 1;
        x += i;
        int32_t j = 0;
        for (; j + 4 <= t - h; j += 4) {
            const uint32_t xl = read_s8x4(x + j);
            const uint32_t xh = read_s8x4(x + h + j);
            const uint32_t wv = read_u8x4(w + j);
            MAC8(a, wv, __sxtb16((int32_t)xl), sxtb16_ror8(xl), __sxtb16((int32_t)xh), sxtb16_ror8(xh));
        }
        for (; j < h; ++j) {
            const int32_t b = w[j];
            a += (int32_t)x[j] * (b & 15) + (j < t - h ? (int32_t)x[h + j] * (b >> 4) : 0);
        }
    }
    return a;
}

/* One output, TFLite's or onnxruntime's rounding */
static inline int8_t out1(int32_t acc, int32_t m, int32_t shift, const mcu_quant_io_t *q)
{
    return q->rounding == MCU_ROUND_TFLITE ? mcu_output_stage_tflite(acc, m, shift, q)
                                           : mcu_output_stage_rne(acc, m, shift, q);
}

void mcu_fully_connected_s4_dsp(const mcu_fc_params_t *p, const int8_t *input,
                                const uint8_t *weights, const int32_t *sums, int8_t *output)
{
    const mcu_quant_io_t q = p->q; /* a local copy: int8_t stores may alias anything */
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t blocked = n_out - n_out % MCU_FC_BLOCK_ROWS;
    const int32_t block_bytes = MCU_FC_BLOCK_ROWS * ((k + 1) >> 1);
    const int32_t step = p->per_channel;
    const int32_t rb = (k + 1) >> 1;
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *const in_row = input + b * k;
        int8_t *const out_row = output + b * n_out;
        const int32_t minus8 = (int32_t)(0u - 8u * (uint32_t)input_sum(in_row, k));
        const uint8_t *w = weights;
        for (int32_t n = 0; n < blocked; n += MCU_FC_BLOCK_ROWS) {
            int32_t a[4];
            block4(in_row, w, k, a);
            w += block_bytes;
            for (int32_t r = 0; r < 4; ++r) {
                const int32_t acc = (int32_t)((uint32_t)a[r] + (uint32_t)(sums != NULL ? sums[n + r] : 0) +
                                              (uint32_t)minus8);
                const int32_t c = step * (n + r);
                out_row[n + r] = out1(acc, p->multiplier[c], p->shift[c], &q);
            }
        }
        for (int32_t n = blocked; n < n_out; ++n) { /* the last N % 4 rows, one after another */
            const int32_t acc = (int32_t)((uint32_t)dot1(in_row, weights + n * rb, k) +
                                          (uint32_t)(sums != NULL ? sums[n] : 0) + (uint32_t)minus8);
            const int32_t c = step * n;
            out_row[n] = out1(acc, p->multiplier[c], p->shift[c], &q);
        }
    }
}

#endif
