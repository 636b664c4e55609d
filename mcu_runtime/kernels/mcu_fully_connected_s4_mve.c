/*
 * mcu_fully_connected_s4_mve.c - the MVE path of mcu_fully_connected_s4 (__ARM_FEATURE_MVE; see
 * mcu_fully_connected_s4.c for the dispatch).
 *
 * A block of four rows at a time, four scalar accumulators: per 32-input chunk two input vectors
 * (inputs 0..15 and 16..31) and, per row, one 16-byte load of its 32 nibbles, VAND #15 (the low
 * nibbles: inputs 0..15) and VSHR #4 (the high ones: 16..31), two VMLADAVA.S8 (the unsigned
 * nibbles 0..15 are non-negative int8 lanes). The K % 32 tail: the same with tail-predicated
 * loads (inactive lanes 0). The input sum (for -8 * sum) is VADDVA over predicated loads. The
 * four sums are requantized as one vector (mcu_output_stage4) and stored with one narrowing
 * store; the last N % 4 rows: mcu_fully_connected_s4_rows.
 */
#include <stdint.h>

#include "mcu_fully_connected_s4_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"
#include "mcu_nn_s4.h"
#include "mcu_requant.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

static int32_t input_sum(const int8_t *x, int32_t k)
{
    int32_t s = 0;
    for (int32_t i = 0; i < k; i += 16) {
        const mve_pred16_t pred = vctp8q((uint32_t)(k - i));
        s = vaddvaq_p_s8(s, vldrbq_z_s8(x + i, pred), pred);
    }
    return s;
}

/* a[r] = sum_k x[k] * u[r, k], r < 4, over one block of the layout */
static inline void block4(const int8_t *x, const uint8_t *w, int32_t k, int32_t a[4])
{
    const uint8x16_t low = vdupq_n_u8(15);
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int32_t c = k / MCU_FC_S4_CHUNK; c > 0; --c) {
        const int8x16_t xl = vldrbq_s8(x);
        const int8x16_t xh = vldrbq_s8(x + 16);
        uint8x16_t b = vldrbq_u8(w);
        a0 = vmladavaq_s8(a0, xl, vreinterpretq_s8_u8(vandq_u8(b, low)));
        a0 = vmladavaq_s8(a0, xh, vreinterpretq_s8_u8(vshrq_n_u8(b, 4)));
        b = vldrbq_u8(w + 16);
        a1 = vmladavaq_s8(a1, xl, vreinterpretq_s8_u8(vandq_u8(b, low)));
        a1 = vmladavaq_s8(a1, xh, vreinterpretq_s8_u8(vshrq_n_u8(b, 4)));
        b = vldrbq_u8(w + 32);
        a2 = vmladavaq_s8(a2, xl, vreinterpretq_s8_u8(vandq_u8(b, low)));
        a2 = vmladavaq_s8(a2, xh, vreinterpretq_s8_u8(vshrq_n_u8(b, 4)));
        b = vldrbq_u8(w + 48);
        a3 = vmladavaq_s8(a3, xl, vreinterpretq_s8_u8(vandq_u8(b, low)));
        a3 = vmladavaq_s8(a3, xh, vreinterpretq_s8_u8(vshrq_n_u8(b, 4)));
        x += MCU_FC_S4_CHUNK;
        w += 2 * MCU_FC_S4_CHUNK;
    }
    const int32_t t = k % MCU_FC_S4_CHUNK;
    if (t > 0) { /* the tails, row after row, h bytes each; input h + j pairs with byte j's high nibble */
        const int32_t h = (t + 1) >> 1;
        const mve_pred16_t ph = vctp8q((uint32_t)h);
        const int8x16_t xl = vldrbq_z_s8(x, ph);
        const int8x16_t xh = vldrbq_z_s8(x + h, vctp8q((uint32_t)(t - h)));
        uint8x16_t b = vldrbq_z_u8(w, ph);
        a0 = vmladavaq_s8(a0, xl, vreinterpretq_s8_u8(vandq_u8(b, low)));
        a0 = vmladavaq_s8(a0, xh, vreinterpretq_s8_u8(vshrq_n_u8(b, 4)));
        b = vldrbq_z_u8(w + h, ph);
        a1 = vmladavaq_s8(a1, xl, vreinterpretq_s8_u8(vandq_u8(b, low)));
        a1 = vmladavaq_s8(a1, xh, vreinterpretq_s8_u8(vshrq_n_u8(b, 4)));
        b = vldrbq_z_u8(w + 2 * h, ph);
        a2 = vmladavaq_s8(a2, xl, vreinterpretq_s8_u8(vandq_u8(b, low)));
        a2 = vmladavaq_s8(a2, xh, vreinterpretq_s8_u8(vshrq_n_u8(b, 4)));
        b = vldrbq_z_u8(w + 3 * h, ph);
        a3 = vmladavaq_s8(a3, xl, vreinterpretq_s8_u8(vandq_u8(b, low)));
        a3 = vmladavaq_s8(a3, xh, vreinterpretq_s8_u8(vshrq_n_u8(b, 4)));
    }
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

void mcu_fully_connected_s4_mve(const mcu_fc_params_t *p, const int8_t *input,
                                const uint8_t *weights, const int32_t *sums, int8_t *output)
{
    const mcu_quant_io_t q = p->q;
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t blocked = n_out - n_out % MCU_FC_BLOCK_ROWS;
    const int32_t block_bytes = MCU_FC_BLOCK_ROWS * ((k + 1) >> 1);
    const int32x4_t mult1 = vdupq_n_s32(p->multiplier[0]);
    const int32x4_t shift1 = vdupq_n_s32(p->shift[0]);
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *const in_row = input + b * k;
        int8_t *const out_row = output + b * n_out;
        const int32_t minus8 = (int32_t)(0u - 8u * (uint32_t)input_sum(in_row, k));
        const uint8_t *w = weights;
        for (int32_t n = 0; n < blocked; n += MCU_FC_BLOCK_ROWS) {
            int32_t a[4];
            block4(in_row, w, k, a);
            w += block_bytes;
            int32x4_t acc = vldrwq_s32(a);
            acc = vaddq_n_s32(acc, minus8); /* int32 wrap-around, as the reference's */
            if (sums != NULL) {
                acc = vaddq_s32(acc, vldrwq_s32(sums + n));
            }
            const int32x4_t m = p->per_channel ? vldrwq_s32(p->multiplier + n) : mult1;
            const int32x4_t s = p->per_channel ? vldrwq_s32(p->shift + n) : shift1;
            vstrbq_s32(out_row + n, mcu_output_stage4(acc, m, s, &q));
        }
        if (blocked < n_out) {
            mcu_fully_connected_s4_rows(p, in_row, weights, sums, blocked, minus8, out_row);
        }
    }
}

#endif
