/*
 * mcu_fully_connected_s4_generic.c - the generic path of mcu_fully_connected_s4 (pure C99, every
 * target, the host included; see mcu_fully_connected_s4.c for the dispatch), and the rows after
 * the blocks that every path shares.
 *
 * A block of four rows at a time: per 32-input chunk, input j and input j + 16 are loaded once for
 * the four rows' bytes j (low nibble, high nibble). The products of the unsigned nibbles go into
 * one int32 sum per row; the kernel sum and -8 * sum_k in[k] are added with int32 wrap-around:
 * exactly the int8 kernel's accumulator. Requantized by mcu_output_stage().
 */
#include <stdint.h>

#include "mcu_fully_connected_s4_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"
#include "mcu_nn_s4.h"

int32_t mcu_fc_s4_input_sum(const int8_t *x, int32_t k)
{
    int32_t s = 0;
    for (int32_t i = 0; i < k; ++i) {
        s += x[i];
    }
    return s;
}

/* the accumulator of output n: the nibble sum plus the kernel sum and -8 * sum(inputs), wrapped */
static inline int32_t finish(int32_t acc, const int32_t *sums, int32_t n, int32_t minus8)
{
    return (int32_t)((uint32_t)acc + (uint32_t)(sums != NULL ? sums[n] : 0) + (uint32_t)minus8);
}

void mcu_fully_connected_s4_rows(const mcu_fc_params_t *p, const int8_t *in_row,
                                 const uint8_t *weights, const int32_t *sums, int32_t first,
                                 int32_t minus8, int8_t *out_row)
{
    const int32_t k = p->in_features;
    const int32_t rb = (k + 1) >> 1;
    for (int32_t n = first; n < p->out_features; ++n) {
        const uint8_t *w = weights + n * rb;
        int32_t acc = 0;
        int32_t i = 0;
        for (; i + MCU_FC_S4_CHUNK <= k; i += MCU_FC_S4_CHUNK) {
            acc += mcu_fc_s4_part(in_row + i, w, MCU_FC_S4_CHUNK);
            w += MCU_FC_S4_CHUNK / 2;
        }
        if (i < k) {
            acc += mcu_fc_s4_part(in_row + i, w, k - i);
        }
        const int32_t c = p->per_channel ? n : 0;
        out_row[n] = mcu_output_stage(finish(acc, sums, n, minus8), p->multiplier[c], p->shift[c], &p->q);
    }
}

/* a[r] = sum_k x[k] * u[r, k], r < 4, over one block of the layout */
static void block4(const int8_t *x, const uint8_t *w, int32_t k, int32_t a[4])
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int32_t i = 0;
    for (; i + MCU_FC_S4_CHUNK <= k; i += MCU_FC_S4_CHUNK) {
        for (int32_t j = 0; j < MCU_FC_S4_CHUNK / 2; ++j) {
            const int32_t lo = x[j];
            const int32_t hi = x[MCU_FC_S4_CHUNK / 2 + j];
            int32_t b = w[j];
            a0 += lo * (b & 15) + hi * (b >> 4);
            b = w[16 + j];
            a1 += lo * (b & 15) + hi * (b >> 4);
            b = w[32 + j];
            a2 += lo * (b & 15) + hi * (b >> 4);
            b = w[48 + j];
            a3 += lo * (b & 15) + hi * (b >> 4);
        }
        x += MCU_FC_S4_CHUNK;
        w += 2 * MCU_FC_S4_CHUNK;
    }
    if (i < k) { /* the tails, row after row, h bytes each */
        const int32_t t = k - i;
        const int32_t h = (t + 1) >> 1;
        a0 += mcu_fc_s4_part(x, w, t);
        a1 += mcu_fc_s4_part(x, w + h, t);
        a2 += mcu_fc_s4_part(x, w + 2 * h, t);
        a3 += mcu_fc_s4_part(x, w + 3 * h, t);
    }
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

void mcu_fully_connected_s4_generic(const mcu_fc_params_t *p, const int8_t *input,
                                    const uint8_t *weights, const int32_t *sums, int8_t *output)
{
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t blocked = n_out - n_out % MCU_FC_BLOCK_ROWS;
    const int32_t block_bytes = MCU_FC_BLOCK_ROWS * ((k + 1) >> 1);
    const int32_t step = p->per_channel; /* 1: per-channel, 0: per-tensor */
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *const in_row = input + b * k;
        int8_t *const out_row = output + b * n_out;
        const int32_t minus8 = (int32_t)(0u - 8u * (uint32_t)mcu_fc_s4_input_sum(in_row, k));
        const uint8_t *w = weights;
        for (int32_t n = 0; n < blocked; n += MCU_FC_BLOCK_ROWS) {
            int32_t acc[4];
            block4(in_row, w, k, acc);
            w += block_bytes;
            for (int32_t r = 0; r < 4; ++r) {
                const int32_t c = step * (n + r);
                out_row[n + r] = mcu_output_stage(finish(acc[r], sums, n + r, minus8), p->multiplier[c],
                                                  p->shift[c], &p->q);
            }
        }
        mcu_fully_connected_s4_rows(p, in_row, weights, sums, blocked, minus8, out_row);
    }
}
