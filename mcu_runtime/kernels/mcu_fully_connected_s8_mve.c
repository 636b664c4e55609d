/*
 * mcu_fully_connected_s8_mve.c - the MVE path of mcu_fully_connected_s8 (__ARM_FEATURE_MVE; see
 * mcu_fully_connected_s8.c for the dispatch).
 *
 * A block of four rows at a time, its four scalar accumulators starting at the kernel sums: per
 * 16-input chunk one input vector and the four rows' 16 weights (consecutive in the layout), four
 * VMLADAVA.S8 (16 products each); the last K % 16 inputs: the input's tail (inactive lanes 0,
 * loaded once per input row) against each row's K % 16 weights (predicated loads). The four sums
 * go into one vector and are requantized together (CMSIS-NN's arm_requantize_mve arithmetic,
 * exact for any int32), stored with one narrowing store. The last N % 4 rows (row-major): one
 * tail-predicated loop per row, their sums requantized as one vector, a predicated store.
 *
 * Optimized builds with TFLite rounding, kernel sums and (per-tensor) shift <= 0 run one input row
 * as inline assembly (gcc -O2 spills and predicates the intrinsics badly): the chunk loop a
 * low-overhead loop (WLS/LE), the remainder rows tail-predicated ones (WLSTP/LETP), the four sums
 * into one vector by two VMOVs, the per-tensor constants in registers for the whole row. Every
 * other case (and unoptimized builds) runs the same arithmetic as intrinsics (fc_row_c).
 */
#include <stdint.h>

#include "mcu_fully_connected_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

/* One input row through the intrinsics: any rounding, shift, NULL kernel sums. */
static void fc_row_c(const mcu_fc_params_t *p, const int8_t *x, const int8_t *weights,
                     const int32_t *sums, int8_t *out)
{
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t tail = k & (MCU_FC_CHUNK - 1);
    const mve_pred16_t pred = vctp8q((uint32_t)tail);
    const int8x16_t xt = vldrbq_z_s8(x + (k - tail), pred);
    const int32_t step = p->per_channel ? 4 : 0;
    const int8_t *w = weights;
    int32_t n = 0;
    for (; n + MCU_FC_BLOCK_ROWS <= n_out; n += MCU_FC_BLOCK_ROWS) {
        int32_t a[4];
        for (int32_t r = 0; r < 4; ++r) {
            a[r] = sums != NULL ? sums[n + r] : 0;
        }
        const int8_t *xc = x;
        for (int32_t c = k >> 4; c > 0; --c) {
            const int8x16_t xv = vld1q_s8(xc);
            for (int32_t r = 0; r < 4; ++r) {
                a[r] = vmladavaq_s8(a[r], xv, vld1q_s8(w + r * MCU_FC_CHUNK));
            }
            xc += MCU_FC_CHUNK;
            w += 4 * MCU_FC_CHUNK;
        }
        for (int32_t r = 0; r < 4 && tail != 0; ++r) {
            a[r] = vmladavaq_s8(a[r], xt, vldrbq_z_s8(w + r * tail, pred));
        }
        w += 4 * tail;
        const int32_t c = step != 0 ? n : 0;
        const int32x4_t m = step != 0 ? vld1q_s32(p->multiplier + c) : vdupq_n_s32(p->multiplier[0]);
        const int32x4_t s = step != 0 ? vld1q_s32(p->shift + c) : vdupq_n_s32(p->shift[0]);
        vstrbq_s32(out + n, output_stage4(vld1q_s32(a), m, s, &p->q));
    }
    for (; n < n_out; ++n, w += k) {
        int32_t a = sums != NULL ? sums[n] : 0;
        for (int32_t i = 0; i < k; i += MCU_FC_CHUNK) {
            const mve_pred16_t pi = vctp8q((uint32_t)(k - i));
            a = vmladavaq_s8(a, vldrbq_z_s8(x + i, pi), vldrbq_z_s8(w + i, pi));
        }
        const int32_t c = p->per_channel ? n : 0;
        out[n] = output_stage(a, p->multiplier[c], p->shift[c], &p->q);
    }
}

#if defined(__OPTIMIZE__) && defined(__GNUC__)

/* What the assembly loads (LDM into r1, r3, r5, r8 - r12, then the constants): keep the order. */
typedef struct {
    const int8_t *x;       /* r1: the input row */
    const int8_t *w;       /* r3: the weights of the first row */
    const int32_t *s;      /* r5: its kernel sum */
    int8_t *out;           /* r7 (a low register: VSTRB.32 takes no other) */
    int32_t chunks;        /* r8: K / 16 (remainder rows: K) */
    int32_t tail;          /* r9: K % 16 (remainder rows: their count, 1..3) */
    int32_t blocks;        /* r10: blocks of four rows, >= 1 */
    uintptr_t m;           /* r11: per-tensor: the multiplier; per-channel: their address */
    uintptr_t shift;       /* r12: per-tensor: the shift (<= 0); per-channel: their address */
    int32_t lo, hi, offset, right; /* q4, q5, q6, q7 (right: per-channel 0) */
} fc_job_t;

/* r0 = the job; the row's constants into q4 - q7 */
#define FC_LOAD                                                                                    \
    "ldm     r0, {r1, r3, r5, r7, r8, r9, r10, r11, r12}\n\t"                                     \
    "ldrd    r2, r4, [r0, #36]\n\t"                                                                \
    "vdup.32 q4, r2\n\t"                                                                           \
    "vdup.32 q5, r4\n\t"                                                                           \
    "ldrd    r2, r4, [r0, #44]\n\t"                                                                \
    "vdup.32 q6, r2\n\t"                                                                           \
    "vdup.32 q7, r4\n\t"

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

/* The blocks of one input row: per block r0, r2, r4, r6 the four sums from the kernel sums at
 * r5, the chunks (r8 of them) in a low-overhead loop, the tail (r9 inputs; q3 the input's tail,
 * loaded once, P0 its predicate) by predicated loads, one vector requantized and stored. */
#define FC_BLOCKS(REQUANT)                                                                         \
    FC_LOAD                                                                                        \
    "add     lr, r1, r8, lsl #4\n\t"                                                               \
    "vctp.8  r9\n\t"                                                                               \
    "vpst\n\t"                                                                                     \
    "vldrbt.8 q3, [lr]\n\t"                                                                        \
    "1:\n\t"                                                                                       \
    "ldrd    r0, r2, [r5], #8\n\t"                                                                 \
    "ldrd    r4, r6, [r5], #8\n\t"                                                                 \
    "wls     lr, r8, 3f\n"                                                                         \
    "2:\n\t"                                                                                       \
    "vldrb.8 q0, [r1], #16\n\t"                                                                    \
    "vldrb.8 q1, [r3], #16\n\t"                                                                    \
    "vldrb.8 q2, [r3], #16\n\t"                                                                    \
    "vmladava.s8 r0, q0, q1\n\t"                                                                   \
    "vldrb.8 q1, [r3], #16\n\t"                                                                    \
    "vmladava.s8 r2, q0, q2\n\t"                                                                   \
    "vldrb.8 q2, [r3], #16\n\t"                                                                    \
    "vmladava.s8 r4, q0, q1\n\t"                                                                   \
    "vmladava.s8 r6, q0, q2\n\t"                                                                   \
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
    "bne     1b\n\t"

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

/* The remainder rows (r9 of them, 1..3), requantized as one vector, stored under the predicate
 * of their count (P0; per-channel constants loaded under it). */
#define FC_REMAINDER(REQUANT)                                                                      \
    FC_LOAD                                                                                        \
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
    "vstrbt.32 q0, [r7]\n\t"

#define FC_LOAD_CHANNEL_S "vldrw.32 q1, [r12], #16\n\t"
#define FC_LOAD_CHANNEL_M "vldrw.32 q2, [r11], #16\n\t"
#define FC_LOAD_CHANNEL_S_P "vpst\n\tvldrwt.32 q1, [r12]\n\t"
#define FC_LOAD_CHANNEL_M_P "vpst\n\tvldrwt.32 q2, [r11]\n\t"

#define FC_CLOBBERS                                                                                \
    "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "lr", "q0", "q1",  \
        "q2", "q3", "q4", "q5", "q6", "q7", "cc", "memory"

static void blocks_tensor(const fc_job_t *job)
{
    register const fc_job_t *r0 __asm__("r0") = job;
    __asm__ volatile(FC_BLOCKS(FC_REQUANT_TENSOR) : "+r"(r0) : : FC_CLOBBERS);
}

static void blocks_channel(const fc_job_t *job)
{
    register const fc_job_t *r0 __asm__("r0") = job;
    __asm__ volatile(FC_BLOCKS(FC_REQUANT_CHANNEL(FC_LOAD_CHANNEL_S, FC_LOAD_CHANNEL_M))
                     : "+r"(r0)
                     :
                     : FC_CLOBBERS);
}

static void remainder_tensor(const fc_job_t *job)
{
    register const fc_job_t *r0 __asm__("r0") = job;
    __asm__ volatile(FC_REMAINDER(FC_REQUANT_TENSOR) : "+r"(r0) : : FC_CLOBBERS);
}

static void remainder_channel(const fc_job_t *job)
{
    register const fc_job_t *r0 __asm__("r0") = job;
    __asm__ volatile(FC_REMAINDER(FC_REQUANT_CHANNEL(FC_LOAD_CHANNEL_S_P, FC_LOAD_CHANNEL_M_P))
                     : "+r"(r0)
                     :
                     : FC_CLOBBERS);
}

void mcu_fully_connected_s8_mve(const mcu_fc_params_t *p, const int8_t *input,
                                const int8_t *weights, const int32_t *sums, int8_t *output)
{
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t per_channel = p->per_channel;
    if (p->q.rounding != MCU_ROUND_TFLITE || sums == NULL || (!per_channel && p->shift[0] > 0)) {
        for (int32_t b = 0; b < p->batches; ++b) {
            fc_row_c(p, input + b * k, weights, sums, output + b * n_out);
        }
        return;
    }
    const int32_t blocks = n_out >> 2;
    const int32_t rest = n_out & 3;
    fc_job_t job = {.x = input, .w = weights, .s = sums, .chunks = k >> 4, .tail = k & 15,
                    .out = output, .blocks = blocks, .m = (uintptr_t)p->multiplier,
                    .shift = (uintptr_t)p->shift, .lo = p->q.act_min, .hi = p->q.act_max,
                    .offset = p->q.output_offset, .right = 0};
    if (!per_channel) {
        job.m = (uintptr_t)(uint32_t)p->multiplier[0];
        job.shift = (uintptr_t)(uint32_t)p->shift[0];
        job.right = p->shift[0];
    }
    fc_job_t rem = job;
    rem.w = weights + 4 * blocks * k;
    rem.s = sums + 4 * blocks;
    rem.chunks = k;
    rem.tail = rest;
    if (per_channel) {
        rem.m = (uintptr_t)(p->multiplier + 4 * blocks);
        rem.shift = (uintptr_t)(p->shift + 4 * blocks);
    }
    for (int32_t b = 0; b < p->batches; ++b) {
        job.x = rem.x = input + b * k;
        job.out = output + b * n_out;
        rem.out = job.out + 4 * blocks;
        if (blocks > 0) {
            if (per_channel) {
                blocks_channel(&job);
            } else {
                blocks_tensor(&job);
            }
        }
        if (rest > 0) {
            if (per_channel) {
                remainder_channel(&rem);
            } else {
                remainder_tensor(&rem);
            }
        }
    }
}

#else /* unoptimized builds: the intrinsics */

void mcu_fully_connected_s8_mve(const mcu_fc_params_t *p, const int8_t *input,
                                const int8_t *weights, const int32_t *sums, int8_t *output)
{
    for (int32_t b = 0; b < p->batches; ++b) {
        fc_row_c(p, input + b * p->in_features, weights, sums, output + b * p->out_features);
    }
}

#endif

#endif
