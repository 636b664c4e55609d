/*
 * mcu_conv2d_s8_mve.c - the MVE path of mcu_conv2d_s8 (__ARM_FEATURE_MVE; see mcu_conv2d_s8.c
 * for the dispatch): every channel's requantization realistic (mcu_requant2_ok) and windows of at
 * most MCU_CONV_PATCH_BYTES bytes, or windows that are one run of the input (1x1, any size).
 *
 * Three output positions at a time, in blocks of MCU_CONV_MVE_OC_BLOCK output channels:
 * - each position's window is read where it lies in the input when it is one run of it, else
 *   gathered into its own K-byte patch in scratch (padding taps holding the input zero point);
 * - two channels at a time meet the three windows (pass_mve): per 16 window bytes, two weight
 *   vectors and three input vectors, six VMLADAVA (16 products each), in a tail-predicated
 *   low-overhead loop (so K % 16 needs no extra code): 12 instructions per 96 products. The six
 *   sums start at the channels' corrections and go to an int32 row per position; a block's last
 *   pass of one or two positions meets only their windows (pass_one, pass_two: 6 and 9
 *   instructions);
 * - each position's row is requantized four channels per vector (requant_rows: mcu_requant4, clamp,
 *   one narrowing store; each vector of constants loaded once for the pass's rows); with
 *   mcu_conv2d_add_s8's residual Add, the Add follows on the same four lanes (requant_rows_fused).
 * Scratch: corrections and requantization bases (2 words per channel of a block), the three
 * windows interleaved in 16-byte chunks (48 * ceil(K / 16) bytes), then the three rows of sums
 * (sums_row() words apart, the last one as long as the block rounded up to even), which (some
 * window gathered) also hold the K-byte patch: the windows of a pass are gathered before it
 * writes its sums, and the sums are requantized before the next pass gathers.
 * The lean call (mcu_conv2d_s8_lean): with the params' kernel_sums and requant_bases, one block of
 * every channel, its three windows copied once a pass and then met by groups of `lean` channels
 * (8 or 16), each group's sums requantized before the next group's pass: the scratch holds the
 * windows and one group's sums, and the outputs of a pass are written after its windows are
 * copied (so it may write over its input); where its ctx has no room for the copies and every
 * window is one run of the input, the groups meet the windows where they lie (direct3_mve: three
 * pointers, the same 12 instructions per 96 products; MCU_CONV_MVE_LEAN_DIRECT; every group met and
 * requantized in one function per row length and count, direct_groups), the scratch only the
 * group's sums, and the call not over its input. onnxruntime's rounding lifts a group's corrections into
 * the first row of its sums (lift_group), each read before the pass writes over it. Without the
 * constants, blocks of MCU_CONV_MVE_LEAN_BLOCK channels a call.
 * Inline assembly where optimizing (gcc -O0 cannot give the pass its twelve registers); the same
 * arithmetic in intrinsics otherwise.
 */
#include <stdint.h>

#include "../support/mcu_dot_s8.h"
#include "mcu_conv2d_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

#if defined(__OPTIMIZE__) && defined(__GNUC__)
#define MCU_CONV_MVE_ASM 1
#else
#define MCU_CONV_MVE_ASM 0
#endif

/*
 * The sums of a pass, by window i and channel oc_base + j of the block:
 *   sums[i * row + j] = corr[j] + <window i, filter of channel oc_base + j>
 * (row: sums_row(), the block's channels rounded up to 8, 16, 32 or 64);
 * the windows interleaved in 16-byte chunks, xq[48 j + 16 i + b] = byte 16 j + b of window i, so
 * that one pointer walks all three.
 */
#if MCU_CONV_MVE_ASM
/* The asm's shared lines: the sums of windows 1 and 2 started from window 0's (SPLAT3; SPLAT2 for
 * two windows), and the loop's products once the first channel's 16 bytes are in q0 and the
 * windows' in q1..q3 (MAC3; MAC2 for two windows), then the second channel's (from %[v]). */
#define MCU_CONV_SPLAT3 "mov %[s1], %[s0]\n\tmov %[s2], %[s0]\n\tmov %[s4], %[s3]\n\tmov %[s5], %[s3]\n"
#define MCU_CONV_SPLAT2 "mov %[s1], %[s0]\n\tmov %[s4], %[s3]\n"
#define MCU_CONV_MAC3                                                                              \
    "vmladava.s8 %[s0], q0, q1\n\tvmladava.s8 %[s1], q0, q2\n\tvmladava.s8 %[s2], q0, q3\n\t"      \
    "vldrb.8 q0, [%[v]], #16\n\t"                                                                  \
    "vmladava.s8 %[s3], q0, q1\n\tvmladava.s8 %[s4], q0, q2\n\tvmladava.s8 %[s5], q0, q3\n\t"      \
    "letp lr, 2b\n"
#define MCU_CONV_MAC2                                                                              \
    "vmladava.s8 %[s0], q0, q1\n\tvmladava.s8 %[s1], q0, q2\n\t"                                   \
    "vldrb.8 q0, [%[v]], #16\n\t"                                                                  \
    "vmladava.s8 %[s3], q0, q1\n\tvmladava.s8 %[s4], q0, q2\n\t"                                   \
    "letp lr, 2b\n"

/* Two channels (weights w0, w1; corrections corr[0..1]) at the three windows: sums[0..1] of
 * each row. */
MCU_CONV_INLINE void pair_mve(const int8_t *w0, const int8_t *w1, const int8_t *xq, int32_t k,
                              const int32_t *corr, int32_t *sums, int32_t row)
{
    int32_t s0 = corr[0], s1, s2, s3 = corr[1], s4, s5;
    __asm__ volatile("wlstp.8 lr, %[k], 1f\n\t"
                     MCU_CONV_SPLAT3
                     "2:\n\t"
                     "vldrb.8 q0, [%[u]], #16\n\t"
                     "vldrb.8 q2, [%[x], #16]\n\t"
                     "vldrb.8 q3, [%[x], #32]\n\t"
                     "vldrb.8 q1, [%[x]], #48\n\t"
                     MCU_CONV_MAC3
                     "1:\n\t"
                     "strd %[s0], %[s3], [%[o]]\n\t"
                     "strd %[s1], %[s4], [%[o], %[r1]]\n\t"
                     "strd %[s2], %[s5], [%[o], %[r2]]\n"
                     : [s0] "+Te"(s0), [s1] "=&Te"(s1), [s2] "=&Te"(s2), [s3] "+Te"(s3),
                       [s4] "=&Te"(s4), [s5] "=&Te"(s5), [u] "+r"(w0), [v] "+r"(w1), [x] "+r"(xq)
                     : [k] "r"(k), [o] "r"(sums), [r1] "n"(4 * row), [r2] "n"(8 * row)
                     : "q0", "q1", "q2", "q3", "memory", "r14");
}

/* pair_mve at the first two windows only (a block's last pass of two positions): 9 instructions
 * per 64 products; rows of sums `row` words apart (a register: one function for every length). */
MCU_CONV_INLINE void pair2_mve(const int8_t *w0, const int8_t *w1, const int8_t *xq, int32_t k,
                               const int32_t *corr, int32_t *sums, int32_t row)
{
    int32_t s0 = corr[0], s1, s3 = corr[1], s4;
    __asm__ volatile("wlstp.8 lr, %[k], 1f\n\t"
                     MCU_CONV_SPLAT2
                     "2:\n\t"
                     "vldrb.8 q0, [%[u]], #16\n\t"
                     "vldrb.8 q2, [%[x], #16]\n\t"
                     "vldrb.8 q1, [%[x]], #48\n\t"
                     MCU_CONV_MAC2
                     "1:\n"
                     : [s0] "+Te"(s0), [s1] "=&Te"(s1), [s3] "+Te"(s3), [s4] "=&Te"(s4),
                       [u] "+r"(w0), [v] "+r"(w1), [x] "+r"(xq)
                     : [k] "r"(k)
                     : "q0", "q1", "q2", "memory", "r14");
    sums[0] = s0;
    sums[1] = s3;
    sums[row] = s1;
    sums[row + 1] = s4;
}

/* pair_mve at the first window only (a block's last pass of one position): 6 instructions per
 * 32 products. */
MCU_CONV_INLINE void pair1_mve(const int8_t *w0, const int8_t *w1, const int8_t *xq, int32_t k,
                               const int32_t *corr, int32_t *sums)
{
    int32_t s0 = corr[0], s3 = corr[1];
    __asm__ volatile("wlstp.8 lr, %[k], 1f\n"
                     "2:\n\t"
                     "vldrb.8 q0, [%[u]], #16\n\t"
                     "vldrb.8 q1, [%[x]], #48\n\t"
                     "vmladava.s8 %[s0], q0, q1\n\t"
                     "vldrb.8 q0, [%[v]], #16\n\t"
                     "vmladava.s8 %[s3], q0, q1\n\t"
                     "letp lr, 2b\n"
                     "1:\n"
                     : [s0] "+Te"(s0), [s3] "+Te"(s3), [u] "+r"(w0), [v] "+r"(w1), [x] "+r"(xq)
                     : [k] "r"(k)
                     : "q0", "q1", "memory", "r14");
    sums[0] = s0;
    sums[1] = s3;
}
#else
/* The asm's arithmetic in intrinsics: two channels at `windows` windows x[i] whose 16-byte chunks are
 * `step` bytes apart (48: interleaved; 16: read where they lie), sums `row` words apart. */
static void pair_windows(const int8_t *w0, const int8_t *w1, const int8_t *const x[3], int32_t step,
                         int32_t k, const int32_t *corr, int32_t *sums, int32_t row, int32_t windows)
{
    const int32_t start[2] = {corr[0], corr[1]}; /* (corr may lie in the first row of sums) */
    for (int32_t b = 0; b < 2; ++b) {
        for (int32_t i = 0; i < windows; ++i) {
            int32_t acc = start[b];
            const int8_t *w = b == 0 ? w0 : w1;
            const int8_t *xi = x[i];
            for (int32_t r = k; r > 0; r -= 16, w += 16, xi += step) {
                const mve_pred16_t pr = vctp8q((uint32_t)r);
                acc = vmladavaq_s8(acc, vldrbq_z_s8(xi, pr), vldrbq_z_s8(w, pr));
            }
            sums[i * row + b] = acc;
        }
    }
}

static void interleaved(const int8_t *w0, const int8_t *w1, const int8_t *xq, int32_t k,
                        const int32_t *corr, int32_t *sums, int32_t row, int32_t windows)
{
    const int8_t *const x[3] = {xq, xq + 16, xq + 32};
    pair_windows(w0, w1, x, 48, k, corr, sums, row, windows);
}

static void pair_mve(const int8_t *w0, const int8_t *w1, const int8_t *xq, int32_t k,
                     const int32_t *corr, int32_t *sums, int32_t row)
{
    interleaved(w0, w1, xq, k, corr, sums, row, 3);
}

static void pair2_mve(const int8_t *w0, const int8_t *w1, const int8_t *xq, int32_t k,
                      const int32_t *corr, int32_t *sums, int32_t row)
{
    interleaved(w0, w1, xq, k, corr, sums, row, 2);
}

static void pair1_mve(const int8_t *w0, const int8_t *w1, const int8_t *xq, int32_t k,
                      const int32_t *corr, int32_t *sums)
{
    interleaved(w0, w1, xq, k, corr, sums, 0, 1);
}
#endif

/* Two channels (weights w0, w1; corrections corr[0..1]) at windows x0, x1 and x2 read where they lie
 * (the lean call's direct groups, MCU_CONV_MVE_LEAN_DIRECT): o[0..1] of each row (rows `row` words
 * apart), 12 instructions per 96 products as pair_mve. direct2_mve: windows x0 and x1 only (9 per
 * 64; x1 == x0 for one window, its second row not written). */
#if MCU_CONV_MVE_ASM
MCU_CONV_INLINE void direct3_mve(const int8_t *w0, const int8_t *w1, const int8_t *x0,
                                 const int8_t *x1, const int8_t *x2, int32_t k, const int32_t *corr,
                                 int32_t *o, int32_t row)
{
    int32_t s0 = corr[0], s1, s2, s3 = corr[1], s4, s5;
    register int32_t n __asm__("lr") = k; /* (twelve registers besides: k in the loop's own) */
    __asm__ volatile("wlstp.8 lr, lr, 1f\n\t"
                     MCU_CONV_SPLAT3
                     "2:\n\t"
                     "vldrb.8 q0, [%[u]], #16\n\t"
                     "vldrb.8 q1, [%[a]], #16\n\t"
                     "vldrb.8 q2, [%[b]], #16\n\t"
                     "vldrb.8 q3, [%[d]], #16\n\t"
                     MCU_CONV_MAC3
                     "1:\n"
                     : [s0] "+Te"(s0), [s1] "=&Te"(s1), [s2] "=&Te"(s2), [s3] "+Te"(s3),
                       [s4] "=&Te"(s4), [s5] "=&Te"(s5), [u] "+r"(w0), [v] "+r"(w1), [a] "+r"(x0),
                       [b] "+r"(x1), [d] "+r"(x2), [n] "+r"(n)
                     :
                     : "q0", "q1", "q2", "q3", "memory");
    o[0] = s0;
    o[1] = s3;
    o[row] = s1;
    o[row + 1] = s4;
    o[2 * row] = s2;
    o[2 * row + 1] = s5;
}

MCU_CONV_INLINE void direct2_mve(const int8_t *w0, const int8_t *w1, const int8_t *x0,
                                 const int8_t *x1, int32_t k, const int32_t *corr, int32_t *o,
                                 int32_t row, int32_t count)
{
    int32_t s0 = corr[0], s1, s3 = corr[1], s4;
    __asm__ volatile("wlstp.8 lr, %[k], 1f\n\t"
                     MCU_CONV_SPLAT2
                     "2:\n\t"
                     "vldrb.8 q0, [%[u]], #16\n\t"
                     "vldrb.8 q1, [%[a]], #16\n\t"
                     "vldrb.8 q2, [%[b]], #16\n\t"
                     MCU_CONV_MAC2
                     "1:\n"
                     : [s0] "+Te"(s0), [s1] "=&Te"(s1), [s3] "+Te"(s3), [s4] "=&Te"(s4),
                       [u] "+r"(w0), [v] "+r"(w1), [a] "+r"(x0), [b] "+r"(x1)
                     : [k] "r"(k)
                     : "q0", "q1", "q2", "memory", "r14");
    o[0] = s0;
    o[1] = s3;
    if (count == 2) {
        o[row] = s1;
        o[row + 1] = s4;
    }
}
#else
static void direct3_mve(const int8_t *w0, const int8_t *w1, const int8_t *x0, const int8_t *x1,
                        const int8_t *x2, int32_t k, const int32_t *corr, int32_t *o, int32_t row)
{
    const int8_t *const x[3] = {x0, x1, x2};
    pair_windows(w0, w1, x, 16, k, corr, o, row, 3);
}

static void direct2_mve(const int8_t *w0, const int8_t *w1, const int8_t *x0, const int8_t *x1,
                        int32_t k, const int32_t *corr, int32_t *o, int32_t row, int32_t count)
{
    const int8_t *const x[3] = {x0, x1, x1};
    pair_windows(w0, w1, x, 16, k, corr, o, row, count);
}
#endif

/* pair_mve at `windows` (3, 2 or 1: a constant where inlined) of the interleaved windows. */
MCU_CONV_INLINE void pair_at(const int8_t *w0, const int8_t *w1, const int8_t *xq, int32_t k,
                             const int32_t *corr, int32_t *sums, int32_t row, int32_t windows)
{
    if (windows == 3) {
        pair_mve(w0, w1, xq, k, corr, sums, row);
    } else if (windows == 2) {
        pair2_mve(w0, w1, xq, k, corr, sums, row);
    } else {
        pair1_mve(w0, w1, xq, k, corr, sums);
    }
}

/* The block's channels at the first `windows` of the interleaved windows (rows of sums `row` words
 * apart), a pair at a time (an odd last channel with the one before it, or alone where it is the
 * only one or the corrections lie in the first row of sums: lift_group's, the one before it
 * written already). Three windows: one function per row length (an immediate in pair_mve);
 * a block's last pass of two or one position: pass_two, pass_one. */
MCU_CONV_INLINE void pass_rows(const mcu_conv_block_t *c, const int8_t *xq, int32_t *sums,
                               int32_t row, int32_t windows)
{
    const int32_t k = c->filter_size;
    const int32_t n = c->oc_end - c->oc_base;
    const int32_t *corr = c->corr;
    const int8_t *w = c->filter + c->oc_base * k;
    for (int32_t m = n >> 1; m > 0; --m) {
        pair_at(w, w + k, xq, k, corr, sums, row, windows);
        w += 2 * k;
        corr += 2;
        sums += 2;
    }
    if ((n & 1) != 0) {
        if (n > 1 && corr != sums) { /* (both moved on alike: corr lies in sums where they meet) */
            pair_at(w - k, w, xq, k, corr - 1, sums - 1, row, windows);
        } else {
            const int32_t lone[2] = {corr[0], corr[0]}; /* (corr may be the params' kernel_sums) */
            pair_at(w, w, xq, k, lone, sums, row, windows); /* sums[1] unused */
        }
    }
}

#define MCU_CONV_PASS(ROW)                                                                         \
    MCU_CONV_NOINLINE static void pass_##ROW(const mcu_conv_block_t *c, const int8_t *xq,        \
                                             int32_t *sums)                                       \
    {                                                                                              \
        pass_rows(c, xq, sums, ROW, 3);                                                            \
    }
MCU_CONV_PASS(8)
MCU_CONV_PASS(16)
MCU_CONV_PASS(32)
MCU_CONV_PASS(64)

MCU_CONV_NOINLINE static void pass_two(const mcu_conv_block_t *c, const int8_t *xq, int32_t *sums,
                                       int32_t row)
{
    pass_rows(c, xq, sums, row, 2);
}

MCU_CONV_NOINLINE static void pass_one(const mcu_conv_block_t *c, const int8_t *xq, int32_t *sums)
{
    pass_rows(c, xq, sums, 0, 1);
}

/* Words between rows of sums for a block of n channels (n <= MCU_CONV_MVE_OC_BLOCK). */
static int32_t sums_row(int32_t n)
{
    return n <= 8 ? 8 : n <= 16 ? 16 : n <= 32 ? 32 : 64;
}

MCU_CONV_INLINE void pass_mve(const mcu_conv_block_t *c, const int8_t *xq, int32_t *sums, int32_t row,
                     int32_t count)
{
    if (count < 3) {
        if (count == 2) {
            pass_two(c, xq, sums, row);
        } else {
            pass_one(c, xq, sums);
        }
        return;
    }
    switch (row) {
    case 8:
        pass_8(c, xq, sums);
        break;
    case 16:
        pass_16(c, xq, sums);
        break;
    case 32:
        pass_32(c, xq, sums);
        break;
    default:
        pass_64(c, xq, sums);
        break;
    }
}

/* The block's channels at `count` windows x[0..count-1] read where they lie (the lean call's direct
 * groups), their sums `row` words apart: a pair at a time, an odd last channel as pass_rows's. One
 * function per row length and count of three or fewer (immediates in the stores). */
MCU_CONV_INLINE void pass_direct_rows(const mcu_conv_block_t *c, const int8_t *const x[3],
                                      int32_t *sums, int32_t row, int32_t count)
{
    const int32_t k = c->filter_size;
    const int32_t n = c->oc_end - c->oc_base;
    const int32_t *corr = c->corr;
    const int8_t *w = c->filter + c->oc_base * k;
    const int8_t *const x0 = x[0];
    const int8_t *const x1 = x[count > 1 ? 1 : 0];
    const int8_t *const x2 = x[2];
    for (int32_t m = n >> 1; m > 0; --m) {
        if (count == 3) {
            direct3_mve(w, w + k, x0, x1, x2, k, corr, sums, row);
        } else {
            direct2_mve(w, w + k, x0, x1, k, corr, sums, row, count);
        }
        w += 2 * k;
        corr += 2;
        sums += 2;
    }
    if ((n & 1) != 0) {
        /* with the one before it, or alone where it is the only one or corr lies in sums (pass_rows) */
        const int32_t lone[2] = {corr[0], corr[0]};
        const int pair = n > 1 && corr != sums;
        const int8_t *const w0 = pair ? w - k : w;
        const int32_t *const pc = pair ? corr - 1 : lone;
        int32_t *const o = pair ? sums - 1 : sums; /* alone: its second column unused */
        if (count == 3) {
            direct3_mve(w0, w, x0, x1, x2, k, pc, o, row);
        } else {
            direct2_mve(w0, w, x0, x1, k, pc, o, row, count);
        }
    }
}

#define MCU_CONV_DIRECT(ROW, COUNT)                                                                \
    MCU_CONV_NOINLINE static void direct_##ROW##_##COUNT(const mcu_conv_block_t *c,              \
                                                         const int8_t *const x[3], int32_t *sums) \
    {                                                                                              \
        pass_direct_rows(c, x, sums, ROW, COUNT);                                                  \
    }
MCU_CONV_DIRECT(8, 3)
MCU_CONV_DIRECT(16, 3)
MCU_CONV_DIRECT(8, 2)
MCU_CONV_DIRECT(16, 2)

/* pass_direct_rows for a pass of one position. */
MCU_CONV_NOINLINE static void direct_one(const mcu_conv_block_t *c, const int8_t *const x[3],
                                         int32_t *sums)
{
    pass_direct_rows(c, x, sums, 8, 1);
}

/* The direct groups' rows are 8 or 16 words apart (groups of MCU_CONV_MVE_LEAN_GROUP or _WIDE). */
static void pass_direct(const mcu_conv_block_t *c, const int8_t *const x[3], int32_t *sums,
                        int32_t row, int32_t count)
{
    if (count == 1) {
        direct_one(c, x, sums);
    } else if (count == 2) {
        if (row == 8) {
            direct_8_2(c, x, sums);
        } else {
            direct_16_2(c, x, sums);
        }
    } else if (row == 8) {
        direct_8_3(c, x, sums);
    } else {
        direct_16_3(c, x, sums);
    }
}

/* requant_rows with the residual Add of mcu_conv2d_add_s8 (c->fuse): each element's skip value read
 * just before the element is written (the output may lie exactly on the skip). */
MCU_CONV_NOINLINE static void requant_rows_fused(const mcu_conv_block_t *c, const int32_t *sums,
                                                 int32_t row, int8_t *out, int32_t count)
{
    const mcu_conv_params_t *const p = c->params;
    const mcu_conv_fuse_t *const f = c->fuse;
    const mcu_conv_fuse4_t v4 = {
        vdupq_n_s32(f->shift1),     vdupq_n_s32(f->conv_mult),  vdupq_n_s32(f->skip_mult),
        vdupq_n_s32(f->out_mult),   vdupq_n_s32(-f->conv_exp),  vdupq_n_s32(-f->skip_exp),
        vdupq_n_s32(-f->out_exp),   vdupq_n_s32(f->act_min),    vdupq_n_s32(f->act_max),
        f->conv_offset,             f->skip_offset,             f->out_offset};
    const int32x4_t lo = vdupq_n_s32(p->q.act_min);
    const int32x4_t hi = vdupq_n_s32(p->q.act_max);
    const int32_t n = c->oc_end - c->oc_base;
    const int32_t *const mult = p->multiplier + c->oc_base;
    const int32_t *const shift = p->shift + c->oc_base;
    const int32_t *const base = c->base;
    const int8_t *const skip0 = f->skip - (f->output - out);
    for (int32_t i = 0; i < count; ++i) {
        const int32_t *const s = sums + i * row;
        int8_t *const o = out + i * p->output.c + c->oc_base;
        const int8_t *const skip = skip0 + i * p->output.c + c->oc_base;
        int32_t j = 0;
        for (; j + 4 <= n; j += 4) {
            int32x4_t v = mcu_requant4(vld1q_s32(s + j), vld1q_s32(mult + j), vld1q_s32(base + j),
                                   vld1q_s32(shift + j));
            v = vminq_s32(vmaxq_s32(v, lo), hi);
            vstrbq_s32(o + j, mcu_conv_fuse4(&v4, v, vldrbq_s32(skip + j)));
        }
        if (j < n) {
            const mve_pred16_t pr = vctp32q((uint32_t)(n - j));
            int32x4_t v = mcu_requant4(vldrwq_z_s32(s + j, pr), vldrwq_z_s32(mult + j, pr),
                                   vldrwq_z_s32(base + j, pr), vldrwq_z_s32(shift + j, pr));
            v = vminq_s32(vmaxq_s32(v, lo), hi);
            vstrbq_p_s32(o + j, mcu_conv_fuse4(&v4, v, vldrbq_z_s32(skip + j, pr)), pr);
        }
    }
}

/* Rows of n sums requantized (mcu_requant4), clamped to [lo, hi] and stored, four channels per
 * vector: requant_row one row (s, o), requant_rows3 three (s + i * row words, o + i * o_step
 * bytes) and requant_rows2 two, each vector of the channels' constants loaded once for all rows
 * (vstrb.32: the outputs in low registers). */
#if MCU_CONV_MVE_ASM
/* One row's four sums from %[S] requantized with the constants in q2 (multiplier), q3 (base) and
 * q4 (shift), clamped and stored at %[O]. */
#define MCU_CONV_RQ4(S, O)                                                                         \
    "vldrw.u32 q0, [%[" S "]], #16\n\t"                                                             \
    "vqrdmulh.s32 q1, q0, q2\n\t"                                                                  \
    "vshr.s32 q0, q0, #31\n\t"                                                                     \
    "vadd.i32 q1, q1, q3\n\t"                                                                      \
    "vadd.i32 q1, q1, q0\n\t"                                                                      \
    "vshl.s32 q1, q1, q4\n\t"                                                                      \
    "vmax.s32 q1, q1, %q[lo]\n\t"                                                                  \
    "vmin.s32 q1, q1, %q[hi]\n\t"                                                                  \
    "vstrb.32 q1, [%[" O "]], #4\n\t"
#define MCU_CONV_RQ_CONSTANTS                                                                      \
    "vldrw.u32 q2, [%[m]], #16\n\t"                                                                \
    "vldrw.u32 q3, [%[b]], #16\n\t"                                                                \
    "vldrw.u32 q4, [%[sh]], #16\n\t"

MCU_CONV_INLINE void requant_row(const int32_t *s, const int32_t *mult, const int32_t *base,
                                 const int32_t *shift, int8_t *o, int32_t n, int32x4_t lo,
                                 int32x4_t hi)
{
    __asm__ volatile("dlstp.32 lr, %[n]\n"
                     "1:\n\t"
                     MCU_CONV_RQ_CONSTANTS
                     MCU_CONV_RQ4("s", "o")
                     "letp lr, 1b\n"
                     : [s] "+r"(s), [m] "+r"(mult), [b] "+r"(base), [sh] "+r"(shift), [o] "+l"(o)
                     : [n] "r"(n), [lo] "w"(lo), [hi] "w"(hi)
                     : "q0", "q1", "q2", "q3", "q4", "memory", "r14");
}

MCU_CONV_INLINE void requant_rows3(const int32_t *s, int32_t row, const int32_t *mult,
                                   const int32_t *base, const int32_t *shift, int8_t *o,
                                   int32_t o_step, int32_t n, int32x4_t lo, int32x4_t hi)
{
    const int32_t *s1 = s + row;
    const int32_t *s2 = s + 2 * row;
    int8_t *o1 = o + o_step;
    int8_t *o2 = o + 2 * o_step;
    __asm__ volatile("dlstp.32 lr, %[n]\n"
                     "1:\n\t"
                     MCU_CONV_RQ_CONSTANTS
                     MCU_CONV_RQ4("s", "o") MCU_CONV_RQ4("s1", "o1") MCU_CONV_RQ4("s2", "o2")
                     "letp lr, 1b\n"
                     : [s] "+r"(s), [s1] "+r"(s1), [s2] "+r"(s2), [m] "+r"(mult), [b] "+r"(base),
                       [sh] "+r"(shift), [o] "+l"(o), [o1] "+l"(o1), [o2] "+l"(o2)
                     : [n] "r"(n), [lo] "w"(lo), [hi] "w"(hi)
                     : "q0", "q1", "q2", "q3", "q4", "memory", "r14");
}

MCU_CONV_INLINE void requant_rows2(const int32_t *s, int32_t row, const int32_t *mult,
                                   const int32_t *base, const int32_t *shift, int8_t *o,
                                   int32_t o_step, int32_t n, int32x4_t lo, int32x4_t hi)
{
    const int32_t *s1 = s + row;
    int8_t *o1 = o + o_step;
    __asm__ volatile("dlstp.32 lr, %[n]\n"
                     "1:\n\t"
                     MCU_CONV_RQ_CONSTANTS
                     MCU_CONV_RQ4("s", "o") MCU_CONV_RQ4("s1", "o1")
                     "letp lr, 1b\n"
                     : [s] "+r"(s), [s1] "+r"(s1), [m] "+r"(mult), [b] "+r"(base),
                       [sh] "+r"(shift), [o] "+l"(o), [o1] "+l"(o1)
                     : [n] "r"(n), [lo] "w"(lo), [hi] "w"(hi)
                     : "q0", "q1", "q2", "q3", "q4", "memory", "r14");
}
#else
static void requant_row(const int32_t *s, const int32_t *mult, const int32_t *base,
                        const int32_t *shift, int8_t *o, int32_t n, int32x4_t lo, int32x4_t hi)
{
    for (; n > 0; n -= 4, s += 4, mult += 4, base += 4, shift += 4, o += 4) {
        const mve_pred16_t pr = vctp32q((uint32_t)n);
        const int32x4_t v = mcu_requant4(vldrwq_z_s32(s, pr), vldrwq_z_s32(mult, pr),
                                     vldrwq_z_s32(base, pr), vldrwq_z_s32(shift, pr));
        vstrbq_p_s32(o, vminq_s32(vmaxq_s32(v, lo), hi), pr);
    }
}

static void requant_rows_n(const int32_t *s, int32_t row, const int32_t *mult,
                           const int32_t *base, const int32_t *shift, int8_t *o, int32_t o_step,
                           int32_t n, int32x4_t lo, int32x4_t hi, int32_t count)
{
    for (int32_t i = 0; i < count; ++i) {
        requant_row(s + i * row, mult, base, shift, o + i * o_step, n, lo, hi);
    }
}

static void requant_rows3(const int32_t *s, int32_t row, const int32_t *mult, const int32_t *base,
                          const int32_t *shift, int8_t *o, int32_t o_step, int32_t n,
                          int32x4_t lo, int32x4_t hi)
{
    requant_rows_n(s, row, mult, base, shift, o, o_step, n, lo, hi, 3);
}

static void requant_rows2(const int32_t *s, int32_t row, const int32_t *mult, const int32_t *base,
                          const int32_t *shift, int8_t *o, int32_t o_step, int32_t n,
                          int32x4_t lo, int32x4_t hi)
{
    requant_rows_n(s, row, mult, base, shift, o, o_step, n, lo, hi, 2);
}
#endif

/* The sums of windows 0 .. count - 1 (rows `row` words apart) requantized, clamped and stored at
 * out + i * out_c + oc_base. */
MCU_CONV_NOINLINE static void requant_rows(const mcu_conv_block_t *c, const int32_t *sums,
                                           int32_t row, int8_t *out, int32_t count)
{
    const mcu_conv_params_t *const p = c->params;
    const int32x4_t lo = vdupq_n_s32(p->q.act_min);
    const int32x4_t hi = vdupq_n_s32(p->q.act_max);
    const int32_t *const mult = p->multiplier + c->oc_base;
    const int32_t *const shift = p->shift + c->oc_base;
    const int32_t n = c->oc_end - c->oc_base;
    int8_t *const o = out + c->oc_base;
    if (count == 3) {
        requant_rows3(sums, row, mult, c->base, shift, o, p->output.c, n, lo, hi);
    } else if (count == 2) {
        requant_rows2(sums, row, mult, c->base, shift, o, p->output.c, n, lo, hi);
    } else {
        requant_row(sums, mult, c->base, shift, o, n, lo, hi);
    }
}

/* The lean call's direct groups (MCU_CONV_MVE_LEAN_DIRECT) at `count` windows x[0..count-1], the
 * corrections the params' kernel_sums (c->corr) and no residual Add: each group of `group` channels
 * met (pass_direct_rows, its sums `row` words apart) and requantized into out (requant_rows's
 * rows) in turn, in one function per (row, count): no call and no reload of the constants per
 * group. */
MCU_CONV_INLINE void direct_groups(const mcu_conv_block_t *c, const int8_t *const x[3],
                                   int32_t *sums, int8_t *out, int32_t group, int32_t row,
                                   int32_t count)
{
    const mcu_conv_params_t *const p = c->params;
    const int32x4_t lo = vdupq_n_s32(p->q.act_min);
    const int32x4_t hi = vdupq_n_s32(p->q.act_max);
    const int32_t out_c = p->output.c;
    mcu_conv_block_t g = *c;
    for (g.oc_base = c->oc_base; g.oc_base < c->oc_end; g.oc_base = g.oc_end) {
        g.oc_end = c->oc_end - g.oc_base < group ? c->oc_end : g.oc_base + group;
        g.base = c->base + (g.oc_base - c->oc_base);
        g.corr = c->corr + (g.oc_base - c->oc_base);
        pass_direct_rows(&g, x, sums, row, count);
        const int32_t *const mult = p->multiplier + g.oc_base;
        const int32_t *const shift = p->shift + g.oc_base;
        const int32_t n = g.oc_end - g.oc_base;
        int8_t *const o = out + g.oc_base;
        if (count == 3) {
            requant_rows3(sums, row, mult, g.base, shift, o, out_c, n, lo, hi);
        } else if (count == 2) {
            requant_rows2(sums, row, mult, g.base, shift, o, out_c, n, lo, hi);
        } else {
            requant_row(sums, mult, g.base, shift, o, n, lo, hi);
        }
    }
}

#define MCU_CONV_DIRECT_GROUPS(ROW, COUNT)                                                         \
    MCU_CONV_NOINLINE static void direct_groups_##ROW##_##COUNT(                                   \
        const mcu_conv_block_t *c, const int8_t *const x[3], int32_t *sums, int8_t *out)           \
    {                                                                                              \
        direct_groups(c, x, sums, out, ROW, ROW, COUNT);                                           \
    }
MCU_CONV_DIRECT_GROUPS(8, 3)
MCU_CONV_DIRECT_GROUPS(16, 3)
MCU_CONV_DIRECT_GROUPS(8, 2)
MCU_CONV_DIRECT_GROUPS(16, 2)
MCU_CONV_DIRECT_GROUPS(8, 1)
MCU_CONV_DIRECT_GROUPS(16, 1)

/* direct_groups for a pass of `count` windows, groups of `group` channels (8 or 16: their rows). */
static void direct_pass(const mcu_conv_block_t *c, const int8_t *const x[3], int32_t *sums,
                        int8_t *out, int32_t group, int32_t count)
{
    if (group == 8) {
        if (count == 3) {
            direct_groups_8_3(c, x, sums, out);
        } else if (count == 2) {
            direct_groups_8_2(c, x, sums, out);
        } else {
            direct_groups_8_1(c, x, sums, out);
        }
    } else if (count == 3) {
        direct_groups_16_3(c, x, sums, out);
    } else if (count == 2) {
        direct_groups_16_2(c, x, sums, out);
    } else {
        direct_groups_16_1(c, x, sums, out);
    }
}

/* n bytes from src, 16 at a time, to dst + step * j for chunk j (step 16: a copy; 48: window i
 * of the interleaved buffer, dst = xq + 16 i, or further on by whole chunks); fill_mve: n
 * copies of v's bytes. */
#if MCU_CONV_MVE_ASM
MCU_CONV_INLINE void copy_mve(int8_t *dst, const int8_t *src, int32_t n, int32_t step)
{
    __asm__ volatile("wlstp.8 lr, %[n], 1f\n"
                     "2:\n\t"
                     "vldrb.8 q0, [%[s]], #16\n\t"
                     "vstrb.8 q0, [%[d]], %[step]\n\t"
                     "letp lr, 2b\n"
                     "1:\n"
                     : [s] "+r"(src), [d] "+r"(dst)
                     : [n] "r"(n), [step] "n"(step)
                     : "q0", "memory", "r14");
}
#else
static void copy_mve(int8_t *dst, const int8_t *src, int32_t n, int32_t step)
{
    for (; n > 0; n -= 16, dst += step, src += 16) {
        const mve_pred16_t pr = vctp8q((uint32_t)n);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, pr), pr);
    }
}
#endif

static inline void fill_mve(int8_t *dst, int8x16_t v, int32_t n)
{
    for (; n > 0; n -= 16, dst += 16) {
        vstrbq_p_s8(dst, v, vctp8q((uint32_t)n));
    }
}

/* The window into patch, with predicated vector copies (padding taps: the input zero point); rows of
 * taps of at most 16 bytes through mcu_conv_gather_rows_mve. */
static void gather_mve(const mcu_conv_block_t *c, const mcu_conv_window_t *win, int8_t *patch)
{
    if (mcu_conv_gather_rows_mve(c, win, patch)) {
        return;
    }
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_c = p->input.c;
    const int32_t k_w = p->filter.w;
    const int8x16_t pad = vdupq_n_s8((int8_t)(-p->q.input_offset));
    const int32_t w_row = k_w * in_c;
    for (int32_t ky = 0; ky < p->filter.h; ++ky) {
        int8_t *const dst = patch + ky * w_row;
        if (ky < win->ky_begin || ky >= win->ky_end) {
            fill_mve(dst, pad, w_row);
            continue;
        }
        const int8_t *const src = win->in_batch + (win->y0 + ky * p->dilation_h) * c->in_row;
        fill_mve(dst, pad, win->kx_begin * in_c);
        if (p->dilation_w == 1) {
            copy_mve(dst + win->kx_begin * in_c, src + (win->x0 + win->kx_begin) * in_c,
                     (win->kx_end - win->kx_begin) * in_c, 16);
        } else {
            for (int32_t kx = win->kx_begin; kx < win->kx_end; ++kx) {
                copy_mve(dst + kx * in_c, src + (win->x0 + kx * p->dilation_w) * in_c, in_c, 16);
            }
        }
        fill_mve(dst + win->kx_end * in_c, pad, (k_w - win->kx_end) * in_c);
    }
}

/* The window of output position (b, y, x) gathered into patch (padding taps holding the input zero
 * point); returns patch. */
MCU_CONV_NOINLINE static const int8_t *gather_at(const mcu_conv_block_t *c, const int8_t *input,
                                                 int32_t b, int32_t y, int32_t x, int8_t *patch)
{
    const mcu_conv_params_t *const p = c->params;
    mcu_conv_window_t win;
    win.in_batch = input + b * p->input.h * c->in_row;
    win.y0 = y * p->stride_h - p->pad_top;
    win.x0 = x * p->stride_w - p->pad_left;
    valid_taps(win.y0, p->dilation_h, p->filter.h, p->input.h, &win.ky_begin, &win.ky_end);
    valid_taps(win.x0, p->dilation_w, p->filter.w, p->input.w, &win.kx_begin, &win.kx_end);
    gather_mve(c, &win, patch);
    return patch;
}

/* The window of output position (b, y, x), some tap outside the input or not in whole chunks,
 * gathered into patch, then as window i (xq_i). */
static void gathered_window(const mcu_conv_block_t *c, const int8_t *input, int32_t b, int32_t y,
                            int32_t x, int8_t *xq_i, int8_t *patch)
{
    copy_mve(xq_i, gather_at(c, input, b, y, x, patch), c->filter_size, 48);
}

/* onnxruntime's rounding (the lean call's groups, from the params' kernel_sums and requant_bases):
 * the group's corrections with mcu_requant2_lift's lift, kernel_sums[oc] + 2^29 + 2^(30 - v) (2^v the
 * multiplier's lowest set bit, v >= 7: mcu_requant2_no_tie's lift2 / 2), four channels at a time. */
static void lift_group(const mcu_conv_block_t *g, int32_t *corr)
{
    const mcu_conv_params_t *const p = g->params;
    for (int32_t oc = g->oc_base; oc < g->oc_end; oc += 4) {
        const mve_pred16_t pr = vctp32q((uint32_t)(g->oc_end - oc));
        const int32x4_t m = vldrwq_z_s32(p->multiplier + oc, pr);
        const int32x4_t v = vsubq_s32(vdupq_n_s32(31), vclzq_s32(vandq_s32(m, vnegq_s32(m))));
        const int32x4_t lift = vaddq_n_s32(vshlq_s32(vdupq_n_s32(1 << 30), vnegq_s32(v)), 1 << 29);
        vstrwq_p_s32(corr + (oc - g->oc_base), vaddq_s32(vldrwq_z_s32(p->kernel_sums + oc, pr), lift),
                     pr);
    }
}

/* The pass of `count` windows in xq (NULL: at x[0..count-1], read where they lie) met by the
 * block's channels in groups of `group` (the lean call's; rows of sums `sums_len` words apart), each
 * group's sums requantized into out before the next group's pass (c->corr NULL: each group's
 * corrections lifted by lift_group into the first row of its sums). */
MCU_CONV_NOINLINE static void groups_pass(const mcu_conv_block_t *c, const int8_t *xq,
                                          const int8_t *const x[3], int32_t *sums, int32_t sums_len,
                                          int8_t *out, int32_t count, int32_t group)
{
    mcu_conv_block_t g = *c;
    for (g.oc_base = c->oc_base; g.oc_base < c->oc_end; g.oc_base = g.oc_end) {
        g.oc_end = c->oc_end - g.oc_base < group ? c->oc_end : g.oc_base + group;
        g.base = c->base + (g.oc_base - c->oc_base);
        if (c->corr == NULL) {
            lift_group(&g, sums); /* in the first row of sums: each read before it is written */
            g.corr = sums;
        } else {
            g.corr = c->corr + (g.oc_base - c->oc_base);
        }
        if (xq != NULL) {
            pass_mve(&g, xq, sums, sums_len, count);
        } else {
            pass_direct(&g, x, sums, sums_len, count);
        }
        if (c->fuse != NULL) {
            requant_rows_fused(&g, sums, sums_len, out, count);
        } else {
            requant_rows(&g, sums, sums_len, out, count);
        }
    }
}

/* One block of output channels (c->corr, c->base filled) at every position, three at a time (the
 * last one or two leave the other windows as they were and keep only their own rows). Windows
 * inside the input are read from it: one run of it (KH = 1, or 1x1), or KH runs (dilation_w =
 * 1), straight into the buffer when each run is whole 16-byte chunks, else through patch; the
 * others are gathered. group: the channels a pass meets and requantizes at a time (the block's,
 * or fewer: the lean call's groups, their sums in fewer bytes); c->corr NULL: each group's lifted
 * from the params' kernel_sums (lift_group); direct (xq NULL): the lean call's direct groups, `per` (2 or 3)
 * positions a pass, each window read where it lies where it is one run inside the input, else
 * gathered into its own K bytes at patch + i * K. */
MCU_CONV_INLINE void block_mve(const mcu_conv_block_t *c, const int8_t *input, int8_t *output,
                               int32_t *sums, int8_t *xq, int8_t *patch, int32_t group, int32_t per,
                               const int direct)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t out_h = p->output.h;
    const int32_t out_w = p->output.w;
    const int32_t in_c = p->input.c;
    const int32_t k_h = p->filter.h;
    const int32_t run = p->filter.w * in_c;
    const int one_run = k_h == 1 && (p->filter.w == 1 || p->dilation_w == 1);
    const int by_rows = !one_run && p->dilation_w == 1;
    const int whole_chunks = (run & 15) == 0;
    const int32_t row_step = p->dilation_h * c->in_row;
    const int32_t x_step = p->stride_w * in_c;
    int32_t y_first, y_end, x_first, x_end;
    mcu_inside_positions(p->pad_top, p->stride_h, p->dilation_h, k_h, p->input.h, out_h, &y_first,
                         &y_end);
    mcu_inside_positions(p->pad_left, p->stride_w, p->dilation_w, p->filter.w, p->input.w, out_w,
                         &x_first, &x_end);
    if (!one_run && !by_rows) {
        x_end = x_first; /* every window gathered */
    }
    const int32_t positions = p->input.n * out_h * out_w;
    const int32_t n = c->oc_end - c->oc_base;
    const int32_t sums_len = sums_row(group < n ? group : n);
    const int grouped = group < n || c->corr == NULL || direct;
    int32_t b = 0, y = 0, x = 0; /* the next position */
    /* offset of the window of (b, y, 0) in the input (negative above and left of it) */
    int32_t row = -p->pad_top * c->in_row - p->pad_left * in_c;
    const int8_t *at[3] = {input, input, input}; /* direct: the windows of a pass */
    for (int32_t n0 = 0; n0 < positions; n0 += per) {
        const int32_t count = positions - n0 < per ? positions - n0 : per;
        for (int32_t i = 0; i < count; ++i) {
            int8_t *const xq_i = direct ? NULL : xq + 16 * i;
            const int inside = x >= x_first && x < x_end && y >= y_first && y < y_end;
            if (direct) {
                at[i] = inside && one_run ? input + row + x * x_step
                                          : gather_at(c, input, b, y, x, patch + i * c->filter_size);
            } else if (inside) {
                const int8_t *const src = input + row + x * x_step;
                if (one_run) {
                    copy_mve(xq_i, src, run, 48);
                } else if (whole_chunks) {
                    for (int32_t ky = 0; ky < k_h; ++ky) {
                        copy_mve(xq_i + 3 * ky * run, src + ky * row_step, run, 48);
                    }
                } else {
                    for (int32_t ky = 0; ky < k_h; ++ky) {
                        copy_mve(patch + ky * run, src + ky * row_step, run, 16);
                    }
                    copy_mve(xq_i, patch, c->filter_size, 48);
                }
            } else {
                gathered_window(c, input, b, y, x, xq_i, patch);
            }
            if (++x == out_w) {
                x = 0;
                if (++y == out_h) {
                    y = 0;
                    ++b;
                }
                row = (b * p->input.h + y * p->stride_h - p->pad_top) * c->in_row -
                      p->pad_left * in_c;
            }
        }
        if (direct && c->corr != NULL && c->fuse == NULL) {
            direct_pass(c, at, sums, output + n0 * p->output.c, sums_len, count);
            continue;
        }
        if (grouped) {
            groups_pass(c, xq, at, sums, sums_len, output + n0 * p->output.c, count, group);
            continue;
        }
        pass_mve(c, xq, sums, sums_len, count);
        if (c->fuse != NULL) {
            requant_rows_fused(c, sums, sums_len, output + n0 * p->output.c, count);
        } else {
            requant_rows(c, sums, sums_len, output + n0 * p->output.c, count);
        }
    }
}

/* block_mve with its windows copied (three positions a pass), and the lean call's direct groups
 * (xq NULL; `per` positions a pass): one function each, so that neither tests the other's case per
 * window. */
MCU_CONV_NOINLINE static void conv_block_mve(const mcu_conv_block_t *c, const int8_t *input,
                                             int8_t *output, int32_t *sums, int8_t *xq,
                                             int8_t *patch, int32_t group)
{
    block_mve(c, input, output, sums, xq, patch, group, 3, 0);
}

MCU_CONV_NOINLINE static void direct_block_mve(const mcu_conv_block_t *c, const int8_t *input,
                                               int8_t *output, int32_t *sums, int8_t *patch,
                                               int32_t group, int32_t per)
{
    block_mve(c, input, output, sums, NULL, patch, group, per, 1);
}

void mcu_conv2d_s8_mve_block(const mcu_conv_block_t *c, const int8_t *input, int8_t *output,
                             int32_t *sums, int8_t *xq, int8_t *patch)
{
    conv_block_mve(c, input, output, sums, xq, patch, c->oc_end - c->oc_base);
}

/* The sum of n int8 (VADDVA, 16 per instruction). */
#if MCU_CONV_MVE_ASM
MCU_CONV_INLINE int32_t sum_mve(const int8_t *w, int32_t n)
{
    int32_t sum = 0;
    __asm__ volatile("wlstp.8 lr, %[n], 1f\n"
                     "2:\n\t"
                     "vldrb.8 q0, [%[w]], #16\n\t"
                     "vaddva.s8 %[sum], q0\n\t"
                     "letp lr, 2b\n"
                     "1:\n"
                     : [sum] "+Te"(sum), [w] "+r"(w)
                     : [n] "r"(n)
                     : "q0", "memory", "r14");
    return sum;
}
#else
static int32_t sum_mve(const int8_t *w, int32_t n)
{
    return mcu_sum_s8(w, n);
}
#endif

/* The block's corrections c->corr[oc - oc_base] = bias[oc] + input_offset * sum of w[oc] (in corr,
 * or the params' build-time kernel_sums themselves) and requantization bases (out of line: its
 * vector registers stay out of the frame the loop nest sits on). */
MCU_CONV_NOINLINE static void block_constants(mcu_conv_block_t *c, const int32_t *bias,
                                              int32_t *corr, int32_t *base)
{
    /* local copies: an int32_t store may alias them, which would reload them per channel */
    const int32_t k = c->filter_size;
    const int8_t *const filter = c->filter;
    const int32_t *const shift = c->params->shift;
    const int32_t *const multiplier = c->params->multiplier;
    const int32_t *const sums = c->params->kernel_sums;
    const mcu_quant_io_t q = c->params->q;
    const int32_t input_offset = q.input_offset;
    const int32_t oc_base = c->oc_base;
    const int32_t oc_end = c->oc_end;
    if (sums != NULL && q.rounding != MCU_ROUND_NEAREST_NO_TIE && c->params->requant_bases != NULL) {
        c->corr = sums + oc_base;
        c->base = c->params->requant_bases + oc_base;
        return;
    }
    if (sums != NULL && q.rounding != MCU_ROUND_NEAREST_NO_TIE) {
        c->corr = sums + oc_base;
        /* mcu_requant2_base four channels at a time: 2^(r - 1) + output_offset * 2^r, r = -shift */
        const int32x4_t offset = vdupq_n_s32(q.output_offset);
        for (int32_t oc = oc_base; oc < oc_end; oc += 4) {
            const mve_pred16_t pr = vctp32q((uint32_t)(oc_end - oc));
            const int32x4_t r = vnegq_s32(vldrwq_z_s32(shift + oc, pr));
            const int32x4_t b = vaddq_s32(vshlq_s32(vdupq_n_s32(1), vsubq_s32(r, vdupq_n_s32(1))),
                                          vshlq_s32(offset, r));
            vstrwq_p_s32(base + (oc - oc_base), b, pr);
        }
        return;
    }
    c->corr = corr;
    if (sums == NULL) {
        for (int32_t oc = oc_base; oc < oc_end; ++oc) {
            const int32_t w_sum = sum_mve(filter + oc * k, k);
            corr[oc - oc_base] = mcu_conv_add_wrap(
                bias != NULL ? bias[oc] : 0, (int32_t)((uint32_t)input_offset * (uint32_t)w_sum));
            base[oc - oc_base] = mcu_requant2_base(shift[oc], q.output_offset);
        }
    }
    if (q.rounding == MCU_ROUND_NEAREST_NO_TIE) { /* onnxruntime's rounding: mcu_requant2_lift */
        for (int32_t oc = oc_base; oc < oc_end; ++oc) {
            int32_t lift2;
            base[oc - oc_base] = mcu_requant2_no_tie(multiplier[oc], shift[oc], q.output_offset, &lift2);
            corr[oc - oc_base] =
                mcu_conv_add_wrap(sums != NULL ? sums[oc] : corr[oc - oc_base], lift2 / 2);
        }
    }
}

void mcu_conv2d_s8_mve(const mcu_conv_params_t *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int lean, void *scratch,
                       const mcu_conv_fuse_t *fuse)
{
    const int32_t out_c = p->output.c;
    mcu_conv_block_t c;
    if (lean && mcu_conv2d_s8_mve_lean_groups(p)) {
        /* every channel a pass, in groups, the constants the params' own: the windows of three
         * positions copied once, then every group's sums and outputs (so it may write over its
         * input as the fast call does) */
        const int no_tie = p->q.rounding == MCU_ROUND_NEAREST_NO_TIE; /* lift_group's corrections */
        mcu_conv_block_init(&c, p, filter, no_tie ? NULL : p->kernel_sums, p->requant_bases, fuse);
        const int32_t k = c.filter_size;
        int8_t *const bytes = (int8_t *)scratch;
        c.oc_base = 0;
        c.oc_end = out_c;
        if ((lean & MCU_CONV_MVE_LEAN_DIRECT) != 0) {
            /* the gathered windows' K bytes each (where some are), then the sums */
            const int32_t per = (lean & MCU_CONV_MVE_LEAN_TWO) != 0 ? 2 : 3;
            const int32_t patches = mcu_conv2d_s8_gathers(p) ? (per * k + 3) & ~3 : 0;
            direct_block_mve(&c, input, output, (int32_t *)(void *)(bytes + patches), bytes,
                             lean & ~(MCU_CONV_MVE_LEAN_DIRECT | MCU_CONV_MVE_LEAN_TWO), per);
            return;
        }
        int32_t *const sums = (int32_t *)(void *)(bytes + 48 * ((k + 15) >> 4));
        conv_block_mve(&c, input, output, sums, bytes, (int8_t *)(void *)sums, lean);
        return;
    }
    const int32_t block = lean ? MCU_CONV_MVE_LEAN_BLOCK : MCU_CONV_MVE_OC_BLOCK;
    const int32_t n = out_c < block ? out_c : block;
    int32_t *const corr = (int32_t *)scratch;
    int32_t *const base = corr + n;
    mcu_conv_block_init(&c, p, filter, corr, base, fuse);
    const int32_t k = c.filter_size;
    int8_t *const xq = (int8_t *)(base + n);
    /* the patch shares the sums' bytes: a window is gathered before the pass writes the sums */
    int32_t *const sums = (int32_t *)(void *)(xq + 48 * ((k + 15) >> 4));
    for (c.oc_base = 0; c.oc_base < out_c; c.oc_base += block) {
        c.oc_end = out_c - c.oc_base < block ? out_c : c.oc_base + block;
        block_constants(&c, bias, corr, base);
        conv_block_mve(&c, input, output, sums, xq, (int8_t *)(void *)sums, c.oc_end - c.oc_base);
    }
}

#endif /* MCU_ISA_NATIVE == MCU_ISA_MVE */
