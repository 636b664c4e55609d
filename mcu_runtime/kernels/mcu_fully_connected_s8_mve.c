/*
 * mcu_fully_connected_s8_mve.c - the MVE path of mcu_fully_connected_s8 (__ARM_FEATURE_MVE; see
 * mcu_fully_connected_s8.c for the dispatch).
 *
 * A block of four rows at a time, its four scalar accumulators starting at the kernel sums: per
 * 16-input chunk one input vector and the four rows' 16 weights (consecutive in the layout), four
 * VMLADAVA.S8 (16 products each); the last K % 16 inputs predicated (inactive lanes load 0). The
 * four sums are requantized as one vector (output_stage4: CMSIS-NN's arm_requantize_mve, exact for
 * any int32).
 */
#include <stdint.h>

#include "mcu_fully_connected_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

/* TFLite rounding: output_stage4's arithmetic, its constants hoisted (left = max(shift, 0),
 * right = min(shift, 0)) */
static inline int32x4_t requant_tflite(int32x4_t acc, int32x4_t m, int32x4_t left, int32x4_t right,
                                       int32x4_t offset, int32x4_t lo, int32x4_t hi)
{
    int32x4_t v = vqrdmulhq_s32(vshlq_s32(acc, left), m);
    v = vrshlq_s32(vqaddq_s32(v, vshrq_n_s32(vandq_s32(v, right), 31)), right);
    return vminq_s32(vmaxq_s32(vaddq_s32(v, offset), lo), hi);
}

void mcu_fully_connected_s8_mve(const mcu_fc_params_t *p, const int8_t *input,
                                const int8_t *weights, const int32_t *sums, int8_t *output)
{
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t blocked = n_out - n_out % MCU_FC_BLOCK_ROWS;
    const int32_t chunks = k >> 4;
    const int32_t tail = k & (MCU_FC_CHUNK - 1);
    const int tflite = p->q.rounding == MCU_ROUND_TFLITE;
    const int32x4_t zero = vdupq_n_s32(0);
    const int32x4_t offset = vdupq_n_s32(p->q.output_offset);
    const int32x4_t lo = vdupq_n_s32(p->q.act_min);
    const int32x4_t hi = vdupq_n_s32(p->q.act_max);
    int32x4_t m = vdupq_n_s32(p->multiplier[0]);
    int32x4_t shift = vdupq_n_s32(p->shift[0]);
    int32x4_t left = vmaxq_s32(shift, zero);
    int32x4_t right = vminq_s32(shift, zero);
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *const in_row = input + b * k;
        int8_t *const out_row = output + b * n_out;
        const int8_t *w = weights;
        for (int32_t n = 0; n < blocked; n += MCU_FC_BLOCK_ROWS) {
            int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            if (sums != NULL) {
                a0 = sums[n];
                a1 = sums[n + 1];
                a2 = sums[n + 2];
                a3 = sums[n + 3];
            }
            const int8_t *x = in_row;
            for (int32_t c = chunks; c > 0; --c) {
                const int8x16_t xv = vld1q_s8(x);
                a0 = vmladavaq_s8(a0, xv, vld1q_s8(w));
                a1 = vmladavaq_s8(a1, xv, vld1q_s8(w + MCU_FC_CHUNK));
                a2 = vmladavaq_s8(a2, xv, vld1q_s8(w + 2 * MCU_FC_CHUNK));
                a3 = vmladavaq_s8(a3, xv, vld1q_s8(w + 3 * MCU_FC_CHUNK));
                x += MCU_FC_CHUNK;
                w += 4 * MCU_FC_CHUNK;
            }
            if (tail != 0) {
                const mve_pred16_t pred = vctp8q((uint32_t)tail);
                const int8x16_t xv = vldrbq_z_s8(x, pred);
                a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(w, pred));
                a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(w + tail, pred));
                a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(w + 2 * tail, pred));
                a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(w + 3 * tail, pred));
                w += 4 * tail;
            }
            int32x4_t acc = vsetq_lane_s32(a0, zero, 0);
            acc = vsetq_lane_s32(a1, acc, 1);
            acc = vsetq_lane_s32(a2, acc, 2);
            acc = vsetq_lane_s32(a3, acc, 3);
            if (p->per_channel) {
                m = vld1q_s32(p->multiplier + n);
                shift = vld1q_s32(p->shift + n);
                left = vmaxq_s32(shift, zero);
                right = vminq_s32(shift, zero);
            }
            vstrbq_s32(out_row + n, tflite ? requant_tflite(acc, m, left, right, offset, lo, hi)
                                           : output_stage4(acc, m, shift, &p->q));
        }
        if (blocked < n_out) {
            mcu_fully_connected_s8_rows(p, in_row, weights, sums, blocked, out_row);
        }
    }
}

#endif
