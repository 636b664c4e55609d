/*
 * mcu_fully_connected_s8_generic.c - the generic path of mcu_fully_connected_s8 (pure C99, every
 * target, the host included; see mcu_fully_connected_s8.c for the dispatch).
 *
 * A block of four rows at a time: every input byte is loaded once for four weights (on Armv6-M,
 * whose eight low registers hold no more, twice for two). The products go into one int32 sum
 * per row (|sum| <= K * 2^14 < 2^31), the kernel sum is added with int32 wrap-around: exactly the
 * reference's int32 accumulator. Requantized by mcu_output_stage().
 */
#include <stdint.h>

#include "../support/mcu_dot_s8.h"
#include "mcu_fully_connected_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

#if defined(__thumb__) && !defined(__thumb2__)
/* a[r] = sum_k x[k] * w[r, k], r < 4, over one block of the layout */
static void block4(const int8_t *x, const int8_t *w, int32_t k, int32_t a[4])
{
    a[0] = a[1] = a[2] = a[3] = 0;
    for (int32_t c = k / MCU_FC_CHUNK; c > 0; --c) {
        mcu_dot2_s8(x, w, MCU_FC_CHUNK, MCU_FC_CHUNK, a);
        mcu_dot2_s8(x, w + 2 * MCU_FC_CHUNK, MCU_FC_CHUNK, MCU_FC_CHUNK, a + 2);
        x += MCU_FC_CHUNK;
        w += 4 * MCU_FC_CHUNK;
    }
    const int32_t tail = k % MCU_FC_CHUNK;
    if (tail > 0) {
        mcu_dot2_s8(x, w, tail, tail, a);
        mcu_dot2_s8(x, w + 2 * tail, tail, tail, a + 2);
    }
}

#elif defined(__riscv) && !defined(MCU_OPTIMIZE_SIZE) && MCU_FC_CHUNK == 16

/* gcc's pre-allocation scheduling would hoist the chunk's loads and spill (mcu_dot_s8.c) */
#if defined(__GNUC__) && !defined(__clang__)
#define FC_RV_LOOP __attribute__((noinline, optimize("no-schedule-insns")))
#else
#define FC_RV_LOOP
#endif

/* RV32: a chunk's 16 inputs of four rows written out, every load at an immediate offset from x or w
 * (16 + 64 loads, 64 MUL and 64 ADD, three pointer and loop instructions per chunk: ~3.3
 * instructions per MAC, not 4.7). */
#define FC_BLOCK_ATTR FC_RV_LOOP
#define FC_RV_STEP(i)                                                                            \
    do {                                                                                         \
        const int32_t xv = x[i];                                                                 \
        a0 += xv * w[i];                                                                         \
        a1 += xv * w[16 + (i)];                                                                  \
        a2 += xv * w[32 + (i)];                                                                  \
        a3 += xv * w[48 + (i)];                                                                  \
    } while (0)
#define FC_CHUNK4()                                                                              \
    do {                                                                                         \
        FC_RV_STEP(0);                                                                           \
        FC_RV_STEP(1);                                                                           \
        FC_RV_STEP(2);                                                                           \
        FC_RV_STEP(3);                                                                           \
        FC_RV_STEP(4);                                                                           \
        FC_RV_STEP(5);                                                                           \
        FC_RV_STEP(6);                                                                           \
        FC_RV_STEP(7);                                                                           \
        FC_RV_STEP(8);                                                                           \
        FC_RV_STEP(9);                                                                           \
        FC_RV_STEP(10);                                                                          \
        FC_RV_STEP(11);                                                                          \
        FC_RV_STEP(12);                                                                          \
        FC_RV_STEP(13);                                                                          \
        FC_RV_STEP(14);                                                                          \
        FC_RV_STEP(15);                                                                          \
    } while (0)

#else

#define FC_BLOCK_ATTR
#define FC_CHUNK4() mcu_fc_mac4_rows(x, w, MCU_FC_CHUNK, 0, MCU_FC_CHUNK, &a0, &a1, &a2, &a3)

#endif

#if !(defined(__thumb__) && !defined(__thumb2__))
/* a[r] = sum_k x[k] * w[r, k], r < 4, over one block of the layout (FC_CHUNK4: one chunk of the
 * four rows into a0..a3) */
FC_BLOCK_ATTR static void block4(const int8_t *x, const int8_t *w, int32_t k, int32_t a[4])
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int32_t c = k / MCU_FC_CHUNK; c > 0; --c) {
        FC_CHUNK4();
        x += MCU_FC_CHUNK;
        w += 4 * MCU_FC_CHUNK;
    }
    const int32_t tail = k % MCU_FC_CHUNK; /* rows at w + r * tail */
    mcu_fc_mac4_rows(x, w, tail, 0, tail, &a0, &a1, &a2, &a3);
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}
#undef FC_CHUNK4
#undef FC_RV_STEP

#endif

void mcu_fully_connected_s8_rows(const mcu_fc_params_t *p, const int8_t *in_row,
                                 const int8_t *weights, const int32_t *sums, int32_t first,
                                 int8_t *out_row)
{
    const int32_t k = p->in_features;
    for (int32_t n = first; n < p->out_features; ++n) {
        const int32_t c = p->per_channel ? n : 0;
        /* |sum of products| <= K * 2^14 < 2^31; + kernel sum: the int32 TFLite accumulator */
        const int32_t acc = (int32_t)((uint32_t)mcu_dot1_s8(in_row, weights + n * k, k) +
                                      (uint32_t)(sums != NULL ? sums[n] : 0));
        out_row[n] = mcu_output_stage(acc, p->multiplier[c], p->shift[c], &p->q);
    }
}

void mcu_fully_connected_s8_generic(const mcu_fc_params_t *p, const int8_t *input,
                                    const int8_t *weights, const int32_t *sums, int8_t *output)
{
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t blocked = n_out - n_out % MCU_FC_BLOCK_ROWS;
    const int32_t step = p->per_channel; /* 1: per-channel, 0: per-tensor */
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *const in_row = input + b * k;
        int8_t *const out_row = output + b * n_out;
        const int8_t *w = weights;
        for (int32_t n = 0; n < blocked; n += MCU_FC_BLOCK_ROWS) {
            int32_t acc[4];
            block4(in_row, w, k, acc);
            w += MCU_FC_BLOCK_ROWS * k;
            for (int32_t r = 0; r < 4; ++r) {
                const int32_t a = (int32_t)((uint32_t)acc[r] +
                                            (uint32_t)(sums != NULL ? sums[n + r] : 0));
                const int32_t c = step * (n + r);
                out_row[n + r] = mcu_output_stage(a, p->multiplier[c], p->shift[c], &p->q);
            }
        }
        mcu_fully_connected_s8_rows(p, in_row, weights, sums, blocked, out_row);
    }
}
