/*
 * mcu_depthwise_conv2d_s8_internal.h - private to the files of mcu_depthwise_conv2d_s8: the
 * dispatcher (mcu_depthwise_conv2d_s8.c), its paths (_generic.c, _dsp.c, _mve.c) and the
 * reference (_ref.c, tests only).
 *
 * The tuning constants and scratch sizes below are the one definition: the emitter reads them
 * from this file (emitter/kernels/mcu_depthwise_conv2d_s8.py) to predict the path and the scratch
 * of a layer. The scratch layouts hold int32/int16 data only, so their sizes are the same on
 * every target and on the host (checked by _Static_assert in the dispatcher).
 */
#ifndef MCU_DEPTHWISE_CONV2D_S8_INTERNAL_H
#define MCU_DEPTHWISE_CONV2D_S8_INTERNAL_H

#include <stdint.h>

#include "mcu_kernel_util.h"
#include "mcu_nn.h"

#if defined(__GNUC__)
#define DW_INLINE static inline __attribute__((always_inline))
#define DW_NOINLINE __attribute__((noinline))
#else
#define DW_INLINE static inline
#define DW_NOINLINE
#endif

/* The DSP and MVE fast paths take filters of at most this many taps (KH * KW): then
 * |acc| < 2^29 + 25 * 255 * 128 < 2^30, the range of requant2/requant4 (mcu_kernel_util.h). */
#define DW_DSP_MAX_TAPS 25
#define DW_MVE_MAX_TAPS 25

/* Scratch bytes of the fast paths (sizeof mcu_dw_dsp_scratch_t, mcu_dw_mve_scratch_t). */
#define MCU_DW_DSP_SCRATCH_BYTES 576
#define MCU_DW_MVE_SCRATCH_BYTES 560

/* The valid taps of one output position (generic path): `rows` x `cols` taps, tap (j, i) of
 * channel 0 at x + j * x_row + i * x_col in the input and w + j * w_row + i * w_col in the
 * filter. */
typedef struct {
    const int8_t *x;
    const int8_t *w;
    int32_t rows;
    int32_t cols;
    int32_t x_row;
    int32_t x_col;
    int32_t w_row;
    int32_t w_col;
} mcu_dw_taps_t;

/* ---- DSP fast path (see _dsp.c) ---- */

/* One pass of the 3x3 row pairs: two channels (lane 0 and lane 1 of every int16 pair). */
typedef struct {
    int32_t bias2[2];   /* 2 * bias */
    int32_t mult[2];    /* multiplier, >= 0 */
    int32_t base[2];    /* 2^(r - 1) + output_offset * 2^r */
    int32_t right[2];   /* r = -shift, in [1, 20] */
    int32_t wcol[7][3]; /* [2 + kx][ky]: int16 lanes 2 w[lane 0], 2 w[lane 1]; zero for kx < 0,
                         * kx > 2 */
} mcu_dw_lanes2_t;

/* The four channels c .. c + 3 of the single-row path, in accumulator order k = c, c + 2,
 * c + 1, c + 3 (the even then the odd bytes of a 4-byte load). */
typedef struct {
    int32_t bias2[4];
    int32_t mult[4];
    int32_t base[4];
    int32_t right[4];
    int32_t w[DW_DSP_MAX_TAPS][2]; /* [ky * KW + kx]: lanes (2 w[c], 2 w[c + 2]),
                                    * (2 w[c + 1], 2 w[c + 3]) */
} mcu_dw_group4_t;

/* A run of output columns of the 3x3 row-pair path: `count` positions from output column
 * out_x, the first window's input column in_x (shifted inward at a border, see
 * plan_segments in _dsp.c), weights wcol[col] (2 = unshifted). */
typedef struct {
    int32_t out_x;
    int32_t in_x;
    int32_t col;
    int32_t count;
} mcu_dw_segment_t;

#define DW_MAX_SEGMENTS 5

/* The DSP path's scratch: the current four channels, prepared once per group of four, and the
 * output columns of the 3x3 row pairs. */
typedef struct {
    mcu_dw_group4_t g;                     /* single rows */
    mcu_dw_lanes2_t l[2];                  /* row pairs: channels c, c + 2 and c + 1, c + 3 */
    mcu_dw_segment_t seg[DW_MAX_SEGMENTS]; /* row pairs: the runs of output columns */
} mcu_dw_dsp_scratch_t;

/* What every output position of one DSP pass shares. */
typedef struct {
    const mcu_depthwise_conv_params_t *p;
    const mcu_dw_lanes2_t *l; /* the current pass (row pairs) */
    const mcu_dw_group4_t *g; /* the current four channels (single rows) */
    int32_t offset2;          /* input_offset in both int16 lanes */
    int32_t in_row;           /* bytes of one input row */
    int32_t x_col;            /* dilation_w * C: bytes from one tap column to the next */
    int32_t out_row;          /* bytes of one output row */
    int32_t x_begin;          /* output columns [x_begin, x_end) have every kx inside the input */
    int32_t x_end;
    int full; /* act_min == -128 and act_max == 127 */
    mcu_dw_segment_t *seg; /* the output columns of the 3x3 row-pair path (in the scratch) */
    int32_t segments;
} mcu_dw_pass_t;

/* ---- MVE fast path (see _mve.c) ---- */

/* Eight channels c .. c + 7, prepared once per group. */
typedef struct {
    int16_t w[DW_MVE_MAX_TAPS][8]; /* [ky * KW + kx][channel] */
    int32_t bias[2][4];            /* [even/odd][lane]: channel c + 2 lane + (odd) */
    int32_t bias_full[2][4];       /* bias + input_offset * (sum of the channel's weights): the
                                    * start of a window with every tap inside the input, whose
                                    * inputs are then taken without the offset */
    int32_t mult[2][4];
    int32_t base[2][4];
    int32_t shift[2][4];
} mcu_dw_mve_scratch_t;

/* ---- the paths ---- */

/* _generic.c: output channels first_oc .. C_out - 1 of every position (first_oc is 0, or the
 * channels the DSP path left: C_out % 4 of them). Returns MCU_OK (the dispatcher's tail call). */
mcu_status_t mcu_dw_generic(const mcu_depthwise_conv_params_t *p, const int8_t *input,
                            const int8_t *filter, const int32_t *bias, int8_t *output,
                            int32_t first_oc);

/* _dsp.c: channels 0 .. 4 * floor(C / 4) - 1 of every output (mcu_depthwise_conv2d_s8_path()
 * == MCU_PATH_DSP). */
void mcu_dw_dsp(mcu_dw_dsp_scratch_t *scratch, const mcu_depthwise_conv_params_t *p,
                const int8_t *input, const int8_t *filter, const int32_t *bias, int8_t *output);

/* _dsp1d.c: whether the DSP path runs a 1-D filter (KW == 1 or KH == 1) as lines
 * (mcu_dw_dsp_lines): no padding across the lines, every line inside the input. */
int mcu_dw_dsp_line_ok(const mcu_depthwise_conv_params_t *p);

/* _dsp1d.c: the four channels s->g of every output of one batch, line by line (in, out: the
 * batch at channel c). */
void mcu_dw_dsp_lines(const mcu_dw_pass_t *s, const int8_t *in, int8_t *out);

/* _dsp.c, for the generic loops on DSP targets: acc[k] = sum over the taps of
 * (x[c + k] + input_offset) * w[c + k], k = 0..3. */
void mcu_dw_taps4_dsp(const mcu_dw_taps_t *t, int32_t c, int32_t input_offset, int32_t acc[4]);

/* Which input rows of a row pair are read: all four, or not the top/bottom one (padding). */
enum { DW_ROWS_ALL, DW_ROWS_NO_TOP, DW_ROWS_NO_BOTTOM };

/* _mve.c: every output (mcu_depthwise_conv2d_s8_path() == MCU_PATH_MVE). Returns MCU_OK. */
mcu_status_t mcu_dw_mve(mcu_dw_mve_scratch_t *scratch, const mcu_depthwise_conv_params_t *p,
                        const int8_t *input, const int8_t *filter, const int32_t *bias,
                        int8_t *output);

/* _mve.c, for the generic loops on MVE targets (depth_multiplier == 1): every channel of one
 * output position, eight at a time; returns C_out (the channels done). */
int32_t mcu_dw_channel_blocks_mve(const mcu_dw_taps_t *t, const mcu_depthwise_conv_params_t *p,
                                  const int32_t *bias, int8_t *out_px);

/* _ref.c (tests only): the reference, one output element at a time. Same contract as
 * mcu_depthwise_conv2d_s8 without scratch. */
mcu_status_t mcu_depthwise_conv2d_s8_ref(const mcu_depthwise_conv_params_t *params,
                                         const int8_t *input, const int8_t *filter,
                                         const int32_t *bias, int8_t *output);

#endif /* MCU_DEPTHWISE_CONV2D_S8_INTERNAL_H */
