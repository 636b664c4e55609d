/*
 * mcu_fully_connected_s8_mve.c - the MVE path of mcu_fully_connected_s8 (__ARM_FEATURE_MVE; see
 * mcu_fully_connected_s8.c for the dispatch).
 *
 * A block of four rows at a time, its four scalar accumulators starting at the kernel sums: per
 * 16-input chunk one input vector and the four rows' 16 weights (consecutive in the layout), four
 * VMLADAVA.S8 (16 products each; two chunks per loop pass); the last K % 16 inputs: the input's
 * tail (inactive lanes 0, loaded once per input row) against each row's K % 16 weights
 * (predicated loads). The four sums go into one vector and are requantized together (CMSIS-NN's
 * arm_requantize_mve arithmetic, exact for any int32), stored with one narrowing store. The last
 * N % 4 rows (row-major): one tail-predicated loop per row, their sums requantized as one vector,
 * a predicated store.
 *
 * K < 4 (the assembly): lanes over outputs, per block one gathered weight column and one VMLA
 * per input.
 *
 * Optimized gcc builds with TFLite rounding, kernel sums and (per-tensor) shift <= 0 run every
 * input row in one inline assembly block (gcc -O2 spills and predicates the intrinsics badly:
 * ~100 extra instructions per block): the chunk loop a low-overhead loop (WLS/LE), the remainder
 * rows tail-predicated ones (WLSTP/LETP), the four sums into one vector by two VMOVs, the
 * constants in registers for the whole call (q4 - q7 are callee-saved: one VPUSH/VPOP per call).
 * Every other case (onnxruntime rounding, NULL kernel sums, a per-tensor left shift) and the
 * other builds run the same sums as intrinsics (fc_rows_c), requantized by mcu_output_stage4.
 */
#include <stddef.h>
#include <stdint.h>

#include "mcu_fully_connected_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

#if defined(__GNUC__)
#define MCU_FC_NOINLINE __attribute__((noinline))
#else
#define MCU_FC_NOINLINE
#endif

/* Every shift[i], i < count, in [-31, 30]: the largest shift + 31 (unsigned) at most 61. */
int mcu_fully_connected_s8_mve_shifts_ok(const int32_t *shift, int32_t count)
{
    if (count == 1) {
        return (uint32_t)shift[0] + 31u <= 61u;
    }
    uint32_t worst = 0;
#if defined(__OPTIMIZE__) && defined(__GNUC__)
    const uint32_t bias = 31u;
    int32x4_t v;
    __asm__("dlstp.32 lr, %[n]\n"
            "1:\n\t"
            "vldrw.32 %q[v], [%[s]], #16\n\t"
            "vadd.i32 %q[v], %q[v], %[b]\n\t"
            "vmaxv.u32 %[worst], %q[v]\n\t"
            "letp    lr, 1b"
            : [worst] "+r"(worst), [s] "+r"(shift), [v] "=&w"(v)
            : [n] "r"(count), [b] "r"(bias)
            : "lr", "memory"); /* reads shift[0..count) (clang takes no "m" of an unsized array) */
#else
    for (int32_t i = 0; i < count; i += 4) {
        const int32x4_t v = vldrwq_z_s32(shift + i, vctp32q((uint32_t)(count - i)));
        worst = vmaxvq_u32(worst, vreinterpretq_u32_s32(vaddq_n_s32(v, 31)));
    }
#endif
    return worst <= 61u;
}

/* Every input row through the intrinsics (any rounding, shift, NULL kernel sums): per block the
 * four sums as scalars, requantized by mcu_output_stage4; the last N % 4 rows by the generic path's
 * mcu_fully_connected_s8_rows. */
MCU_FC_NOINLINE static void fc_rows_c(const mcu_fc_params_t *p, const int8_t *input,
                                      const int8_t *weights, const int32_t *sums, int8_t *output)
{
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t blocked = n_out - n_out % MCU_FC_BLOCK_ROWS;
    const int32_t tail = k & (MCU_FC_CHUNK - 1);
    const mve_pred16_t pred = vctp8q((uint32_t)tail);
    int32x4_t m = vdupq_n_s32(p->multiplier[0]);
    int32x4_t shift = vdupq_n_s32(p->shift[0]);
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *const in_row = input + b * k;
        int8_t *const out_row = output + b * n_out;
        const int8x16_t xt = vldrbq_z_s8(in_row + (k - tail), pred);
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
            for (int32_t c = k >> 4; c > 0; --c) {
                const int8x16_t xv = vld1q_s8(x);
                a0 = vmladavaq_s8(a0, xv, vld1q_s8(w));
                a1 = vmladavaq_s8(a1, xv, vld1q_s8(w + MCU_FC_CHUNK));
                a2 = vmladavaq_s8(a2, xv, vld1q_s8(w + 2 * MCU_FC_CHUNK));
                a3 = vmladavaq_s8(a3, xv, vld1q_s8(w + 3 * MCU_FC_CHUNK));
                x += MCU_FC_CHUNK;
                w += 4 * MCU_FC_CHUNK;
            }
            if (tail != 0) {
                a0 = vmladavaq_s8(a0, xt, vldrbq_z_s8(w, pred));
                a1 = vmladavaq_s8(a1, xt, vldrbq_z_s8(w + tail, pred));
                a2 = vmladavaq_s8(a2, xt, vldrbq_z_s8(w + 2 * tail, pred));
                a3 = vmladavaq_s8(a3, xt, vldrbq_z_s8(w + 3 * tail, pred));
                w += 4 * tail;
            }
            int32x4_t acc = vdupq_n_s32(a0);
            acc = vsetq_lane_s32(a1, acc, 1);
            acc = vsetq_lane_s32(a2, acc, 2);
            acc = vsetq_lane_s32(a3, acc, 3);
            if (p->per_channel) {
                m = vld1q_s32(p->multiplier + n);
                shift = vld1q_s32(p->shift + n);
            }
            vstrbq_s32(out_row + n, mcu_output_stage4(acc, m, shift, &p->q));
        }
        if (blocked < n_out) {
            mcu_fully_connected_s8_rows(p, in_row, weights, sums, blocked, out_row);
        }
    }
}

#if defined(__OPTIMIZE__) && defined(__GNUC__)

/* Every input row in one assembly block. Entry: r0 = the params, r1 the input, r3 the weights,
 * r5 the kernel sums, r2 the output, moved to r7 (a low register: VSTRB.32 takes no other) after
 * r7 is saved; r7 is no operand or clobber, as it may be the frame pointer (compilers refuse to
 * give it to an asm then, clang also at -O2): the block restores it on exit. Kept on the stack
 * as [sp] params, [sp, #4] input row, [sp, #8] rows left, [sp, #12] weights, [sp, #16] sums,
 * [sp, #20] output row. q4 / q5 / q6 = act_min / act_max / output offset for the whole call;
 * ONCE loads the per-tensor multiplier and shift into r11 / r12 and the shift into q7 (or sets
 * q7 = 0 per channel). Per row (label 0) r8 = K / 16, r9 = K % 16, r10 = N / 4, ROW loads the
 * per-channel multiplier / shift addresses into r11 / r12; q3 the input's tail (zero past it),
 * P0 its predicate. */
#define FC_LOAD(ONCE, ROW)                                                                         \
    "push    {r7}\n\t"                                                                             \
    "mov     r7, r2\n\t"                                                                           \
    "ldr     r2, [r0]\n\t"                                                                         \
    "push    {r0, r1, r2, r3, r5, r7}\n\t"                                                         \
    "ldrd    r2, r4, [r0, #%c[o_min]]\n\t"                                                         \
    "vdup.32 q4, r2\n\t"                                                                           \
    "vdup.32 q5, r4\n\t"                                                                           \
    "ldr     r2, [r0, #%c[o_off]]\n\t"                                                             \
    "vdup.32 q6, r2\n\t"                                                                           \
    ONCE                                                                                           \
    "0:\n\t"                                                                                       \
    "ldrd    r8, r10, [r0, #%c[o_k]]\n\t"                                                          \
    ROW                                                                                            \
    "and     r9, r8, #15\n\t"                                                                      \
    "lsr     r8, r8, #4\n\t"                                                                       \
    "lsr     r10, r10, #2\n\t"                                                                     \
    "add     lr, r1, r8, lsl #4\n\t"                                                               \
    "vctp.8  r9\n\t"                                                                               \
    "vpst\n\t"                                                                                     \
    "vldrbt.8 q3, [lr]\n\t"

#define FC_ONCE_TENSOR                                                                             \
    "ldrd    r11, r12, [r0, #%c[o_m]]\n\t"                                                         \
    "ldr     r11, [r11]\n\t"                                                                       \
    "ldr     r12, [r12]\n\t"                                                                       \
    "vdup.32 q7, r12\n\t"
#define FC_ONCE_CHANNEL "vmov.i32 q7, #0\n\t"
#define FC_ROW_CHANNEL "ldrd    r11, r12, [r0, #%c[o_m]]\n\t"

/* The next input row (back to label 0), or the stack released and r7 restored. */
#define FC_NEXT                                                                                    \
    "ldr     r0, [sp]\n\t"                                                                         \
    "ldrd    r8, r10, [r0, #%c[o_k]]\n\t"                                                          \
    "ldrd    r1, r2, [sp, #4]\n\t"                                                                 \
    "subs    r2, r2, #1\n\t"                                                                       \
    "beq     10f\n\t"                                                                              \
    "add     r1, r1, r8\n\t"                                                                       \
    "strd    r1, r2, [sp, #4]\n\t"                                                                 \
    "ldrd    r3, r5, [sp, #12]\n\t"                                                                \
    "ldr     r7, [sp, #20]\n\t"                                                                    \
    "add     r7, r7, r10\n\t"                                                                      \
    "str     r7, [sp, #20]\n\t"                                                                    \
    "b       0b\n"                                                                                 \
    "10:\n\t"                                                                                      \
    "add     sp, sp, #24\n\t"                                                                      \
    "pop     {r7}\n\t"

/* q0 = requantized q0 (TFLite rounding): per-tensor multiplier r11, right shift r12 and q7 */
#define FC_REQUANT_TENSOR                                                                          \
    "vqrdmulh.s32 q0, q0, r11\n\t"                                                                 \
    "vand    q1, q0, q7\n\t"                                                                       \
    "vshr.s32 q1, q1, #31\n\t"                                                                     \
    "vqadd.s32 q0, q0, q1\n\t"                                                                     \
    "vrshl.s32 q0, r12\n\t"

/* the same per channel: shifts and multipliers loaded by LOAD1 (into q1) and LOAD2 (into q2),
 * q7 = 0; uses q0 - q2 only */
#define FC_REQUANT_CHANNEL(LOAD1, LOAD2)                                                           \
    LOAD1                                                                                          \
    "vmax.s32 q2, q1, q7\n\t"                                                                      \
    "vsub.i32 q1, q1, q2\n\t"                                                                      \
    "vshl.s32 q0, q0, q2\n\t"                                                                      \
    LOAD2                                                                                          \
    "vqrdmulh.s32 q0, q0, q2\n\t"                                                                  \
    "vand    q2, q0, q1\n\t"                                                                       \
    "vshr.s32 q2, q2, #31\n\t"                                                                     \
    "vqadd.s32 q0, q0, q2\n\t"                                                                     \
    "vrshl.s32 q0, q0, q1\n\t"

/* plus the output offset, clamped */
#define FC_CLAMP                                                                                   \
    "vadd.i32 q0, q0, q6\n\t"                                                                      \
    "vmax.s32 q0, q0, q4\n\t"                                                                      \
    "vmin.s32 q0, q0, q5\n\t"


/* K < 4 (r8 = 0, r9 = K): lanes over outputs. x[k] in r0, r2, r4; q3 = {0, K, 2K, 3K}, the
 * offsets of a block's weight column (the block is row-major); per block the four kernel sums,
 * one gathered column and one VMLA (four MACs) per input; then as FC_BLOCKS. */
#define FC_LANES(REQUANT)                                                                          \
    "cmp     r8, #0\n\t"                                                                           \
    "bne     1f\n\t"                                                                               \
    "cmp     r9, #4\n\t"                                                                           \
    "bge     1f\n\t"                                                                               \
    "ldrsb   r0, [r1]\n\t"                                                                         \
    "cmp     r9, #2\n\t"                                                                           \
    "blt     13f\n\t"                                                                              \
    "ldrsb   r2, [r1, #1]\n\t"                                                                     \
    "cmp     r9, #3\n\t"                                                                           \
    "blt     13f\n\t"                                                                              \
    "ldrsb   r4, [r1, #2]\n"                                                                       \
    "13:\n\t"                                                                                      \
    "movs    r6, #0\n\t"                                                                           \
    "vidup.u32 q3, r6, #1\n\t"                                                                     \
    "vmul.i32 q3, q3, r9\n\t"                                                                      \
    "lsl     r6, r9, #2\n"                                                                         \
    "11:\n\t"                                                                                      \
    "vldrw.32 q0, [r5], #16\n\t"                                                                   \
    "vldrb.s32 q1, [r3, q3]\n\t"                                                                   \
    "vmla.s32 q0, q1, r0\n\t"                                                                      \
    "cmp     r9, #2\n\t"                                                                           \
    "blt     12f\n\t"                                                                              \
    "add     lr, r3, #1\n\t"                                                                       \
    "vldrb.s32 q1, [lr, q3]\n\t"                                                                   \
    "vmla.s32 q0, q1, r2\n\t"                                                                      \
    "cmp     r9, #3\n\t"                                                                           \
    "blt     12f\n\t"                                                                              \
    "add     lr, r3, #2\n\t"                                                                       \
    "vldrb.s32 q1, [lr, q3]\n\t"                                                                   \
    "vmla.s32 q0, q1, r4\n"                                                                        \
    "12:\n\t"                                                                                      \
    "add     r3, r3, r6\n\t"                                                                       \
    REQUANT                                                                                        \
    FC_CLAMP                                                                                       \
    "vstrb.32 q0, [r7], #4\n\t"                                                                    \
    "subs    r10, r10, #1\n\t"                                                                     \
    "bne     11b\n\t"                                                                              \
    "b       8f\n\t"

/* One chunk of 16 inputs (r1) times the block's four rows (r3) into r0, r2, r4, r6. */
#define FC_CHUNK_ASM                                                                               \
    "vldrb.8 q0, [r1], #16\n\t"                                                                    \
    "vldrb.8 q1, [r3], #16\n\t"                                                                    \
    "vldrb.8 q2, [r3], #16\n\t"                                                                    \
    "vmladava.s8 r0, q0, q1\n\t"                                                                   \
    "vldrb.8 q1, [r3], #16\n\t"                                                                    \
    "vmladava.s8 r2, q0, q2\n\t"                                                                   \
    "vldrb.8 q2, [r3], #16\n\t"                                                                    \
    "vmladava.s8 r4, q0, q1\n\t"                                                                   \
    "vmladava.s8 r6, q0, q2\n\t"

/* The blocks: per block r0, r2, r4, r6 the four sums from the kernel sums at r5, the chunks
 * (r8; an odd one first, then two per pass of a low-overhead loop: -4.5% on large K, +2
 * instructions per block for K < 32), the tail (r9 inputs, predicated loads), the four sums into
 * q0 (VMOV Qd[i+2], Qd[i], Rt, Rt2 puts Rt in lane i), requantized, stored. */
#define FC_BLOCKS(REQUANT)                                                                         \
    "cmp     r10, #0\n\t"                                                                          \
    "beq     8f\n\t"                                                                               \
    FC_LANES(REQUANT)                                                                              \
    "1:\n\t"                                                                                       \
    "ldrd    r0, r2, [r5], #8\n\t"                                                                 \
    "ldrd    r4, r6, [r5], #8\n\t"                                                                 \
    "lsrs    lr, r8, #1\n\t"                                                                       \
    "bcc     20f\n\t"                                                                              \
    FC_CHUNK_ASM                                                                                   \
    "20:\n\t"                                                                                      \
    "wls     lr, lr, 3f\n"                                                                         \
    "2:\n\t"                                                                                       \
    FC_CHUNK_ASM                                                                                   \
    FC_CHUNK_ASM                                                                                   \
    "le      lr, 2b\n"                                                                             \
    "3:\n\t"                                                                                       \
    "sub     r1, r1, r8, lsl #4\n\t"                                                               \
    "cmp     r9, #0\n\t"                                                                           \
    "beq     4f\n\t"                                                                               \
    "add     lr, r3, r9\n\t"                                                                       \
    "vpstt\n\t"                                                                                    \
    "vldrbt.8 q1, [r3]\n\t"                                                                        \
    "vldrbt.8 q2, [lr]\n\t"                                                                        \
    "add     r3, lr, r9\n\t"                                                                       \
    "add     lr, r3, r9\n\t"                                                                       \
    "vmladava.s8 r0, q3, q1\n\t"                                                                   \
    "vmladava.s8 r2, q3, q2\n\t"                                                                   \
    "vpstt\n\t"                                                                                    \
    "vldrbt.8 q1, [r3]\n\t"                                                                        \
    "vldrbt.8 q2, [lr]\n\t"                                                                        \
    "add     r3, lr, r9\n\t"                                                                       \
    "vmladava.s8 r4, q3, q1\n\t"                                                                   \
    "vmladava.s8 r6, q3, q2\n"                                                                     \
    "4:\n\t"                                                                                       \
    "vmov    q0[2], q0[0], r0, r4\n\t"                                                             \
    "vmov    q0[3], q0[1], r2, r6\n\t"                                                             \
    REQUANT                                                                                        \
    FC_CLAMP                                                                                       \
    "vstrb.32 q0, [r7], #4\n\t"                                                                    \
    "subs    r10, r10, #1\n\t"                                                                     \
    "bne     1b\n\t"                                                                               \
    "8:\n\t"

/* One remainder row's sum into ACC: its kernel sum at [r5, #OFF], its K = r8 weights at r3
 * (then r3 += K), a tail-predicated loop. */
#define FC_ROW(ACC, OFF)                                                                           \
    "ldr     " ACC ", [r5, #" OFF "]\n\t"                                                          \
    "mov     r10, r1\n\t"                                                                          \
    "mov     r6, r3\n\t"                                                                           \
    "wlstp.8 lr, r8, 6f\n"                                                                         \
    "5:\n\t"                                                                                       \
    "vldrb.8 q0, [r10], #16\n\t"                                                                   \
    "vldrb.8 q1, [r6], #16\n\t"                                                                    \
    "vmladava.s8 " ACC ", q0, q1\n\t"                                                              \
    "letp    lr, 5b\n"                                                                             \
    "6:\n\t"                                                                                       \
    "add     r3, r3, r8\n\t"

/* The last N % 4 rows (r9 = their count after the blocks), requantized as one vector, stored
 * under the predicate of their count (P0; per-channel constants loaded under it); then the job
 * pointer off the stack. */
#define FC_REMAINDER(REQUANT)                                                                      \
    "ldr     r0, [sp]\n\t"                                                                         \
    "add     r8, r9, r8, lsl #4\n\t"                                                               \
    "ldr     r9, [r0, #%c[o_n]]\n\t"                                                               \
    "ands    r9, r9, #3\n\t"                                                                       \
    "beq     9f\n\t"                                                                               \
    FC_ROW("r0", "0")                                                                              \
    "cmp     r9, #2\n\t"                                                                           \
    "blt     7f\n\t"                                                                               \
    FC_ROW("r2", "4")                                                                              \
    "cmp     r9, #3\n\t"                                                                           \
    "blt     7f\n\t"                                                                               \
    FC_ROW("r4", "8")                                                                              \
    "7:\n\t"                                                                                       \
    "vmov    q0[2], q0[0], r0, r4\n\t"                                                             \
    "vmov    q0[3], q0[1], r2, r6\n\t"                                                             \
    "vctp.32 r9\n\t"                                                                               \
    REQUANT                                                                                        \
    FC_CLAMP                                                                                       \
    "vpst\n\t"                                                                                     \
    "vstrbt.32 q0, [r7]\n"                                                                         \
    "9:\n\t"

#define FC_LOAD_CHANNEL_S "vldrw.32 q1, [r12], #16\n\t"
#define FC_LOAD_CHANNEL_M "vldrw.32 q2, [r11], #16\n\t"
#define FC_LOAD_CHANNEL_S_P "vpst\n\tvldrwt.32 q1, [r12]\n\t"
#define FC_LOAD_CHANNEL_M_P "vpst\n\tvldrwt.32 q2, [r11]\n\t"

#define FC_CLOBBERS                                                                                \
    "r4", "r6", "r8", "r9", "r10", "r11", "r12", "lr", "q0", "q1", "q2", "q3", "q4", "q5", "q6",   \
        "q7", "cc", "memory"

#define FC_OPERANDS                                                                                \
    : "+r"(r0), "+r"(r1), "+r"(r2), "+r"(r3), "+r"(r5)                                             \
    : [o_k] "i"(offsetof(mcu_fc_params_t, in_features)),                                           \
      [o_n] "i"(offsetof(mcu_fc_params_t, out_features)),                                          \
      [o_min] "i"(offsetof(mcu_fc_params_t, q.act_min)),                                           \
      [o_off] "i"(offsetof(mcu_fc_params_t, q.output_offset)),                                     \
      [o_m] "i"(offsetof(mcu_fc_params_t, multiplier))                                             \
    : FC_CLOBBERS

/* the registers of FC_LOAD (act_max follows act_min, shift follows multiplier: LDRD) */
#define FC_ARGS                                                                                    \
    register const mcu_fc_params_t *r0 __asm__("r0") = p;                                          \
    register const int8_t *r1 __asm__("r1") = x;                                                   \
    register const int8_t *r3 __asm__("r3") = w;                                                   \
    register const int32_t *r5 __asm__("r5") = s;                                                  \
    register int8_t *r2 __asm__("r2") = out

/* Every input row, per-tensor constants (shift <= 0) */
static inline void rows_tensor(const mcu_fc_params_t *p, const int8_t *x, const int8_t *w,
                               const int32_t *s, int8_t *out)
{
    FC_ARGS;
    __asm__ volatile(FC_LOAD(FC_ONCE_TENSOR, "") FC_BLOCKS(FC_REQUANT_TENSOR)
                         FC_REMAINDER(FC_REQUANT_TENSOR) FC_NEXT FC_OPERANDS);
}

/* Every input row, per-channel constants */
static inline void rows_channel(const mcu_fc_params_t *p, const int8_t *x, const int8_t *w,
                                const int32_t *s, int8_t *out)
{
    FC_ARGS;
    __asm__ volatile(FC_LOAD(FC_ONCE_CHANNEL, FC_ROW_CHANNEL)
                         FC_BLOCKS(FC_REQUANT_CHANNEL(FC_LOAD_CHANNEL_S, FC_LOAD_CHANNEL_M))
                             FC_REMAINDER(FC_REQUANT_CHANNEL(FC_LOAD_CHANNEL_S_P,
                                                             FC_LOAD_CHANNEL_M_P)) FC_NEXT
                                 FC_OPERANDS);
}

mcu_status_t mcu_fully_connected_s8_mve(const mcu_context_t *ctx, const mcu_fc_params_t *p,
                                        const int8_t *input, const int8_t *weights,
                                        const int32_t *sums, int8_t *output)
{
    (void)ctx; /* no scratch */
    if (p->q.rounding != MCU_ROUND_TFLITE || sums == NULL) {
        fc_rows_c(p, input, weights, sums, output);
    } else if (p->per_channel) {
        rows_channel(p, input, weights, sums, output);
    } else if (p->shift[0] <= 0) {
        rows_tensor(p, input, weights, sums, output);
    } else {
        fc_rows_c(p, input, weights, sums, output);
    }
    return MCU_OK;
}

#else /* unoptimized builds: the intrinsics */

mcu_status_t mcu_fully_connected_s8_mve(const mcu_context_t *ctx, const mcu_fc_params_t *p,
                                        const int8_t *input, const int8_t *weights,
                                        const int32_t *sums, int8_t *output)
{
    (void)ctx; /* no scratch */
    fc_rows_c(p, input, weights, sums, output);
    return MCU_OK;
}

#endif

#endif
