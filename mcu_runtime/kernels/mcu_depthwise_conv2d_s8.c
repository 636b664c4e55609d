/*
 * mcu_depthwise_conv2d_s8.c - int8 depthwise 2-D convolution (group == C_in), NHWC, filter
 * [1, KH, KW, C_out] with C_out = C_in * depth_multiplier.
 *
 * Semantics of TFLite Micro's per-channel int8 depthwise convolution and CMSIS-NN's
 * arm_depthwise_conv_s8: output channel oc = ic * depth_multiplier + m reads input channel ic
 * only; taps outside the input are skipped (padding with the input zero point).
 *
 * How it is fast and still bit-exact:
 * - Per output position the valid tap ranges [ky_begin, ky_end) x [kx_begin, kx_end) are computed
 *   once; the tap loops hold no bounds checks and no index arithmetic beyond two pointer steps.
 * - __ARM_FEATURE_DSP, depth_multiplier == 1 and realistic requantization (see dsp_eligible):
 *   four channels at a time over the whole output in two passes of two int16 lanes (SXTAB16 adds
 *   the input offset, SMLABB/SMLATT), weights and requantization constants prepared once per call
 *   on the stack, a four-instruction requantization (SMMLAR, see requant2). 3x3 filters with
 *   vertical stride and dilation 1 take output rows in pairs through a block of inline assembly
 *   (each input row loaded once for both rows), windows at the left/right border shifted inward
 *   onto zero weights. Everything else (other filters, strides, C_out % 4 tail) below.
 * - __ARM_FEATURE_MVE, depth_multiplier == 1 and the same realistic requantization (mve_eligible):
 *   eight channels at a time over the whole output, int16 weights and constants prepared once
 *   per call, VMULLB/VMULLT per tap, a five-instruction vector requantization (requant4),
 *   VMOVNB/VMOVNT back into channel order and one narrowing store per position.
 * - Otherwise, with depth_multiplier == 1 channels are processed in blocks, channel-contiguous in
 *   NHWC input and filter alike. Pure C99 on every target (the host included): four channels per
 *   block. __ARM_FEATURE_DSP: four channels from one 4-byte load of input and one of filter per
 *   tap, SMLABB/SMLATT. __ARM_FEATURE_MVE: eight channels per block as int16 lanes,
 *   VMULLB/VMULLT into two int32x4 accumulators (the channel tail predicated), requantized four
 *   lanes at a time.
 * - depth_multiplier > 1 (and the C_out % 4 tail channels) run one output channel at a time over
 *   the same hoisted tap ranges.
 * Each output channel's sum has exactly the reference's terms (integer sums, order only differs).
 */
#include <string.h>

#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(__ARM_BIG_ENDIAN)
#define MCU_DW_MVE 1
#include <arm_mve.h>
#elif defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#define MCU_DW_DSP 1
#include <arm_acle.h>
#endif

/* The valid taps of one output position: `rows` x `cols` taps, tap (j, i) of channel 0 at
 * x + j * x_row + i * x_col in the input and w + j * w_row + i * w_col in the filter. */
typedef struct {
    const int8_t *x;
    const int8_t *w;
    int32_t rows;
    int32_t cols;
    int32_t x_row;
    int32_t x_col;
    int32_t w_row;
    int32_t w_col;
} taps_t;

/* sum over the taps of (x[c] + input_offset) * w[c] for one channel pair (x channel, w channel) */
static int32_t taps1(const taps_t *t, int32_t x_chan, int32_t w_chan, int32_t input_offset)
{
    int32_t acc = 0;
    const int32_t x_col = t->x_col;
    const int32_t w_col = t->w_col;
    const int32_t cols = t->cols;
    const int8_t *x_row = t->x + x_chan;
    const int8_t *w_row = t->w + w_chan;
    for (int32_t j = t->rows; j > 0; --j, x_row += t->x_row, w_row += t->w_row) {
        const int8_t *xp = x_row;
        const int8_t *wp = w_row;
        for (int32_t i = cols; i > 0; --i) {
            acc += ((int32_t)*xp + input_offset) * (int32_t)*wp;
            xp += x_col;
            wp += w_col;
        }
    }
    return acc;
}

#if defined(MCU_DW_MVE)

/* Channels c .. c + 7 (those below `channels`; lanes past it are predicated off): per channel
 * acc = sum over the taps of (x + input_offset) * w + bias, requantized. Inputs and weights are
 * loaded as eight int16 lanes (x + input_offset in [-255, 255]); VMULLB/VMULLT multiply the even
 * and the odd lanes into two int32x4 accumulators (channels c, c+2, .. and c+1, c+3, ..). */
static void channels8(const taps_t *t, int32_t c, int32_t channels,
                      const mcu_depthwise_conv_params_t *params, const int32_t *bias,
                      int8_t *out_px)
{
    const int32_t left = channels - c;
    const mve_pred16_t p = vctp16q((uint32_t)left);
    const int16x8_t offset = vdupq_n_s16((int16_t)params->q.input_offset);
    int32x4_t even = vdupq_n_s32(0);
    int32x4_t odd = vdupq_n_s32(0);
    const int32_t x_col = t->x_col;
    const int32_t w_col = t->w_col;
    const int32_t cols = t->cols;
    const int8_t *x_row = t->x + c;
    const int8_t *w_row = t->w + c;
    for (int32_t j = t->rows; j > 0; --j, x_row += t->x_row, w_row += t->w_row) {
        const int8_t *xp = x_row;
        const int8_t *wp = w_row;
        if (left >= 8) { /* the same loop without predication */
            for (int32_t i = cols; i > 0; --i) {
                const int16x8_t xv = vaddq_s16(vldrbq_s16(xp), offset);
                const int16x8_t wv = vldrbq_s16(wp);
                even = vaddq_s32(even, vmullbq_int_s16(xv, wv));
                odd = vaddq_s32(odd, vmulltq_int_s16(xv, wv));
                xp += x_col;
                wp += w_col;
            }
            continue;
        }
        for (int32_t i = cols; i > 0; --i) {
            const int16x8_t xv = vaddq_s16(vldrbq_z_s16(xp, p), offset);
            const int16x8_t wv = vldrbq_z_s16(wp, p);
            even = vaddq_s32(even, vmullbq_int_s16(xv, wv));
            odd = vaddq_s32(odd, vmulltq_int_s16(xv, wv));
            xp += x_col;
            wp += w_col;
        }
    }
    /* lane k of `even` is channel c + 2k, of `odd` channel c + 2k + 1 */
    const uint32x4_t lanes = vmulq_n_u32(vidupq_n_u32(0, 1), 2u);
    const mve_pred16_t p_even = vctp32q((uint32_t)(left + 1) / 2u);
    const mve_pred16_t p_odd = vctp32q((uint32_t)left / 2u);
    if (bias != NULL) {
        even = vaddq_s32(even, vldrwq_gather_shifted_offset_z_s32(bias + c, lanes, p_even));
        odd = vaddq_s32(odd, vldrwq_gather_shifted_offset_z_s32(bias + c + 1, lanes, p_odd));
    }
    even = output_stage4(
        even, vldrwq_gather_shifted_offset_z_s32(params->multiplier + c, lanes, p_even),
        vldrwq_gather_shifted_offset_z_s32(params->shift + c, lanes, p_even), &params->q);
    vstrbq_scatter_offset_p_s32(out_px + c, lanes, even, p_even);
    odd = output_stage4(
        odd, vldrwq_gather_shifted_offset_z_s32(params->multiplier + c + 1, lanes, p_odd),
        vldrwq_gather_shifted_offset_z_s32(params->shift + c + 1, lanes, p_odd), &params->q);
    vstrbq_scatter_offset_p_s32(out_px + c + 1, lanes, odd, p_odd);
}

/* depth_multiplier == 1: every channel, eight at a time (the last block predicated). Returns the
 * first channel left to the caller (none). */
static int32_t channel_blocks(const taps_t *t, const mcu_depthwise_conv_params_t *params,
                              const int32_t *bias, int8_t *out_px)
{
    const int32_t channels = params->output.c;
    for (int32_t c = 0; c < channels; c += 8) {
        channels8(t, c, channels, params, bias, out_px);
    }
    return channels;
}

#else

#if defined(MCU_DW_DSP)

/* acc[k] = sum over the taps of (x[c + k] + input_offset) * w[c + k], k = 0..3: lanes of
 * (x + input_offset) in [-255, 255] and of w as int16, SMLABB/SMLATT one lane each. */
static void taps4(const taps_t *t, int32_t c, int32_t input_offset, int32_t acc[4])
{
    const int32_t offset2 = (int32_t)(((uint32_t)input_offset & 0xFFFFu) |
                                      ((uint32_t)input_offset << 16));
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    const int32_t x_col = t->x_col;
    const int32_t w_col = t->w_col;
    const int32_t cols = t->cols;
    const int8_t *x_row = t->x + c;
    const int8_t *w_row = t->w + c;
    for (int32_t j = t->rows; j > 0; --j, x_row += t->x_row, w_row += t->w_row) {
        const int8_t *xp = x_row;
        const int8_t *wp = w_row;
        for (int32_t i = cols; i > 0; --i) {
            const uint32_t xv = read_s8x4(xp);
            const uint32_t wv = read_s8x4(wp);
            const int32_t x02 = __sxtab16(offset2, (int32_t)xv);
            const int32_t x13 = sxtab16_ror8(offset2, xv);
            const int32_t w02 = __sxtb16((int32_t)wv);
            const int32_t w13 = sxtb16_ror8(wv);
            a0 = __smlabb(x02, w02, a0);
            a2 = __smlatt(x02, w02, a2);
            a1 = __smlabb(x13, w13, a1);
            a3 = __smlatt(x13, w13, a3);
            xp += x_col;
            wp += w_col;
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

#else /* pure C99 */

/* acc[k] = sum over the taps of (x[c + k] + input_offset) * w[c + k], k = 0..3 */
static void taps4(const taps_t *t, int32_t c, int32_t input_offset, int32_t acc[4])
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    const int32_t x_col = t->x_col;
    const int32_t w_col = t->w_col;
    const int32_t cols = t->cols;
    const int8_t *x_row = t->x + c;
    const int8_t *w_row = t->w + c;
    for (int32_t j = t->rows; j > 0; --j, x_row += t->x_row, w_row += t->w_row) {
        const int8_t *xp = x_row;
        const int8_t *wp = w_row;
        for (int32_t i = cols; i > 0; --i) {
            a0 += ((int32_t)xp[0] + input_offset) * (int32_t)wp[0];
            a1 += ((int32_t)xp[1] + input_offset) * (int32_t)wp[1];
            a2 += ((int32_t)xp[2] + input_offset) * (int32_t)wp[2];
            a3 += ((int32_t)xp[3] + input_offset) * (int32_t)wp[3];
            xp += x_col;
            wp += w_col;
        }
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

#endif

/* Channels c .. c + 3: taps4 + bias, requantized. */
static void channels4(const taps_t *t, int32_t c, const mcu_depthwise_conv_params_t *params,
                      const int32_t *bias, int8_t *out_px)
{
    /* local copies: an int8_t store may alias anything, which would reload them per output */
    const mcu_quant_io_t q = params->q;
    const int32_t *const multiplier = params->multiplier + c;
    const int32_t *const shift = params->shift + c;
    int8_t *const out = out_px + c;
    int32_t acc[4];
    taps4(t, c, q.input_offset, acc);
    for (int32_t k = 0; k < 4; ++k) {
        const int32_t sum = acc[k] + (bias != NULL ? bias[c + k] : 0);
        out[k] = output_stage(sum, multiplier[k], shift[k], &q);
    }
}

/* depth_multiplier == 1: the channels in blocks of four. Returns the first channel left to the
 * caller (C_out % 4 of them). */
static int32_t channel_blocks(const taps_t *t, const mcu_depthwise_conv_params_t *params,
                              const int32_t *bias, int8_t *out_px)
{
    const int32_t channels = params->output.c;
    int32_t c = 0;
    for (; c + 4 <= channels; c += 4) {
        channels4(t, c, params, bias, out_px);
    }
    return c;
}

#endif

#if defined(MCU_DW_DSP)

/*
 * DSP fast path: depth_multiplier == 1, the channels in blocks of four, one block at a time over
 * the whole output, each block in two passes of two channels: c, c + 2 (the even bytes of a
 * 4-byte load) and c + 1, c + 3 (the odd bytes). A pass's weights and requantization constants
 * are prepared once per call (lanes2_t, on the stack).
 *
 * Multiply-accumulate: a 4-byte load brings four channels of one input pixel; SXTAB16 adds the
 * input offset to the pass's two channels as int16 lanes, SMLABB/SMLATT multiply each lane by the
 * matching int16 lane of the prepared weights. 3x3 filters with vertical stride and dilation 1
 * compute output rows in pairs: each input row loaded and unpacked serves both, four
 * accumulators in all (pair3x3, in assembly: gcc does not keep it in registers). A window that
 * sticks out of the input on the left or right is shifted inward and meets zero weights instead
 * (lanes2_t.wcol has two zero columns on each side, plan_segments); one that sticks out at the
 * top or bottom by one row skips that row (DW_ROWS_NO_TOP/NO_BOTTOM); an odd last row is redone
 * as the bottom of an overlapping pair. Other rows and filters run row_sweep: one output row, all
 * four channels of each load (valid taps only).
 *
 * Requantization in four instructions (requant2 in mcu_kernel_util.h): the weights are stored
 * doubled, so the accumulators hold 2 * acc exactly. Conditions (else the generic loops run):
 * requant2_ok() for every channel, KH * KW <= DW_DSP_MAX_TAPS (then
 * |acc| < 2^29 + 25 * 255 * 128 < 2^30).
 */

#define DW_DSP_MAX_TAPS 25

#if defined(__GNUC__)
#define DW_INLINE static inline __attribute__((always_inline))
#define DW_NOINLINE __attribute__((noinline))
#else
#define DW_INLINE static inline
#define DW_NOINLINE
#endif

/* One pass of the 3x3 row pairs: two channels (lane 0 and lane 1 of every int16 pair). */
typedef struct {
    int32_t bias2[2];   /* 2 * bias */
    int32_t mult[2];    /* multiplier, >= 0 */
    int32_t base[2];    /* 2^(r - 1) + output_offset * 2^r */
    int32_t right[2];   /* r = -shift, in [1, 20] */
    int32_t wcol[7][3]; /* [2 + kx][ky]: int16 lanes 2 w[lane 0], 2 w[lane 1]; zero for kx < 0,
                         * kx > 2 */
} lanes2_t;

/* The four channels c .. c + 3 of the single-row path, in accumulator order k = c, c + 2,
 * c + 1, c + 3 (the even then the odd bytes of a 4-byte load). */
typedef struct {
    int32_t bias2[4];
    int32_t mult[4];
    int32_t base[4];
    int32_t right[4];
    int32_t w[DW_DSP_MAX_TAPS][2]; /* [ky * KW + kx]: lanes (2 w[c], 2 w[c + 2]),
                                    * (2 w[c + 1], 2 w[c + 3]) */
} group4_t;

/* A run of output columns of the 3x3 row-pair path: `count` positions from output column
 * out_x, the first window's input column in_x (shifted inward at a border, see pair3x3_sweep),
 * weights wcol[col] (2 = unshifted). */
typedef struct {
    int32_t out_x;
    int32_t in_x;
    int32_t col;
    int32_t count;
} segment_t;

#define DW_MAX_SEGMENTS 5

/* What every output position of one pass shares. */
typedef struct {
    const mcu_depthwise_conv_params_t *p;
    const lanes2_t *l; /* the current pass (row pairs) */
    const group4_t *g; /* the current four channels (single rows) */
    int32_t offset2;   /* input_offset in both int16 lanes */
    int32_t in_row;  /* bytes of one input row */
    int32_t x_col;   /* dilation_w * C: bytes from one tap column to the next */
    int32_t out_row; /* bytes of one output row */
    int32_t x_begin; /* output columns [x_begin, x_end) have every kx inside the input */
    int32_t x_end;
    int full;        /* act_min == -128 and act_max == 127 */
    segment_t seg[DW_MAX_SEGMENTS]; /* the output columns of the 3x3 row-pair path */
    int32_t segments;
} pass_t;

/* The pass's two channels of the input pixel at x, plus the input offset, as int16 lanes. */
DW_INLINE int32_t load2(const int8_t *x, int32_t offset2, int odd)
{
    const uint32_t v = read_s8x4(x);
    return odd ? sxtab16_ror8(offset2, v) : __sxtab16(offset2, (int32_t)v);
}

/* acc[0..1] += input pixel v times the weight pair w (lane 0, lane 1) */
DW_INLINE void mac(int32_t *a0, int32_t *a1, int32_t v, int32_t w)
{
    *a0 = __smlabb(v, w, *a0);
    *a1 = __smlatt(v, w, *a1);
}

/* The clamped output of a doubled accumulator acc2 = 2 * acc, lane k's constants. */
DW_INLINE int8_t requant_lane(int32_t acc2, const lanes2_t *l, int32_t k, int full,
                              const mcu_quant_io_t *q)
{
    const int32_t v = requant2(acc2, l->mult[k], l->base[k], l->right[k]);
    return (int8_t)(full ? v : mcu_clamp_s32(v, q->act_min, q->act_max));
}

/*
 * A 3x3 window pair, in assembly (gcc does not keep this in 12 registers): output rows top and
 * bottom (one input row lower), two lanes each; input rows 0..3 at x + r * in_row, tap columns
 * k = 0..2 at x + k * x_col, weights w[3 k + ky]. Input row r adds to the top output with tap
 * row r (r <= 2) and to the bottom one with tap row r - 1 (r >= 1):
 *   t[l] += sum_{k, r=0..2} x[r][k] * w[k][r],  b[l] += sum_{k, r=1..3} x[r][k] * w[k][r - 1]
 * for both lanes l (SMLABB: lane 0, SMLATT: lane 1). Variants: DW_ROWS_ALL; DW_ROWS_NO_TOP
 * (input row 0 is padding: not read, x points at row 1); DW_ROWS_NO_BOTTOM (row 3 is padding).
 * Per column: the weights (LDRD + LDR), the rows (LDR, SXTAB16 with the input offset), 12 MACs.
 * It reads memory (the input, the weights): the "memory" clobber keeps gcc from moving or
 * dropping the stores that fill them.
 */
#define DW_LOAD(ROT, ADDR)                                                                     \
    "ldr     %[v], " ADDR "\n\t"                                                               \
    "sxtab16 %[v], %[off], %[v]" ROT "\n\t"
#define DW_MAC(ACC0, ACC1, W)                                                                  \
    "smlabb  %[" ACC0 "], %[v], %[" W "], %[" ACC0 "]\n\t"                                     \
    "smlatt  %[" ACC1 "], %[v], %[" W "], %[" ACC1 "]\n\t"
/* rows 0..3 of one column; wa, wb = tap rows 0, 1; then wa = tap row 2, wb = the row 3 address */
#define DW_COL_ALL(ROT, OFS)                                                                   \
    "ldrd    %[wa], %[wb], [%[w], #" OFS "]\n\t"                                               \
    DW_LOAD(ROT, "[%[p]]") DW_MAC("t0", "t1", "wa")                                            \
    DW_LOAD(ROT, "[%[p], %[row]]") DW_MAC("t0", "t1", "wb") DW_MAC("b0", "b1", "wa")           \
    "ldr     %[wa], [%[w], #" OFS "+8]\n\t"                                                    \
    DW_LOAD(ROT, "[%[p], %[row], lsl #1]") DW_MAC("t0", "t1", "wa") DW_MAC("b0", "b1", "wb")   \
    "add     %[wb], %[p], %[row], lsl #1\n\t"                                                  \
    DW_LOAD(ROT, "[%[wb], %[row]]") DW_MAC("b0", "b1", "wa")                                   \
    "add     %[p], %[p], %[col]\n\t"
/* rows 1..3 of one column (p at row 1) */
#define DW_COL_NO_TOP(ROT, OFS)                                                                \
    "ldrd    %[wa], %[wb], [%[w], #" OFS "]\n\t"                                               \
    DW_LOAD(ROT, "[%[p]]") DW_MAC("t0", "t1", "wb") DW_MAC("b0", "b1", "wa")                   \
    "ldr     %[wa], [%[w], #" OFS "+8]\n\t"                                                    \
    DW_LOAD(ROT, "[%[p], %[row]]") DW_MAC("t0", "t1", "wa") DW_MAC("b0", "b1", "wb")           \
    DW_LOAD(ROT, "[%[p], %[row], lsl #1]") DW_MAC("b0", "b1", "wa")                            \
    "add     %[p], %[p], %[col]\n\t"
/* rows 0..2 of one column */
#define DW_COL_NO_BOTTOM(ROT, OFS)                                                             \
    "ldrd    %[wa], %[wb], [%[w], #" OFS "]\n\t"                                               \
    DW_LOAD(ROT, "[%[p]]") DW_MAC("t0", "t1", "wa")                                            \
    DW_LOAD(ROT, "[%[p], %[row]]") DW_MAC("t0", "t1", "wb") DW_MAC("b0", "b1", "wa")           \
    "ldr     %[wa], [%[w], #" OFS "+8]\n\t"                                                    \
    DW_LOAD(ROT, "[%[p], %[row], lsl #1]") DW_MAC("t0", "t1", "wa") DW_MAC("b0", "b1", "wb")   \
    "add     %[p], %[p], %[col]\n\t"
#define DW_PAIR3X3(COL, ROT)                                                                   \
    __asm__(COL(ROT, "0") COL(ROT, "12") COL(ROT, "24")                                        \
            : [t0] "+r"(t0), [t1] "+r"(t1), [b0] "+r"(b0), [b1] "+r"(b1), [p] "+r"(p),        \
              [v] "=&r"(v), [wa] "=&r"(wa), [wb] "=&r"(wb)                                     \
            : [row] "r"(in_row), [col] "r"(x_col), [w] "r"(w), [off] "r"(offset2)             \
            : "memory")

enum { DW_ROWS_ALL, DW_ROWS_NO_TOP, DW_ROWS_NO_BOTTOM };

#if defined(__OPTIMIZE__) && defined(__GNUC__)

DW_INLINE void pair3x3(int32_t acc[4], const int8_t *x, int32_t in_row, int32_t x_col,
                       const int32_t *w, int32_t offset2, int rows, int odd)
{
    int32_t t0 = acc[0], t1 = acc[1], b0 = acc[2], b1 = acc[3];
    const int8_t *p = x;
    int32_t v, wa, wb;
    if (odd) {
        if (rows == DW_ROWS_ALL) {
            DW_PAIR3X3(DW_COL_ALL, ", ror #8");
        } else if (rows == DW_ROWS_NO_TOP) {
            DW_PAIR3X3(DW_COL_NO_TOP, ", ror #8");
        } else {
            DW_PAIR3X3(DW_COL_NO_BOTTOM, ", ror #8");
        }
    } else {
        if (rows == DW_ROWS_ALL) {
            DW_PAIR3X3(DW_COL_ALL, "");
        } else if (rows == DW_ROWS_NO_TOP) {
            DW_PAIR3X3(DW_COL_NO_TOP, "");
        } else {
            DW_PAIR3X3(DW_COL_NO_BOTTOM, "");
        }
    }
    acc[0] = t0;
    acc[1] = t1;
    acc[2] = b0;
    acc[3] = b1;
}

#else /* unoptimized builds cannot give the assembly its 12 registers: the same in C */

DW_INLINE void pair3x3(int32_t acc[4], const int8_t *x, int32_t in_row, int32_t x_col,
                       const int32_t *w, int32_t offset2, int rows, int odd)
{
    int32_t t0 = acc[0], t1 = acc[1], b0 = acc[2], b1 = acc[3];
    const int32_t r_begin = rows == DW_ROWS_NO_TOP ? 1 : 0;
    const int32_t r_end = rows == DW_ROWS_NO_BOTTOM ? 3 : 4;
    for (int32_t k = 0; k < 3; ++k, w += 3) {
        for (int32_t r = r_begin; r < r_end; ++r) { /* x: row r_begin */
            const int32_t v = load2(x + (r - r_begin) * in_row + k * x_col, offset2, odd);
            if (r < 3) {
                mac(&t0, &t1, v, w[r]);
            }
            if (r > 0) {
                mac(&b0, &b1, v, w[r - 1]);
            }
        }
    }
    acc[0] = t0;
    acc[1] = t1;
    acc[2] = b0;
    acc[3] = b1;
}

#endif

/* The requantization constants of a pass's two lanes, read into locals (an int8_t store may
 * alias anything: through the pointer they would be read again after every store). */
typedef struct {
    int32_t mult0, mult1, base0, base1, right0, right1;
} rq2_t;

DW_INLINE rq2_t rq2(const lanes2_t *l)
{
    rq2_t r;
    r.mult0 = l->mult[0];
    r.mult1 = l->mult[1];
    r.base0 = l->base[0];
    r.base1 = l->base[1];
    r.right0 = l->right[0];
    r.right1 = l->right[1];
    return r;
}

/* One position of a row pair: bias, the 3x3 window pair at x with weights w, requantized into
 * out[0], out[2] (top row) and out[out_row], out[out_row + 2] (bottom row). */
DW_INLINE void pair3x3_px(const pass_t *s, const int8_t *x, const int32_t *w, int8_t *out,
                          int rows, int odd)
{
    const lanes2_t *const l = s->l;
    int32_t acc[4];
    acc[0] = acc[2] = l->bias2[0];
    acc[1] = acc[3] = l->bias2[1];
    pair3x3(acc, x, s->in_row, s->x_col, w, s->offset2, rows, odd);
    const rq2_t r = rq2(l);
    int32_t v0 = requant2(acc[0], r.mult0, r.base0, r.right0);
    int32_t v1 = requant2(acc[1], r.mult1, r.base1, r.right1);
    int32_t v2 = requant2(acc[2], r.mult0, r.base0, r.right0);
    int32_t v3 = requant2(acc[3], r.mult1, r.base1, r.right1);
    if (!s->full) {
        const int32_t lo = s->p->q.act_min;
        const int32_t hi = s->p->q.act_max;
        v0 = mcu_clamp_s32(v0, lo, hi);
        v1 = mcu_clamp_s32(v1, lo, hi);
        v2 = mcu_clamp_s32(v2, lo, hi);
        v3 = mcu_clamp_s32(v3, lo, hi);
    }
    const int32_t out_row = s->out_row;
    out[0] = (int8_t)v0;
    out[2] = (int8_t)v1;
    out[out_row] = (int8_t)v2;
    out[out_row + 2] = (int8_t)v3;
}

/* One pass over output rows y, y + 1 of a 3x3 filter (stride_h == dilation_h == 1): input rows
 * from x_rows (channel c; the first one read when rows == DW_ROWS_NO_TOP); out: row y at the
 * pass's channel. Column by column segment (pass_t.seg). */
DW_INLINE void pair3x3_sweep(const pass_t *s, const int8_t *x_rows, int8_t *out, int rows,
                             int odd)
{
    const int32_t in_c = s->p->input.c;
    const int32_t out_c = s->p->output.c;
    const int32_t x_step = s->p->stride_w * in_c;
    const segment_t *const end = s->seg + s->segments;
    for (const segment_t *g = s->seg; g < end; ++g) {
        const int8_t *x = x_rows + g->in_x * in_c;
        const int32_t *const w = s->l->wcol[g->col];
        int8_t *o = out + g->out_x * out_c;
        for (int32_t n = g->count; n > 0; --n, x += x_step, o += out_c) {
            pair3x3_px(s, x, w, o, rows, odd);
        }
    }
}

/* pass_t.seg: the output columns in runs of equal weight shift. A window sticking out on the
 * left or right (kx in [kx_begin, kx_end) inside the input) is shifted inward by `shift` tap
 * columns, its weights by as many columns into wcol's zero columns: tap column k then meets
 * weight column k + shift, zero outside 0..2. Returns 0 when the input is too narrow for that
 * (no valid tap, or the shifted window leaves the input) or there are too many runs. */
static int plan_segments(pass_t *s)
{
    const mcu_depthwise_conv_params_t *const p = s->p;
    s->segments = 0;
    for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
        int32_t in_x = out_x * p->stride_w - p->pad_left;
        int32_t kx_begin, kx_end;
        valid_taps(in_x, p->dilation_w, 3, p->input.w, &kx_begin, &kx_end);
        if (kx_end <= kx_begin || (kx_begin > 0 && kx_end < 3)) {
            return 0;
        }
        const int32_t shift = kx_begin > 0 ? kx_begin : kx_end - 3;
        in_x += shift * p->dilation_w;
        if (in_x < 0 || in_x + 2 * p->dilation_w >= p->input.w) {
            return 0;
        }
        segment_t *const last = s->segments > 0 ? &s->seg[s->segments - 1] : NULL;
        if (last != NULL && last->col == 2 + shift && shift == 0) {
            ++last->count; /* unshifted windows: consecutive, stride_w apart */
            continue;
        }
        if (s->segments == DW_MAX_SEGMENTS) {
            return 0;
        }
        segment_t *const g = &s->seg[s->segments++];
        g->out_x = out_x;
        g->in_x = in_x;
        g->col = 2 + shift;
        g->count = 1;
    }
    return 1;
}

/* acc (group4_t order) += the four channels of the input pixel at x times the weights w */
DW_INLINE void mac4(int32_t *a0, int32_t *a1, int32_t *a2, int32_t *a3, const int8_t *x,
                    const int32_t w[2], int32_t offset2)
{
    const uint32_t v = read_s8x4(x);
    const int32_t even = __sxtab16(offset2, (int32_t)v);
    const int32_t odd = sxtab16_ror8(offset2, v);
    *a0 = __smlabb(even, w[0], *a0);
    *a1 = __smlatt(even, w[0], *a1);
    *a2 = __smlabb(odd, w[1], *a2);
    *a3 = __smlatt(odd, w[1], *a3);
}

/* One output position, four channels: taps (j, i), j < rows, i < cols (cols == k_w known at
 * compile time when it is 3), at x + j * x_row + i * x_col (input) and w[j * k_w + i]
 * (weights); then requantized into out[0..3]. */
DW_INLINE void row4_px(const pass_t *s, const int8_t *x, const int32_t (*w)[2], int32_t rows,
                       int32_t cols, int8_t *out)
{
    const group4_t *const g = s->g;
    const int32_t x_row = s->p->dilation_h * s->in_row;
    const int32_t x_col = s->x_col;
    const int32_t k_w = s->p->filter.w;
    const int32_t offset2 = s->offset2;
    int32_t a0 = g->bias2[0], a1 = g->bias2[1], a2 = g->bias2[2], a3 = g->bias2[3];
    for (int32_t j = rows; j > 0; --j, x += x_row, w += k_w) {
        if (cols == 3) {
            mac4(&a0, &a1, &a2, &a3, x, w[0], offset2);
            mac4(&a0, &a1, &a2, &a3, x + x_col, w[1], offset2);
            mac4(&a0, &a1, &a2, &a3, x + 2 * x_col, w[2], offset2);
            continue;
        }
        const int8_t *xp = x;
        for (int32_t i = 0; i < cols; ++i, xp += x_col) {
            mac4(&a0, &a1, &a2, &a3, xp, w[i], offset2);
        }
    }
    a0 = requant2(a0, g->mult[0], g->base[0], g->right[0]);
    a1 = requant2(a1, g->mult[1], g->base[1], g->right[1]);
    a2 = requant2(a2, g->mult[2], g->base[2], g->right[2]);
    a3 = requant2(a3, g->mult[3], g->base[3], g->right[3]);
    if (!s->full) {
        const int32_t lo = s->p->q.act_min;
        const int32_t hi = s->p->q.act_max;
        a0 = mcu_clamp_s32(a0, lo, hi);
        a1 = mcu_clamp_s32(a1, lo, hi);
        a2 = mcu_clamp_s32(a2, lo, hi);
        a3 = mcu_clamp_s32(a3, lo, hi);
    }
    out[0] = (int8_t)a0;
    out[2] = (int8_t)a1;
    out[1] = (int8_t)a2;
    out[3] = (int8_t)a3;
}

/* A position whose window sticks out on the left or right: its valid taps only. */
DW_NOINLINE static void row4_border(const pass_t *s, const int8_t *x_rows,
                                    const int32_t (*w_rows)[2], int32_t rows, int32_t out_x,
                                    int8_t *out)
{
    const mcu_depthwise_conv_params_t *const p = s->p;
    const int32_t in_x = out_x * p->stride_w - p->pad_left;
    int32_t kx_begin, kx_end;
    valid_taps(in_x, p->dilation_w, p->filter.w, p->input.w, &kx_begin, &kx_end);
    const int32_t cols = rows > 0 ? kx_end - kx_begin : 0;
    const int8_t *const x = cols > 0 ? x_rows + (in_x + kx_begin * p->dilation_w) * p->input.c
                                     : x_rows;
    row4_px(s, x, w_rows + kx_begin, cols > 0 ? rows : 0, cols, out + out_x * p->output.c);
}

/* One output row y, four channels (s->g), any filter: the valid taps of each position. in: the
 * batch's input at channel c; out: row y at channel c. */
DW_NOINLINE static void row_sweep(const pass_t *s, const int8_t *in, int8_t *out, int32_t out_y)
{
    const mcu_depthwise_conv_params_t *const p = s->p;
    const int32_t k_w = p->filter.w;
    const int32_t in_y = out_y * p->stride_h - p->pad_top;
    int32_t ky_begin, ky_end;
    valid_taps(in_y, p->dilation_h, p->filter.h, p->input.h, &ky_begin, &ky_end);
    const int32_t rows = ky_end - ky_begin;
    /* (only offset by the valid rows when there is one) */
    const int8_t *const x_rows = rows > 0 ? in + (in_y + ky_begin * p->dilation_h) * s->in_row
                                          : in;
    const int32_t(*const w_rows)[2] = s->g->w + ky_begin * k_w;
    for (int32_t out_x = 0; out_x < s->x_begin; ++out_x) {
        row4_border(s, x_rows, w_rows, rows, out_x, out);
    }
    const int32_t x_step = p->stride_w * p->input.c;
    const int32_t out_c = p->output.c;
    const int8_t *x = x_rows + (s->x_begin * p->stride_w - p->pad_left) * p->input.c;
    int8_t *o = out + s->x_begin * out_c;
    const int32_t n = s->x_end - s->x_begin;
    if (rows == 0) {
        for (int32_t i = 0; i < n; ++i, o += out_c) {
            row4_px(s, x_rows, w_rows, 0, 0, o);
        }
    } else if (k_w == 3) {
        for (int32_t i = 0; i < n; ++i, x += x_step, o += out_c) {
            row4_px(s, x, w_rows, rows, 3, o);
        }
    } else {
        for (int32_t i = 0; i < n; ++i, x += x_step, o += out_c) {
            row4_px(s, x, w_rows, rows, k_w, o);
        }
    }
    for (int32_t out_x = s->x_end; out_x < p->output.w; ++out_x) {
        row4_border(s, x_rows, w_rows, rows, out_x, out);
    }
}

/* The sweeps with the pass fixed at compile time; kept out of line so that the lanes2_t they
 * read is written before they run. */
DW_NOINLINE static void pair_even(const pass_t *s, const int8_t *x, int8_t *out, int rows)
{
    pair3x3_sweep(s, x, out, rows, 0);
}

DW_NOINLINE static void pair_odd(const pass_t *s, const int8_t *x, int8_t *out, int rows)
{
    pair3x3_sweep(s, x, out, rows, 1);
}

static int32_t pack16(int32_t lo, int32_t hi)
{
    return (int32_t)(((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16));
}

/* Whether the DSP path may run (see the conditions above). */
static int dsp_eligible(const mcu_depthwise_conv_params_t *p, const int32_t *bias)
{
    if (p->depth_multiplier != 1 || p->output.c < 4 || p->filter.h > DW_DSP_MAX_TAPS ||
        p->filter.w > DW_DSP_MAX_TAPS || p->filter.h * p->filter.w > DW_DSP_MAX_TAPS) {
        return 0;
    }
    for (int32_t c = 0; c < p->output.c; ++c) {
        if (!requant2_ok(p->multiplier[c], p->shift[c], bias != NULL ? bias[c] : 0)) {
            return 0;
        }
    }
    return 1;
}

/* The four channels from c: g (single rows) and, for 3x3 filters, l[0] (channels c, c + 2) and
 * l[1] (c + 1, c + 3) (row pairs). */
static void prepare_group(group4_t *g, lanes2_t l[2], const mcu_depthwise_conv_params_t *p,
                          const int8_t *filter, const int32_t *bias, int32_t c)
{
    const int32_t taps = p->filter.h * p->filter.w;
    for (int32_t t = 0; t < taps; ++t) {
        const int8_t *const f = filter + t * p->output.c + c;
        g->w[t][0] = pack16(2 * f[0], 2 * f[2]);
        g->w[t][1] = pack16(2 * f[1], 2 * f[3]);
    }
    for (int32_t k = 0; k < 4; ++k) {
        const int32_t ch = c + (k >> 1) + 2 * (k & 1);
        g->bias2[k] = bias != NULL ? 2 * bias[ch] : 0;
        g->mult[k] = p->multiplier[ch];
        g->right[k] = -p->shift[ch];
        g->base[k] = requant2_base(p->shift[ch], p->q.output_offset);
    }
    if (p->filter.h != 3 || p->filter.w != 3) {
        return;
    }
    for (int32_t odd = 0; odd < 2; ++odd) {
        lanes2_t *const lp = &l[odd];
        for (int32_t kx = -2; kx < 5; ++kx) {
            for (int32_t ky = 0; ky < 3; ++ky) {
                lp->wcol[2 + kx][ky] = kx >= 0 && kx < 3 ? g->w[ky * 3 + kx][odd] : 0;
            }
        }
        for (int32_t lane = 0; lane < 2; ++lane) {
            const int32_t k = 2 * odd + lane;
            lp->bias2[lane] = g->bias2[k];
            lp->mult[lane] = g->mult[k];
            lp->base[lane] = g->base[k];
            lp->right[lane] = g->right[k];
        }
    }
}

/* Channels 0 .. 4 * floor(C / 4) - 1 of every output. */
static void dsp_conv(const mcu_depthwise_conv_params_t *p, const int8_t *input,
                     const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    const int32_t out_h = p->output.h;
    const int32_t out_w = p->output.w;
    const int32_t out_c = p->output.c;
    const int32_t in_batch = in_h * in_w * p->input.c;
    const int32_t out_batch = out_h * out_w * out_c;
    lanes2_t l[2];
    group4_t g;
    pass_t s;
    s.p = p;
    s.g = &g;
    s.offset2 = pack16(p->q.input_offset, p->q.input_offset);
    s.in_row = in_w * p->input.c;
    s.x_col = p->dilation_w * p->input.c;
    s.out_row = out_w * out_c;
    s.full = p->q.act_min == MCU_INT8_MIN && p->q.act_max == MCU_INT8_MAX;
    /* output columns whose window lies inside the input horizontally: in_x >= 0 and
     * in_x + (KW - 1) * dilation_w < W_in, with in_x = out_x * stride_w - pad_left */
    const int32_t span = (p->filter.w - 1) * p->dilation_w;
    const int32_t last = in_w - 1 - span + p->pad_left;
    s.x_begin = (p->pad_left + p->stride_w - 1) / p->stride_w;
    s.x_end = last < 0 ? 0 : last / p->stride_w + 1;
    if (s.x_end > out_w) {
        s.x_end = out_w;
    }
    if (s.x_begin > out_w) { /* (a left padding wider than the output) */
        s.x_begin = out_w;
    }
    if (s.x_end < s.x_begin) {
        s.x_end = s.x_begin;
    }
    const int pairs = p->filter.h == 3 && p->filter.w == 3 && p->stride_h == 1 &&
                      p->dilation_h == 1 && plan_segments(&s);
    for (int32_t c = 0; c + 4 <= out_c; c += 4) {
        prepare_group(&g, l, p, filter, bias, c);
        for (int32_t b = 0; b < p->input.n; ++b) {
            const int8_t *const in = input + b * in_batch + c; /* 4-byte loads */
            int8_t *const out = output + b * out_batch + c;
            for (int32_t y = 0; y < out_h;) {
                /* rows y, y + 1 (y = out_h - 2 for the last of an odd count, redoing row y):
                 * input rows in_y .. in_y + 3, stride 1 */
                const int32_t top = y + 1 < out_h ? y : y - 1;
                const int32_t in_y = top - p->pad_top;
                const int rows = in_y < 0 ? DW_ROWS_NO_TOP
                                          : (in_y + 3 >= in_h ? DW_ROWS_NO_BOTTOM : DW_ROWS_ALL);
                if (pairs && top >= 0 && in_y >= -1 && in_y + 3 <= in_h &&
                    (in_h >= 3 || rows == DW_ROWS_ALL)) {
                    const int8_t *const x_rows = in + (in_y + (in_y < 0)) * s.in_row;
                    s.l = &l[0];
                    pair_even(&s, x_rows, out + top * s.out_row, rows);
                    s.l = &l[1];
                    pair_odd(&s, x_rows, out + top * s.out_row + 1, rows);
                    y = top + 2;
                } else {
                    row_sweep(&s, in, out + y * s.out_row, y);
                    y += 1;
                }
            }
        }
    }
}

#endif

#if defined(MCU_DW_MVE)

/*
 * MVE fast path: depth_multiplier == 1, eight channels at a time over the whole output (the last
 * group predicated), their weights as int16 and their requantization constants prepared once
 * per call (mve_group_t, on the stack). Per tap: the eight inputs widened to int16 plus the
 * input offset, VMULLB/VMULLT by the weights into two int32x4 accumulators (even and odd
 * channels); per position: requant4 (mcu_kernel_util.h) of both, VMOVNB/VMOVNT back into
 * channel order, one narrowing store. 3x3 windows inside the input are unrolled.
 * Conditions (else channels8 below): requant2_ok() for every channel, KH * KW <= DW_MVE_TAPS
 * (then |acc| < 2^29 + 25 * 255 * 128 < 2^30).
 */
#define DW_MVE_TAPS 25
#define DW_MVE_BORDERS 8

#if defined(__GNUC__)
#define DW_MVE_NOINLINE __attribute__((noinline))
#else
#define DW_MVE_NOINLINE
#endif

typedef struct {
    int16_t w[DW_MVE_TAPS][8]; /* [ky * KW + kx][channel]; 3x3 filters padded to 5x5 with zeros:
                                * [(ky + 1) * 5 + kx + 1] */
    int32_t bias[2][4];        /* [even/odd][lane]: channel c + 2 lane + (odd) */
    int32_t bias_full[2][4];   /* bias + input_offset * (sum of the channel's weights): the
                                * start of a window with every tap inside the input, whose
                                * inputs are then taken without the offset */
    int32_t mult[2][4];
    int32_t base[2][4];
    int32_t shift[2][4];
} mve_group_t;

static int mve_eligible(const mcu_depthwise_conv_params_t *p, const int32_t *bias)
{
    if (p->depth_multiplier != 1 || p->filter.h > DW_MVE_TAPS || p->filter.w > DW_MVE_TAPS ||
        p->filter.h * p->filter.w > DW_MVE_TAPS) {
        return 0;
    }
    for (int32_t c = 0; c < p->output.c; ++c) {
        if (!requant2_ok(p->multiplier[c], p->shift[c], bias != NULL ? bias[c] : 0)) {
            return 0;
        }
    }
    return 1;
}

/* Channels c .. c + 7 (those below C; the others get zero weights and constants). */
static void mve_prepare(mve_group_t *g, const mcu_depthwise_conv_params_t *p,
                        const int8_t *filter, const int32_t *bias, int32_t c)
{
    const int32_t out_c = p->output.c;
    const int32_t k_h = p->filter.h;
    const int32_t k_w = p->filter.w;
    const int pad = k_h == 3 && k_w == 3;
    const mve_pred16_t lanes = vctp16q((uint32_t)(out_c - c));
    int16x8_t w_sum = vdupq_n_s16(0);
    if (pad) { /* the zero border of the padded 5x5 layout */
        for (int32_t t = 0; t < 25; ++t) {
            vst1q_s16(g->w[t], w_sum);
        }
    }
    for (int32_t ky = 0; ky < k_h; ++ky) {
        for (int32_t kx = 0; kx < k_w; ++kx) {
            const int32_t at = pad ? (ky + 1) * 5 + kx + 1 : ky * k_w + kx;
            const int16x8_t w = vldrbq_z_s16(filter + (ky * k_w + kx) * out_c + c, lanes);
            vst1q_s16(g->w[at], w);
            w_sum = vaddq_s16(w_sum, w); /* |sum| <= 25 * 128 */
        }
    }
    /* even and odd channels: lanes c + 2 j and c + 2 j + 1 */
    const uint32x4_t even = vmulq_n_u32(vidupq_n_u32(0, 1), 2u);
    const mve_pred16_t p_even = vctp32q((uint32_t)(out_c - c + 1) / 2u);
    const mve_pred16_t p_odd = vctp32q((uint32_t)(out_c - c) / 2u);
    const int32x4_t zero = vdupq_n_s32(0);
    for (int32_t odd = 0; odd < 2; ++odd) {
        const mve_pred16_t pr = odd ? p_odd : p_even;
        const int32_t ch = c + odd;
        const int32x4_t b = bias != NULL ? vldrwq_gather_shifted_offset_z_s32(bias + ch, even, pr)
                                         : zero;
        const int32x4_t shift = vldrwq_gather_shifted_offset_z_s32(p->shift + ch, even, pr);
        const int32x4_t sum = odd ? vmovltq_s16(w_sum) : vmovlbq_s16(w_sum);
        vst1q_s32(g->bias[odd], b);
        vst1q_s32(g->bias_full[odd], vmlaq_n_s32(b, sum, p->q.input_offset));
        vst1q_s32(g->mult[odd], vldrwq_gather_shifted_offset_z_s32(p->multiplier + ch, even, pr));
        /* base = 2^(r - 1) + output_offset * 2^r, r = -shift (lanes past C: r = 1 and
         * multiplier 0; their outputs are not stored) */
        const int32x4_t r = vnegq_s32(vpselq_s32(shift, vdupq_n_s32(-1), pr));
        const int32x4_t base = vaddq_s32(vshlq_s32(vdupq_n_s32(1), vsubq_s32(r, vdupq_n_s32(1))),
                                         vshlq_s32(vdupq_n_s32(p->q.output_offset), r));
        vst1q_s32(g->shift[odd], vnegq_s32(r));
        vst1q_s32(g->base[odd], base);
    }
}

/* acc_e/acc_o += (x + offset) * w over one tap: x the eight inputs at xp (lanes past `pred`
 * not read when `partial`) */
static inline __attribute__((always_inline)) void mve_tap(int32x4_t *acc_e, int32x4_t *acc_o,
                                                          const int8_t *xp, const int16_t *w,
                                                          int16x8_t offset, mve_pred16_t pred,
                                                          int partial, int with_offset)
{
    const int16x8_t x = partial ? vldrbq_z_s16(xp, pred) : vldrbq_s16(xp);
    const int16x8_t xv = with_offset ? vaddq_s16(x, offset) : x;
    const int16x8_t wv = vld1q_s16(w);
    *acc_e = vaddq_s32(*acc_e, vmullbq_int_s16(xv, wv));
    *acc_o = vaddq_s32(*acc_o, vmulltq_int_s16(xv, wv));
#if defined(__GNUC__)
    /* (the accumulators complete here: else gcc schedules all the taps' loads and products
     * first, and with eight Q registers spills them to the stack) */
    __asm__ volatile("" : "+w"(*acc_e), "+w"(*acc_o));
#endif
}

/* What a group's positions share. */
typedef struct {
    const mcu_depthwise_conv_params_t *p;
    const mve_group_t *g;
    int32_t in_row;
    int32_t x_row;    /* dilation_h * in_row */
    int32_t x_col;    /* dilation_w * C */
    int32_t x_begin;  /* output columns [x_begin, x_end) have every kx inside the input */
    int32_t x_end;
    mve_pred16_t pred; /* the group's channels (all 8 unless the last group is partial) */
    int full;          /* act_min == -128 and act_max == 127 */
    int32_t w_row;     /* taps per weight row: 5 (3x3, padded), else KW */
    int32_t w_origin;  /* index of tap (0, 0) in mve_group_t.w: 6 (3x3, padded), else 0 */
    int pad3;          /* 3x3 with border windows shifted inward (see mve_row) */
    int32_t borders;   /* pad3: the output columns outside [x_begin, x_end), */
    int32_t border_out[DW_MVE_BORDERS]; /* their output column, */
    int32_t border_in[DW_MVE_BORDERS];  /* their shifted window's first input column, */
    int32_t border_w[DW_MVE_BORDERS];   /* and its weight column shift (-1 or 1) */
} mve_ctx_t;

/* One output position: `rows` x `cols` taps from x (input) and w (weights, row stride
 * w_row); `whole` (a constant where inlined) 1: they are all the filter's taps (the inputs are
 * then taken without the offset, bias_full holding it), 0: not, -1: not, and no unrolled 3x3
 * code either. Requantized into out. */
static inline __attribute__((always_inline)) void mve_px(const mve_ctx_t *m, const int8_t *x,
                                                         const int16_t *w, int32_t rows,
                                                         int32_t cols, int whole, int8_t *out,
                                                         int partial)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    const mve_group_t *const g = m->g;
    const int16x8_t offset = vdupq_n_s16((int16_t)p->q.input_offset);
    const int32_t x_col = m->x_col;
    const mve_pred16_t pred = m->pred;
    int32x4_t acc_e = vld1q_s32(whole > 0 ? g->bias_full[0] : g->bias[0]);
    int32x4_t acc_o = vld1q_s32(whole > 0 ? g->bias_full[1] : g->bias[1]);
    if (whole >= 0 && m->pad3 && rows == 3 && cols == 3) { /* (whole == 0: a shifted border
                                                             * window, with the offset) */
        for (int32_t j = 0; j < 3; ++j, x += m->x_row, w += 40) {
            mve_tap(&acc_e, &acc_o, x, w, offset, pred, partial, !whole);
            mve_tap(&acc_e, &acc_o, x + x_col, w + 8, offset, pred, partial, !whole);
            mve_tap(&acc_e, &acc_o, x + 2 * x_col, w + 16, offset, pred, partial, !whole);
        }
    } else if (whole > 0) {
        for (int32_t j = 0; j < rows; ++j, x += m->x_row, w += 8 * m->w_row) {
            const int8_t *xp = x;
            for (int32_t i = 0; i < cols; ++i, xp += x_col) {
                mve_tap(&acc_e, &acc_o, xp, w + 8 * i, offset, pred, partial, 0);
            }
        }
    } else {
        for (int32_t j = 0; j < rows; ++j, x += m->x_row, w += 8 * m->w_row) {
            const int8_t *xp = x;
            for (int32_t i = 0; i < cols; ++i, xp += x_col) {
                mve_tap(&acc_e, &acc_o, xp, w + 8 * i, offset, pred, partial, 1);
            }
        }
    }
    int32x4_t e = requant4(acc_e, vld1q_s32(g->mult[0]), vld1q_s32(g->base[0]),
                           vld1q_s32(g->shift[0]));
    int32x4_t o = requant4(acc_o, vld1q_s32(g->mult[1]), vld1q_s32(g->base[1]),
                           vld1q_s32(g->shift[1]));
    int16x8_t v;
    if (m->full) { /* saturate to int16 while restoring the channel order, then to int8 */
        v = vqmovntq_s32(vqmovnbq_s32(vdupq_n_s16(0), e), o);
        v = vreinterpretq_s16_s8(vqmovnbq_s16(vdupq_n_s8(0), v));
    } else {
        const int32x4_t lo = vdupq_n_s32(p->q.act_min);
        const int32x4_t hi = vdupq_n_s32(p->q.act_max);
        e = vminq_s32(vmaxq_s32(e, lo), hi);
        o = vminq_s32(vmaxq_s32(o, lo), hi);
        v = vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), e), o);
    }
    if (partial) {
        vstrbq_p_s16(out, v, pred);
    } else {
        vstrbq_s16(out, v);
    }
}

/* One output row of a group: border columns (their valid taps; for pad3, the window shifted
 * inward by one row or column onto zero weights) and the columns between (all taps,
 * consecutive). in/out: the batch's tensors at channel c (out at row out_y). */
static inline __attribute__((always_inline)) void mve_row(const mve_ctx_t *m, const int8_t *in,
                                                          int8_t *out, int32_t out_y,
                                                          int partial)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    const int32_t in_c = p->input.c;
    const int32_t k_w = p->filter.w;
    const int32_t out_c = p->output.c;
    const int16_t *const w0 = m->g->w[m->w_origin];
    int32_t in_y = out_y * p->stride_h - p->pad_top;
    int32_t ky_begin, ky_end;
    valid_taps(in_y, p->dilation_h, p->filter.h, p->input.h, &ky_begin, &ky_end);
    int32_t rows = ky_end - ky_begin;
    int32_t row_shift = 0; /* pad3: rows ky_begin .. + 3 from row in_y + row_shift */
    if (m->pad3 && rows != 3) {
        row_shift = ky_begin > 0 ? ky_begin : ky_end - 3;
    }
    const int rows_whole = rows == p->filter.h;
    const int8_t *const x_rows =
        m->pad3 ? in + (in_y + row_shift * p->dilation_h) * m->in_row
                : (rows > 0 ? in + (in_y + ky_begin * p->dilation_h) * m->in_row : in);
    const int16_t *const w_rows =
        m->pad3 ? w0 + 8 * m->w_row * row_shift : w0 + 8 * m->w_row * ky_begin;
    for (int32_t out_x = 0; out_x < p->output.w; ++out_x) {
        if (out_x >= m->x_begin && out_x < m->x_end) {
            /* the columns whose windows are inside the input horizontally */
            const int32_t x_step = p->stride_w * in_c;
            const int8_t *x = x_rows + (out_x * p->stride_w - p->pad_left) * in_c;
            int8_t *o = out + out_x * out_c;
            if (m->pad3 && rows_whole) { /* (whole and the shifts fixed at compile time) */
                for (; out_x < m->x_end; ++out_x, x += x_step, o += out_c) {
                    mve_px(m, x, w_rows, 3, 3, 1, o, partial);
                }
            } else if (m->pad3) {
                for (; out_x < m->x_end; ++out_x, x += x_step, o += out_c) {
                    mve_px(m, x, w_rows, 3, 3, 0, o, partial);
                }
            } else if (rows_whole) {
                for (; out_x < m->x_end; ++out_x, x += x_step, o += out_c) {
                    mve_px(m, x, w_rows, rows, k_w, 1, o, partial);
                }
            } else {
                for (; out_x < m->x_end; ++out_x, x += x_step, o += out_c) {
                    mve_px(m, x, w_rows, rows, k_w, 0, o, partial);
                }
            }
            if (out_x == p->output.w) {
                break;
            }
        }
        if (m->pad3) {
            continue; /* (below) */
        }
        const int32_t in_x = out_x * p->stride_w - p->pad_left;
        int32_t kx_begin, kx_end;
        valid_taps(in_x, p->dilation_w, k_w, p->input.w, &kx_begin, &kx_end);
        const int32_t cols = rows > 0 ? kx_end - kx_begin : 0;
        const int8_t *const x =
            cols > 0 ? x_rows + (in_x + kx_begin * p->dilation_w) * in_c : x_rows;
        mve_px(m, x, w_rows + 8 * kx_begin, cols > 0 ? rows : 0, cols, 0, out + out_x * out_c,
               partial);
    }
    if (m->pad3) { /* the border columns, their windows shifted inward */
        for (int32_t i = 0; i < m->borders; ++i) {
            mve_px(m, x_rows + m->border_in[i] * in_c, w_rows + 8 * m->border_w[i], 3, 3, 0,
                   out + m->border_out[i] * out_c, partial);
        }
    }
}

/* One group over the whole output (all of a batch's rows); `partial`: its channels end before
 * the eighth. */
DW_MVE_NOINLINE static void mve_group(const mve_ctx_t *m, const int8_t *in, int8_t *out)
{
    const int32_t out_row = m->p->output.w * m->p->output.c;
    for (int32_t y = 0; y < m->p->output.h; ++y, out += out_row) {
        mve_row(m, in, out, y, 0);
    }
}

/* The last group when C % 8 != 0: every position through the generic tap loops (the valid
 * taps, with the offset; compact rather than fast). */
DW_MVE_NOINLINE static void mve_group_partial(const mve_ctx_t *m, const int8_t *in, int8_t *out)
{
    const mcu_depthwise_conv_params_t *const p = m->p;
    const int32_t in_c = p->input.c;
    const int32_t k_w = p->filter.w;
    const int16_t *const w0 = m->g->w[m->w_origin];
    for (int32_t out_y = 0; out_y < p->output.h; ++out_y) {
        const int32_t in_y = out_y * p->stride_h - p->pad_top;
        int32_t ky_begin, ky_end;
        valid_taps(in_y, p->dilation_h, p->filter.h, p->input.h, &ky_begin, &ky_end);
        for (int32_t out_x = 0; out_x < p->output.w; ++out_x, out += p->output.c) {
            const int32_t in_x = out_x * p->stride_w - p->pad_left;
            int32_t kx_begin, kx_end;
            valid_taps(in_x, p->dilation_w, k_w, p->input.w, &kx_begin, &kx_end);
            const int32_t rows = kx_end > kx_begin ? ky_end - ky_begin : 0;
            const int8_t *const x =
                rows > 0 ? in + (in_y + ky_begin * p->dilation_h) * m->in_row +
                               (in_x + kx_begin * p->dilation_w) * in_c
                         : in;
            mve_px(m, x, w0 + 8 * (m->w_row * ky_begin + kx_begin), rows, kx_end - kx_begin, -1,
                   out, 1);
        }
    }
}

/* Along one axis of a 3x3 filter: whether every window has its valid taps in [1, 3), [0, 2)
 * or [0, 3) and the input holds three taps (size >= 2 * dilation + 1). */
static int mve_shifts_ok(int32_t pad, int32_t stride, int32_t dilation, int32_t size,
                         int32_t out_size)
{
    if (size < 2 * dilation + 1) {
        return 0;
    }
    for (int32_t o = 0; o < out_size; ++o) {
        int32_t begin, end;
        valid_taps(o * stride - pad, dilation, 3, size, &begin, &end);
        if (end - begin < 2) {
            return 0;
        }
    }
    return 1;
}

/* The whole convolution through the MVE path (mve_eligible). */
static void mve_conv(const mcu_depthwise_conv_params_t *p, const int8_t *input,
                     const int8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t in_w = p->input.w;
    const int32_t out_c = p->output.c;
    const int32_t in_batch = p->input.h * in_w * p->input.c;
    const int32_t out_batch = p->output.h * p->output.w * out_c;
    mve_group_t g;
    mve_ctx_t m;
    m.p = p;
    m.g = &g;
    m.in_row = in_w * p->input.c;
    m.x_row = p->dilation_h * m.in_row;
    m.x_col = p->dilation_w * p->input.c;
    m.full = p->q.act_min == MCU_INT8_MIN && p->q.act_max == MCU_INT8_MAX;
    /* output columns whose window lies inside the input horizontally: in_x >= 0 and
     * in_x + (KW - 1) * dilation_w < W_in, with in_x = out_x * stride_w - pad_left */
    const int32_t last = in_w - 1 - (p->filter.w - 1) * p->dilation_w + p->pad_left;
    m.x_begin = (p->pad_left + p->stride_w - 1) / p->stride_w;
    m.x_end = last < 0 ? 0 : last / p->stride_w + 1;
    if (m.x_end > p->output.w) {
        m.x_end = p->output.w;
    }
    if (m.x_begin > p->output.w) {
        m.x_begin = p->output.w;
    }
    if (m.x_end < m.x_begin) {
        m.x_end = m.x_begin;
    }
    const int three = p->filter.h == 3 && p->filter.w == 3;
    m.w_row = three ? 5 : p->filter.w;
    m.w_origin = three ? 6 : 0;
    /* pad3: every window sticks out by at most one tap row or column on one side, and the
     * input holds a shifted window (3 rows and 3 columns) */
    m.pad3 = three && mve_shifts_ok(p->pad_top, p->stride_h, p->dilation_h, p->input.h,
                                    p->output.h) &&
             mve_shifts_ok(p->pad_left, p->stride_w, p->dilation_w, in_w, p->output.w);
    m.borders = 0;
    for (int32_t out_x = 0; out_x < p->output.w && m.pad3; ++out_x) {
        if (out_x >= m.x_begin && out_x < m.x_end) {
            continue;
        }
        if (m.borders == DW_MVE_BORDERS) {
            m.pad3 = 0; /* (too many: the generic border path) */
            break;
        }
        const int32_t in_x = out_x * p->stride_w - p->pad_left;
        int32_t kx_begin, kx_end;
        valid_taps(in_x, p->dilation_w, 3, in_w, &kx_begin, &kx_end);
        const int32_t shift = kx_begin > 0 ? kx_begin : kx_end - 3;
        m.border_out[m.borders] = out_x;
        m.border_in[m.borders] = in_x + shift * p->dilation_w;
        m.border_w[m.borders] = shift;
        ++m.borders;
    }
    for (int32_t c = 0; c < out_c; c += 8) {
        mve_prepare(&g, p, filter, bias, c);
        m.pred = vctp16q((uint32_t)(out_c - c));
        for (int32_t b = 0; b < p->input.n; ++b) {
            if (c + 8 <= out_c) {
                mve_group(&m, input + b * in_batch + c, output + b * out_batch + c);
            } else {
                mve_group_partial(&m, input + b * in_batch + c, output + b * out_batch + c);
            }
        }
    }
}

#endif

mcu_status_t mcu_depthwise_conv2d_s8(const mcu_depthwise_conv_params_t *params,
                                     const int8_t *input, const int8_t *filter,
                                     const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_dims_t *const in_dims = &params->input;
    const mcu_dims_t *const f_dims = &params->filter;
    const mcu_dims_t *const out_dims = &params->output;
    if (!dims_valid(in_dims) || !dims_valid(f_dims) || !dims_valid(out_dims) ||
        params->depth_multiplier < 1 || f_dims->n != 1 || f_dims->c != out_dims->c ||
        out_dims->c / params->depth_multiplier != in_dims->c ||
        out_dims->c % params->depth_multiplier != 0 || out_dims->n != in_dims->n ||
        params->stride_h < 1 || params->stride_w < 1 || params->dilation_h < 1 ||
        params->dilation_w < 1 || params->pad_top < 0 || params->pad_left < 0 ||
        !quant_io_valid(&params->q) || !shifts_valid(params->shift, out_dims->c)) {
        return MCU_ERR_ARG;
    }

    const int32_t batches = in_dims->n;
    const int32_t in_h = in_dims->h;
    const int32_t in_w = in_dims->w;
    const int32_t in_c = in_dims->c;
    const int32_t k_h = f_dims->h;
    const int32_t k_w = f_dims->w;
    const int32_t out_h = out_dims->h;
    const int32_t out_w = out_dims->w;
    const int32_t out_c = out_dims->c;
    const int32_t depth_multiplier = params->depth_multiplier;
    const int32_t stride_h = params->stride_h;
    const int32_t stride_w = params->stride_w;
    const int32_t dilation_h = params->dilation_h;
    const int32_t dilation_w = params->dilation_w;
    const int32_t input_offset = params->q.input_offset;
    const int32_t in_row = in_w * in_c; /* bytes of one input row */
    int32_t first_oc = 0; /* the channels before it are done */
#if defined(MCU_DW_MVE)
    if (mve_eligible(params, bias)) {
        mve_conv(params, input, filter, bias, output);
        return MCU_OK;
    }
#endif
#if defined(MCU_DW_DSP)
    if (dsp_eligible(params, bias)) {
        dsp_conv(params, input, filter, bias, output);
        first_oc = out_c & ~(int32_t)3;
        if (first_oc == out_c) {
            return MCU_OK;
        }
    }
#endif

    for (int32_t b = 0; b < batches; ++b) {
        const int8_t *const in_batch = input + b * in_h * in_row;
        for (int32_t out_y = 0; out_y < out_h; ++out_y) {
            const int32_t in_y_origin = out_y * stride_h - params->pad_top;
            int32_t ky_begin, ky_end;
            valid_taps(in_y_origin, dilation_h, k_h, in_h, &ky_begin, &ky_end);
            for (int32_t out_x = 0; out_x < out_w; ++out_x) {
                const int32_t in_x_origin = out_x * stride_w - params->pad_left;
                int32_t kx_begin, kx_end;
                valid_taps(in_x_origin, dilation_w, k_w, in_w, &kx_begin, &kx_end);
                int8_t *const out_px = output + ((b * out_h + out_y) * out_w + out_x) * out_c;

                /* acc[oc] = sum_{ky,kx} (in[b,iy,ix,ic] + input_offset) * w[0,ky,kx,oc] + bias[oc]
                 * with ic = oc / depth_multiplier, iy = in_y_origin + ky * dilation_h,
                 * ix = in_x_origin + kx * dilation_w, over the taps inside the input only:
                 * ky in [ky_begin, ky_end), kx in [kx_begin, kx_end). */
                taps_t t;
                t.rows = kx_end > kx_begin ? ky_end - ky_begin : 0;
                t.cols = kx_end - kx_begin;
                t.x_row = dilation_h * in_row;
                t.x_col = dilation_w * in_c;
                t.w_row = k_w * out_c;
                t.w_col = out_c;
                t.x = in_batch; /* only read when rows > 0 */
                if (t.rows > 0) {
                    t.x = in_batch + (in_y_origin + ky_begin * dilation_h) * in_row +
                          (in_x_origin + kx_begin * dilation_w) * in_c;
                }
                t.w = filter + (ky_begin * k_w + kx_begin) * out_c;

                int32_t oc = first_oc;
                if (oc == 0 && depth_multiplier == 1) {
                    oc = channel_blocks(&t, params, bias, out_px);
                }
                for (; oc < out_c; ++oc) {
                    const int32_t acc = taps1(&t, oc / depth_multiplier, oc, input_offset) +
                                        (bias != NULL ? bias[oc] : 0);
                    out_px[oc] = output_stage(acc, params->multiplier[oc], params->shift[oc],
                                              &params->q);
                }
            }
        }
    }
    return MCU_OK;
}
