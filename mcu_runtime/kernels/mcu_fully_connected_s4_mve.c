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

int mcu_fc_s4_mve_shifts_ok(const int32_t *shift, int32_t count)
{
    int32_t lo = 0, hi = 0;
    int32_t i = 0;
    for (; i + 4 <= count; i += 4) { /* four shifts per vector */
        const int32x4_t v = vldrwq_s32(shift + i);
        lo = vminvq_s32(lo, v);
        hi = vmaxvq_s32(hi, v);
    }
    for (; i < count; ++i) {
        lo = shift[i] < lo ? shift[i] : lo;
        hi = shift[i] > hi ? shift[i] : hi;
    }
    return lo >= -31 && hi <= 30;
}

static int32_t input_sum(const int8_t *x, int32_t k)
{
    int32_t s = 0;
    int32_t i = 0;
    for (; i + 16 <= k; i += 16) {
        s = vaddvaq_s8(s, vldrbq_s8(x + i));
    }
    if (i < k) {
        const mve_pred16_t pred = vctp8q((uint32_t)(k - i));
        s = vaddvaq_p_s8(s, vldrbq_z_s8(x + i, pred), pred);
    }
    return s;
}

#if defined(__OPTIMIZE__) && defined(__GNUC__)

/* One row's 16 bytes (post-incremented): its low nibbles (VAND with q4 = 15s) against the inputs
 * 0..15 (q0), its high ones (VSHR #4) against 16..31 (q1): 5 instructions, 32 MACs */
#define S4_MVE_ROW(acc)                                                                         \
    "vldrb.u8 q2, [%[w]], #16\n\t"                                                              \
    "vand    q3, q2, q4\n\t"                                                                    \
    "vshr.u8 q2, q2, #4\n\t"                                                                    \
    "vmladava.s8 %[" #acc "], q0, q3\n\t"                                                       \
    "vmladava.s8 %[" #acc "], q1, q2\n\t"

/* sum over `chunks` (>= 1) whole 32-input chunks of one block, as four lanes (rows 0..3); advances
 * *xp and *wp. A low-overhead loop of 23 instructions per chunk (128 MACs), the four sums into
 * one vector by two VMOVs. */
static inline int32x4_t dot_chunks(const int8_t **xp, const uint8_t **wp, int32_t chunks)
{
    const int8_t *x = *xp;
    const uint8_t *w = *wp;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int32x4_t v;
    __asm__("vmov.i8 q4, #15\n\t"
            "dls     lr, %[n]\n"
            "1:\n\t"
            "vldrb.s8 q0, [%[x]], #16\n\t"
            "vldrb.s8 q1, [%[x]], #16\n\t"
            S4_MVE_ROW(a0) S4_MVE_ROW(a1) S4_MVE_ROW(a2) S4_MVE_ROW(a3)
            "le      lr, 1b\n\t"
            "vmov    %q[v][2], %q[v][0], %[a0], %[a2]\n\t"
            "vmov    %q[v][3], %q[v][1], %[a1], %[a3]"
            : [a0] "+Te"(a0), [a1] "+Te"(a1), [a2] "+Te"(a2), [a3] "+Te"(a3), [x] "+r"(x), [w] "+r"(w),
              [v] "=&w"(v)
            : [n] "r"(chunks)
            : "lr", "q0", "q1", "q2", "q3", "q4", "memory");
    *xp = x;
    *wp = w;
    return v;
}

/* What the block loop of one input row reads (offsets fixed: the assembly's immediates). */
typedef struct {
    const int8_t *x;   /* +0: the input row */
    int32_t chunks;    /* +4: K / 32 (>= 1) */
    int32_t minus8;    /* +8: -8 * sum_k x[k] */
    int32_t out_offset; /* +12 */
    int32_t lo[4];     /* +16: act_min, four lanes */
    int32_t hi[4];     /* +32: act_max, four lanes */
    int8_t *out_end;   /* +48: out_row + the blocked outputs */
    int32_t h;         /* +52: bytes of a row's tail, (K % 32 + 1) / 2 (0: none) */
} s4_row_t;

/* One row's tail of h bytes (x: h), predicated (P0: the first h lanes; the tail's input vectors
 * %q[xl], %q[xh] zero beyond their inputs): its products; w += h */
#define S4_MVE_TAIL_ROW(acc)                                                                    \
    "vpst\n\t"                                                                                  \
    "vldrbt.u8 q2, [%[w]]\n\t"                                                                  \
    "add     %[w], %[w], %[x]\n\t"                                                              \
    "vand    q3, q2, q4\n\t"                                                                    \
    "vshr.u8 q2, q2, #4\n\t"                                                                    \
    "vmladava.s8 %[" #acc "], %q[xl], q3\n\t"                                                   \
    "vmladava.s8 %[" #acc "], %q[xh], q2\n\t"

/* The requantization of the four sums in q0 (mcu_output_stage4, TFLite rounding; q5 = 0): shifts from
 * [%[s]], multipliers from [%[m]] (LOAD_S / LOAD_M: post-incremented per channel), clamped to the
 * row's lanes, stored as four bytes at [%[out]], post-incremented. */
#define S4_MVE_OUT(LOAD_S, LOAD_M)                                                              \
    LOAD_S                                                                                      \
    "vmax.s32 q1, q2, q5\n\t"                                                                   \
    "vmin.s32 q2, q2, q5\n\t"                                                                   \
    "vshl.s32 q0, q0, q1\n\t"                                                                   \
    LOAD_M                                                                                      \
    "vqrdmulh.s32 q0, q0, q1\n\t"                                                               \
    "vand    q1, q0, q2\n\t"                                                                    \
    "vshr.s32 q1, q1, #31\n\t"                                                                  \
    "vqadd.s32 q0, q0, q1\n\t"                                                                  \
    "vrshl.s32 q0, q0, q2\n\t"                                                                  \
    "ldr     %[x], [%[row], #12]\n\t"                                                           \
    "vadd.i32 q0, q0, %[x]\n\t"                                                                 \
    "vldrw.32 q1, [%[row], #16]\n\t"                                                            \
    "vmax.s32 q0, q0, q1\n\t"                                                                   \
    "vldrw.32 q1, [%[row], #32]\n\t"                                                            \
    "vmin.s32 q0, q0, q1\n\t"                                                                   \
    "vstrb.32 q0, [%[out]], #4\n\t"

/* Every block of one input row, kernel sums, TFLite rounding: per block the four accumulators
 * start at the kernel sums, the chunk loop (23 instructions per 128 MACs), the rows' tails (28
 * instructions, predicated loads), the sums into q0 plus -8 * sum(inputs), requantized and
 * stored: ~33 instructions per block besides the chunks and tails. LOAD_S / LOAD_M: the shift and multiplier loads (per channel: post-incremented). */
#define S4_MVE_ROWS(LOAD_S, LOAD_M)                                                             \
    "vmov.i8 q4, #15\n\t"                                                                       \
    "vmov.i32 q5, #0\n"                                                                          \
    "2:\n\t"                                                                                    \
    "ldr     %[x], [%[row], #4]\n\t"                                                            \
    "ldr     %[a0], [%[k]], #4\n\t"                                                             \
    "ldr     %[a1], [%[k]], #4\n\t"                                                             \
    "ldr     %[a2], [%[k]], #4\n\t"                                                             \
    "ldr     %[a3], [%[k]], #4\n\t"                                                             \
    "wls     lr, %[x], 3f\n\t"                                                                  \
    "ldr     %[x], [%[row]]\n"                                                                   \
    "1:\n\t"                                                                                    \
    "vldrb.s8 q0, [%[x]], #16\n\t"                                                              \
    "vldrb.s8 q1, [%[x]], #16\n\t"                                                              \
    S4_MVE_ROW(a0) S4_MVE_ROW(a1) S4_MVE_ROW(a2) S4_MVE_ROW(a3)                                 \
    "le      lr, 1b\n"                                                                           \
    "3:\n\t"                                                                                    \
    "ldr     %[x], [%[row], #52]\n\t"                                                           \
    "cmp     %[x], #0\n\t"                                                                      \
    "beq     5f\n\t"                                                                            \
    "vctp.8  %[x]\n\t"                                                                          \
    S4_MVE_TAIL_ROW(a0) S4_MVE_TAIL_ROW(a1) S4_MVE_TAIL_ROW(a2) S4_MVE_TAIL_ROW(a3)             \
    "5:\n\t"                                                                                    \
    "vmov    q0[2], q0[0], %[a0], %[a2]\n\t"                                                    \
    "vmov    q0[3], q0[1], %[a1], %[a3]\n\t"                                                    \
    "ldr     %[x], [%[row], #8]\n\t"                                                            \
    "vadd.i32 q0, q0, %[x]\n\t"                                                                 \
    S4_MVE_OUT(LOAD_S, LOAD_M)                                                                  \
    "ldr     %[x], [%[row], #48]\n\t"                                                           \
    "cmp     %[out], %[x]\n\t"                                                                  \
    "bne     2b\n\t"

/* out[n], n < the blocked outputs, of one input row (see S4_MVE_ROWS); advances *wp, *kp. */
static void rows_asm(const s4_row_t *row, const uint8_t **wp, const int32_t **kp, const int32_t *m,
                     const int32_t *s, int per_channel, int8_t *out, int8x16_t xl, int8x16_t xh)
{
    const uint8_t *w = *wp;
    const int32_t *k = *kp;
    const int8_t *x;
    int32_t a0, a1, a2, a3;
    if (per_channel) {
        __asm__ volatile(S4_MVE_ROWS("vldrw.32 q2, [%[s]], #16\n\t", "vldrw.32 q1, [%[m]], #16\n\t")
                         : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [x] "=&r"(x),
                           [w] "+r"(w), [k] "+r"(k), [m] "+r"(m), [s] "+r"(s), [out] "+l"(out)
                         : [row] "r"(row), [xl] "w"(xl), [xh] "w"(xh)
                         : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "cc", "memory");
    } else {
        __asm__ volatile(S4_MVE_ROWS("vldrw.32 q2, [%[s]]\n\t", "vldrw.32 q1, [%[m]]\n\t")
                         : [a0] "=&Te"(a0), [a1] "=&Te"(a1), [a2] "=&Te"(a2), [a3] "=&Te"(a3), [x] "=&r"(x),
                           [w] "+r"(w), [k] "+r"(k), [m] "+r"(m), [s] "+r"(s), [out] "+l"(out)
                         : [row] "r"(row), [xl] "w"(xl), [xh] "w"(xh)
                         : "lr", "q0", "q1", "q2", "q3", "q4", "q5", "cc", "memory");
    }
    *wp = w;
    *kp = k;
}

#define S4_ROWS_ASM 1

#else /* unoptimized builds: the same as intrinsics */

static inline int32x4_t dot_chunks(const int8_t **xp, const uint8_t **wp, int32_t chunks)
{
    const uint8x16_t low = vdupq_n_u8(15);
    const int8_t *x = *xp;
    const uint8_t *w = *wp;
    int32_t a[4] = {0, 0, 0, 0};
    for (; chunks > 0; --chunks) {
        const int8x16_t xl = vldrbq_s8(x);
        const int8x16_t xh = vldrbq_s8(x + 16);
        for (int32_t r = 0; r < 4; ++r) {
            const uint8x16_t b = vldrbq_u8(w + 16 * r);
            a[r] = vmladavaq_s8(a[r], xl, vreinterpretq_s8_u8(vandq_u8(b, low)));
            a[r] = vmladavaq_s8(a[r], xh, vreinterpretq_s8_u8(vshrq_n_u8(b, 4)));
        }
        x += MCU_FC_S4_CHUNK;
        w += 2 * MCU_FC_S4_CHUNK;
    }
    *xp = x;
    *wp = w;
    return vldrwq_s32(a);
}

#endif

/* sum_j x[j] * u[j] over one part of t <= 32 inputs in (t + 1) / 2 bytes at w (byte j: input j
 * low, input h + j high): tail-predicated loads, inactive lanes 0 */
static inline int32_t part1(int32_t acc, int8x16_t xl, int8x16_t xh, const uint8_t *w, mve_pred16_t ph)
{
    const uint8x16_t b = vldrbq_z_u8(w, ph);
    acc = vmladavaq_s8(acc, xl, vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(15))));
    return vmladavaq_s8(acc, xh, vreinterpretq_s8_u8(vshrq_n_u8(b, 4)));
}

/* sum_k x[k] * u[r, k], r < 4, over one block of the layout, as four lanes */
static inline int32x4_t block4(const int8_t *x, const uint8_t *w, int32_t k)
{
    int32x4_t v = vdupq_n_s32(0);
    if (k >= MCU_FC_S4_CHUNK) {
        v = dot_chunks(&x, &w, k / MCU_FC_S4_CHUNK);
    }
    const int32_t t = k % MCU_FC_S4_CHUNK;
    if (t > 0) { /* the tails, row after row, h bytes each */
        const int32_t h = (t + 1) >> 1;
        const mve_pred16_t ph = vctp8q((uint32_t)h);
        const int8x16_t xl = vldrbq_z_s8(x, ph);
        const int8x16_t xh = vldrbq_z_s8(x + h, vctp8q((uint32_t)(t - h)));
        int32_t a[4];
        for (int32_t r = 0; r < 4; ++r) {
            a[r] = part1(0, xl, xh, w + r * h, ph);
        }
        v = vaddq_s32(v, vldrwq_s32(a));
    }
    return v;
}

/* sum_k x[k] * u[k] over one row (the last N % 4 rows: chunks, then the tail) */
static int32_t row1(const int8_t *x, const uint8_t *w, int32_t k)
{
    const mve_pred16_t all = vctp8q(16u);
    int32_t acc = 0;
    int32_t i = 0;
    for (; i + MCU_FC_S4_CHUNK <= k; i += MCU_FC_S4_CHUNK) {
        acc = part1(acc, vldrbq_s8(x + i), vldrbq_s8(x + i + 16), w, all);
        w += MCU_FC_S4_CHUNK / 2;
    }
    if (i < k) {
        const int32_t t = k - i;
        const int32_t h = (t + 1) >> 1;
        const mve_pred16_t ph = vctp8q((uint32_t)h);
        acc = part1(acc, vldrbq_z_s8(x + i, ph), vldrbq_z_s8(x + i + h, vctp8q((uint32_t)(t - h))), w, ph);
    }
    return acc;
}

/* Every other case (NULL kernel sums, onnxruntime rounding, unoptimized builds):
 * intrinsics per block, out of line (its constants cost the fast path nothing). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void fc_general(const mcu_fc_params_t *p, const int8_t *input, const uint8_t *weights,
                       const int32_t *sums, int8_t *output)
{
    const mcu_quant_io_t q = p->q;
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t blocked = n_out - n_out % MCU_FC_BLOCK_ROWS;
    const int32_t block_bytes = MCU_FC_BLOCK_ROWS * ((k + 1) >> 1);
    /* per-channel constants four at a time; per tensor the one constant four times (step 0) */
    const int32_t m1[4] = {p->multiplier[0], p->multiplier[0], p->multiplier[0], p->multiplier[0]};
    const int32_t s1[4] = {p->shift[0], p->shift[0], p->shift[0], p->shift[0]};
    static const int32_t no_sums[4] = {0, 0, 0, 0};
    const int32_t qstep = p->per_channel ? 4 : 0;
    const int32_t sstep = sums != NULL ? 4 : 0;
    const int32x4_t out_offset = vdupq_n_s32(q.output_offset);
    const int32x4_t lo = vdupq_n_s32(q.act_min);
    const int32x4_t hi = vdupq_n_s32(q.act_max);
    const int32x4_t zero = vdupq_n_s32(0);
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *const in_row = input + b * k;
        int8_t *const out_row = output + b * n_out;
        const int32_t minus8 = (int32_t)(0u - 8u * (uint32_t)input_sum(in_row, k));
        const int32x4_t off = vdupq_n_s32(minus8);
        const uint8_t *w = weights;
        const int32_t *mp = p->per_channel ? p->multiplier : m1;
        const int32_t *sp = p->per_channel ? p->shift : s1;
        const int32_t *kp = sums != NULL ? sums : no_sums;
        for (int32_t n = 0; n < blocked; n += MCU_FC_BLOCK_ROWS) {
            /* + kernel sums - 8 * sum(inputs): int32 wrap-around, as the reference's */
            int32x4_t acc = vaddq_s32(vaddq_s32(block4(in_row, w, k), off), vldrwq_s32(kp));
            const int32x4_t m = vldrwq_s32(mp);
            const int32x4_t s = vldrwq_s32(sp);
            w += block_bytes;
            kp += sstep;
            mp += qstep;
            sp += qstep;
            int32x4_t v;
            if (q.rounding == MCU_ROUND_TFLITE) { /* mcu_output_stage4, its constants hoisted */
                const int32x4_t right = vminq_s32(s, zero); /* -exponent */
                v = vqrdmulhq_s32(vshlq_s32(acc, vmaxq_s32(s, zero)), m);
                v = vrshlq_s32(vqaddq_s32(v, vshrq_n_s32(vandq_s32(v, right), 31)), right);
                v = vminq_s32(vmaxq_s32(vaddq_s32(v, out_offset), lo), hi);
            } else {
                v = mcu_output_stage4(acc, m, s, &q);
            }
            vstrbq_s32(out_row + n, v);
        }
        const int32_t rb = (k + 1) >> 1;
        for (int32_t r = blocked; r < n_out; ++r) { /* the last N % 4 rows */
            const int32_t acc = (int32_t)((uint32_t)row1(in_row, weights + r * rb, k) + (uint32_t)minus8 +
                                          (uint32_t)(sums != NULL ? sums[r] : 0));
            const int32_t c = p->per_channel ? r : 0;
            out_row[r] = mcu_output_stage(acc, p->multiplier[c], p->shift[c], &q);
        }
    }
}

#if defined(S4_ROWS_ASM)
/* Kernel sums, TFLite rounding: every block of an input row in one assembly loop (rows_asm), the
 * last N % 4 rows by row1. */
static void fc_fast(const mcu_fc_params_t *p, const int8_t *input, const uint8_t *weights,
                    const int32_t *sums, int8_t *output)
{
    const int32_t k = p->in_features;
    const int32_t n_out = p->out_features;
    const int32_t blocked = n_out - n_out % MCU_FC_BLOCK_ROWS;
    const int32_t m = p->multiplier[0], s = p->shift[0];
    const int32_t m1[4] = {m, m, m, m};
    const int32_t s1[4] = {s, s, s, s};
    const int32_t full = k - k % MCU_FC_S4_CHUNK;
    const int32_t t = k - full;
    const int32_t h = (t + 1) >> 1;
    s4_row_t row = {input, k / MCU_FC_S4_CHUNK, 0, p->q.output_offset,
                    {p->q.act_min, p->q.act_min, p->q.act_min, p->q.act_min},
                    {p->q.act_max, p->q.act_max, p->q.act_max, p->q.act_max}, output, h};
    for (int32_t b = 0; b < p->batches; ++b) {
        const int8_t *const in_row = input + b * k;
        int8_t *const out_row = output + b * n_out;
        row.x = in_row;
        row.minus8 = (int32_t)(0u - 8u * (uint32_t)input_sum(in_row, k));
        row.out_end = out_row + blocked;
        const uint8_t *w = weights;
        const int32_t *kp = sums;
        if (blocked > 0) { /* the tail's inputs: h low-nibble lanes, t - h high-nibble ones, zero beyond */
            const int8x16_t xl = vldrbq_z_s8(in_row + full, vctp8q((uint32_t)h));
            const int8x16_t xh = vldrbq_z_s8(in_row + full + h, vctp8q((uint32_t)(t - h)));
            rows_asm(&row, &w, &kp, p->per_channel ? p->multiplier : m1, p->per_channel ? p->shift : s1,
                     p->per_channel, out_row, xl, xh);
        }
        for (int32_t r = blocked; r < n_out; ++r) { /* the last N % 4 rows, (K + 1) / 2 bytes each */
            const int32_t acc = (int32_t)((uint32_t)row1(in_row, w, k) + (uint32_t)row.minus8 + (uint32_t)sums[r]);
            w += (k + 1) >> 1;
            const int32_t c = p->per_channel ? r : 0;
            out_row[r] = mcu_output_stage_tflite(acc, p->multiplier[c], p->shift[c], &p->q);
        }
    }
}
#endif

void mcu_fully_connected_s4_mve(const mcu_fc_params_t *p, const int8_t *input,
                                const uint8_t *weights, const int32_t *sums, int8_t *output)
{
#if defined(S4_ROWS_ASM)
    if (p->q.rounding == MCU_ROUND_TFLITE && sums != NULL) {
        fc_fast(p, input, weights, sums, output);
        return;
    }
#endif
    fc_general(p, input, weights, sums, output);
}

#endif
