/*
 * mcu_depthwise_conv2d_s8.c - int8 depthwise 2-D convolution (group == C_in), NHWC, filter
 * [1, KH, KW, C_out] with C_out = C_in * depth_multiplier: argument checks, path choice, scratch
 * size and dispatch.
 *
 * Semantics of TFLite Micro's per-channel int8 depthwise convolution and CMSIS-NN's
 * arm_depthwise_conv_s8: output channel oc = ic * depth_multiplier + m reads input channel ic
 * only; taps outside the input are skipped (padding with the input zero point). The reference
 * that reads as the spec is mcu_depthwise_conv2d_s8_ref.c (tests only).
 *
 * Paths (mcu_depthwise_conv2d_s8_path), each in its own file, each bit-exact with the reference
 * (every output channel's sum has exactly the reference's integer terms; only the order differs):
 * - _mve.c (Helium): depth_multiplier == 1, at most DW_MVE_MAX_TAPS taps and requantization in
 *   mcu_requant2's fast range for every channel; eight channels at a time over the whole output
 *   (3x3 filters on narrow outputs: sixteen, every window through a zero-point-padded row ring,
 *   _mve_ring.c).
 * - _dsp.c (DSP extension): the same conditions with
 *   DW_DSP_MAX_TAPS and at least four channels; four channels at a time over the whole output,
 *   3x3 filters in output row pairs, 1-D filters (Kx1, 1xK) as lines (_dsp1d.c); the C_out % 4
 *   tail channels run the generic loops.
 * - _generic.c: everything else, on every target: per output position the valid tap ranges,
 *   then the channels in blocks (four in plain C, four per 4-byte load with DSP, eight with MVE;
 *   depth_multiplier == 1) or one at a time.
 * Under MCU_OPTIMIZE_SIZE (mcu_config.h) it plans as on MCU_ISA_C (MCU_ISA_PLAN): generic only.
 * Scratch (mcu_depthwise_conv2d_s8_get_buffer_size): the fast paths prepare a group's weights
 * and requantization constants once, in ctx->buf (MVE: MCU_DW_MVE_GROUP_BYTES(KH * KW), 304
 * bytes for 3x3, 560 for 5x5; then the ring, dw_mve_ring_bytes()); the generic path needs none.
 *
 * mcu_depthwise_conv2d_s8_in_place writes the output over its input (TinyEngine's in-place
 * depthwise, by blocks of channels rather than one): each block of MCU_DW_IN_PLACE_CHANNELS channels
 * is copied out of the tensor with its weights, computed in the scratch by the same
 * path as a call of that many channels, and copied back into the channels it came from, which no
 * later block reads. Extra cost: the copies (two words a pixel per block) and one call per block.
 */
#include <stdint.h>
#include <string.h>

#include "mcu_depthwise_conv2d_s8_internal.h"

/* MCU_DW_DSP_SCRATCH_BYTES is sizeof mcu_dw_dsp_scratch_t, and sizeof mcu_dw_mve_scratch_t a
 * group of DW_MVE_MAX_TAPS taps (a C99 compile-time check: a negative array size fails the
 * build) */
typedef char mcu_dw_dsp_scratch_bytes_ok
    [sizeof(mcu_dw_dsp_scratch_t) == MCU_DW_DSP_SCRATCH_BYTES ? 1 : -1];
typedef char mcu_dw_mve_scratch_bytes_ok
    [sizeof(mcu_dw_mve_scratch_t) == MCU_DW_MVE_GROUP_BYTES(DW_MVE_MAX_TAPS) ? 1 : -1];

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

/* mcu_requant2_ok_q() of every channel, four at a time: shift + 20 in [0, 19] ([0, 20] for
 * onnxruntime's rounding) and bias + 2^29 - 1 in [0, 2^30 - 2] as unsigned, multiplier >= 0
 * (> 0 for onnxruntime's rounding: fast_round_ok() gives every channel of such a layer one). */
static int requant2_ok_all(const int32_t *mult, const int32_t *shift, const int32_t *bias,
                           int32_t n, int32_t rounding)
{
    const uint32_t top = rounding == MCU_ROUND_NEAREST_NO_TIE ? 20u : 19u;
    mve_pred16_t bad = 0;
    for (int32_t c = 0; c < n; c += 4) {
        const mve_pred16_t p = vctp32q((uint32_t)(n - c));
        const int32x4_t s = vaddq_n_s32(vldrwq_z_s32(shift + c, p), 20);
        const int32x4_t b = bias != NULL ? vldrwq_z_s32(bias + c, p) : vdupq_n_s32(0);
        const int32x4_t b1 = vaddq_n_s32(b, (1 << 29) - 1);
        bad |= vcmphiq_m_n_u32(vreinterpretq_u32_s32(s), top, p);
        bad |= vcmpltq_m_n_s32(vldrwq_z_s32(mult + c, p), 0, p);
        bad |= vcmphiq_m_n_u32(vreinterpretq_u32_s32(b1), (1u << 30) - 2u, p);
    }
    return bad == 0;
}

/* shifts_valid() (mcu_kernel_util.h) four at a time: shift + 31 in [0, 61] as unsigned. */
static int shifts_valid4(const int32_t *shift, int32_t n)
{
    mve_pred16_t bad = 0;
    for (int32_t c = 0; c < n; c += 4) {
        const mve_pred16_t p = vctp32q((uint32_t)(n - c));
        const int32x4_t s = vaddq_n_s32(vldrwq_z_s32(shift + c, p), 31);
        bad |= vcmphiq_m_n_u32(vreinterpretq_u32_s32(s), 61u, p);
    }
    return bad == 0;
}
#define DW_SHIFTS_VALID shifts_valid4
#else
#define DW_SHIFTS_VALID shifts_valid
#endif

int mcu_depthwise_conv2d_s8_channels_fast(const mcu_depthwise_conv_params_t *p,
                                          const int32_t *bias)
{
#if MCU_ISA_NATIVE == MCU_ISA_MVE
    return requant2_ok_all(p->multiplier, p->shift, bias, p->output.c, p->q.rounding);
#endif
    for (int32_t c = 0; c < p->output.c; ++c) {
        if (!mcu_requant2_ok_q(p->multiplier[c], p->shift[c], bias != NULL ? bias[c] : 0,
                               p->q.rounding)) {
            return 0;
        }
    }
    return 1;
}

/* No unproven onnxruntime rounding, and mcu_requant2_ok_q() (mcu_requant.h) for every output
 * channel (params->channels_fast: proven at build time). */
static int requant_fast(const mcu_depthwise_conv_params_t *p, const int32_t *bias)
{
    if (p->q.rounding == MCU_ROUND_NEAREST_EVEN) {
        return 0;
    }
    return p->channels_fast || mcu_depthwise_conv2d_s8_channels_fast(p, bias);
}

int32_t mcu_depthwise_conv2d_s8_path(const mcu_depthwise_conv_params_t *params,
                                     const int32_t *bias, int32_t isa)
{
    const int32_t max_taps = isa == MCU_ISA_MVE ? DW_MVE_MAX_TAPS : DW_DSP_MAX_TAPS;
    if ((isa != MCU_ISA_DSP && isa != MCU_ISA_MVE) || params == NULL ||
        params->multiplier == NULL || params->shift == NULL || params->depth_multiplier != 1 ||
        (isa == MCU_ISA_DSP && params->output.c < 4) || params->filter.h > max_taps ||
        params->filter.w > max_taps || params->filter.h * params->filter.w > max_taps ||
        !requant_fast(params, bias)) {
        return MCU_PATH_GENERIC;
    }
    return isa == MCU_ISA_MVE ? MCU_PATH_MVE : MCU_PATH_DSP;
}

/* Scratch bytes of a path (mcu_depthwise_conv2d_s8_path's value); on MVE a group of the filter's
 * taps, and the ring. */
static int32_t path_scratch(const mcu_depthwise_conv_params_t *params, int32_t path)
{
    return path == MCU_PATH_DSP ? MCU_DW_DSP_SCRATCH_BYTES
           : path == MCU_PATH_MVE
               ? MCU_DW_MVE_GROUP_BYTES(params->filter.h * params->filter.w) +
                     dw_mve_ring_bytes(params)
               : 0;
}

int32_t mcu_depthwise_conv2d_s8_get_buffer_size(const mcu_depthwise_conv_params_t *params,
                                                const int32_t *bias, int32_t isa)
{
    return path_scratch(params, mcu_depthwise_conv2d_s8_path(params, bias, isa));
}

/* The scratch of `size` bytes (at least 4-byte aligned) from ctx, NULL when ctx holds less. */
static void *scratch_of(const mcu_context_t *ctx, int32_t size)
{
    if (ctx == NULL || ctx->buf == NULL || ctx->size < size ||
        ((uintptr_t)ctx->buf & 3u) != 0) {
        return NULL;
    }
    return ctx->buf;
}

/* The lean call's path on `isa`: the DSP path's lean variant where the fast path is DSP and its
 * groups are prepared at build time (params->dsp_groups) or its scratch (mcu_dw_dsp_lean_bytes) is
 * at most DW_DSP_LEAN_MAX_BYTES; the MVE path where it is MVE and its groups are prepared at build
 * time (params->mve_groups); else the generic loops. */
int32_t mcu_depthwise_conv2d_s8_lean_path(const mcu_depthwise_conv_params_t *params,
                                          const int32_t *bias, int32_t isa)
{
    const int32_t path = mcu_depthwise_conv2d_s8_path(params, bias, isa);
    if (path == MCU_PATH_DSP && (params->dsp_groups != NULL ||
                                 mcu_dw_dsp_lean_bytes(params) <= DW_DSP_LEAN_MAX_BYTES)) {
        return MCU_PATH_DSP;
    }
    /* the MVE path from build-time groups (no scratch, no ring) */
    return path == MCU_PATH_MVE && params->mve_groups != NULL ? MCU_PATH_MVE : MCU_PATH_GENERIC;
}

int32_t mcu_depthwise_conv2d_s8_lean_buffer_size(const mcu_depthwise_conv_params_t *params,
                                                 const int32_t *bias, int32_t isa)
{
    return mcu_depthwise_conv2d_s8_lean_path(params, bias, isa) == MCU_PATH_DSP &&
                   params->dsp_groups == NULL
               ? mcu_dw_dsp_lean_bytes(params)
               : 0;
}

/* The call on the paths of `isa`: MCU_ISA_NATIVE, or MCU_ISA_C for the generic path; lean: the
 * lean call's (mcu_depthwise_conv2d_s8_lean_path). */
static mcu_status_t depthwise(const mcu_context_t *ctx, const mcu_depthwise_conv_params_t *params,
                              const int8_t *input, const int8_t *filter, const int32_t *bias,
                              int8_t *output, int32_t isa, int lean, mcu_dw_dsp_lean3x3_fn lean3x3)
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
        !quant_io_valid(&params->q)) {
        return MCU_ERR_ARG;
    }
    /* (the fast paths' mcu_requant2_ok_q() shifts, in [-20, 0], are valid) */
    const int32_t path = lean ? mcu_depthwise_conv2d_s8_lean_path(params, bias, isa)
                              : mcu_depthwise_conv2d_s8_path(params, bias, isa);
    if (path == MCU_PATH_GENERIC && !DW_SHIFTS_VALID(params->shift, out_dims->c)) {
        return MCU_ERR_ARG;
    }
    const int32_t size = lean ? mcu_depthwise_conv2d_s8_lean_buffer_size(params, bias, isa)
                              : path_scratch(params, path);
    void *const scratch = scratch_of(ctx, size);
    if (path != MCU_PATH_GENERIC && size > 0 && scratch == NULL) {
        return MCU_ERR_SCRATCH;
    }
    int32_t first_oc = 0; /* the channels before it are done */
    (void)lean3x3; /* (the DSP path's) */
#if MCU_ISA_PLAN == MCU_ISA_MVE
    if (path == MCU_PATH_MVE) {
        return mcu_dw_mve((mcu_dw_mve_scratch_t *)scratch, params, input, filter, bias, output,
                          lean ? params->mve_groups : NULL);
    }
#elif MCU_ISA_PLAN == MCU_ISA_DSP
    if (path == MCU_PATH_DSP) {
        mcu_dw_dsp(scratch, params, input, filter, bias, output, lean, lean3x3);
        first_oc = out_dims->c & ~(int32_t)3;
        if (first_oc == out_dims->c) {
            return MCU_OK;
        }
    }
#endif
    return mcu_dw_generic(params, input, filter, bias, output, first_oc);
}

mcu_status_t mcu_depthwise_conv2d_s8(const mcu_context_t *ctx,
                                     const mcu_depthwise_conv_params_t *params,
                                     const int8_t *input, const int8_t *filter,
                                     const int32_t *bias, int8_t *output)
{
    return depthwise(ctx, params, input, filter, bias, output, MCU_ISA_PLAN, 0, NULL);
}

mcu_status_t mcu_depthwise_conv2d_s8_lean(const mcu_context_t *ctx,
                                          const mcu_depthwise_conv_params_t *params,
                                          const int8_t *input, const int8_t *filter,
                                          const int32_t *bias, int8_t *output)
{
#if MCU_ISA_PLAN == MCU_ISA_DSP
    return depthwise(ctx, params, input, filter, bias, output, MCU_ISA_PLAN, 1, mcu_dw_dsp_shifted);
#else
    return depthwise(ctx, params, input, filter, bias, output, MCU_ISA_PLAN, 1, NULL);
#endif
}

/* -- the output over its input: channel blocks through the scratch -- */

static int32_t round4(int32_t n)
{
    return (n + 3) & ~(int32_t)3;
}

/* The parameters of channels [c0, c0 + b) alone (depth_multiplier 1). */
static mcu_depthwise_conv_params_t block_params(const mcu_depthwise_conv_params_t *p, int32_t c0,
                                                int32_t b)
{
    mcu_depthwise_conv_params_t s = *p;
    s.input.c = b;
    s.filter.c = b;
    s.output.c = b;
    s.multiplier = p->multiplier + c0;
    s.shift = p->shift + c0;
    return s;
}

int32_t mcu_depthwise_conv2d_s8_in_place_get_buffer_size(const mcu_depthwise_conv_params_t *params,
                                                         const int32_t *bias, int32_t isa)
{
    const int32_t block = MCU_DW_IN_PLACE_CHANNELS;
    const int32_t c = params->output.c;
    int32_t most = 0;
    for (int32_t c0 = 0; c0 < c; c0 += block) {
        const int32_t b = c - c0 < block ? c - c0 : block;
        const mcu_depthwise_conv_params_t sub = block_params(params, c0, b);
        const int32_t size =
            mcu_depthwise_conv2d_s8_get_buffer_size(&sub, bias != NULL ? bias + c0 : NULL, isa);
        most = size > most ? size : most;
    }
    const int32_t b = c < block ? c : block;
    return round4(most) + round4(params->filter.h * params->filter.w * b) +
           round4(params->input.n * params->input.h * params->input.w * b) +
           params->output.n * params->output.h * params->output.w * b;
}

/* n runs of 4 bytes (a word), src_step and dst_step apart, two a step */
static void copy_words(int8_t *dst, int32_t dst_step, const int8_t *src, int32_t src_step, int32_t n)
{
    for (; n >= 2; n -= 2, dst += 2 * dst_step, src += 2 * src_step) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + src_step, 4);
        memcpy(dst, &a, 4);
        memcpy(dst + dst_step, &b, 4);
    }
    if (n > 0) {
        uint32_t a;
        memcpy(&a, src, 4);
        memcpy(dst, &a, 4);
    }
}

/* n runs of b bytes, src_step and dst_step apart (word by word where b is a multiple of 4) */
static void copy_runs(int8_t *dst, int32_t dst_step, const int8_t *src, int32_t src_step, int32_t n,
                      int32_t b)
{
    if ((b & 3) == 0) {
        for (int32_t j = 0; j < b; j += 4) {
            copy_words(dst + j, dst_step, src + j, src_step, n);
        }
        return;
    }
    for (; n > 0; --n, dst += dst_step, src += src_step) {
        for (int32_t j = 0; j < b; ++j) {
            dst[j] = src[j];
        }
    }
}

mcu_status_t mcu_depthwise_conv2d_s8_in_place(const mcu_context_t *ctx,
                                              const mcu_depthwise_conv_params_t *params,
                                              const int8_t *input, const int8_t *filter,
                                              const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL || params->depth_multiplier != 1 ||
        !dims_valid(&params->input) || !dims_valid(&params->filter) ||
        params->output.n != params->input.n || params->output.h != params->input.h ||
        params->output.w != params->input.w || params->output.c != params->input.c) {
        return MCU_ERR_ARG;
    }
    const int32_t need = mcu_depthwise_conv2d_s8_in_place_get_buffer_size(params, bias, MCU_ISA_PLAN);
    int8_t *const buf = (int8_t *)scratch_of(ctx, need);
    if (buf == NULL) {
        return MCU_ERR_SCRATCH;
    }
    const int32_t block = MCU_DW_IN_PLACE_CHANNELS;
    const int32_t c = params->output.c;
    const int32_t taps = params->filter.h * params->filter.w;
    const int32_t pixels = params->input.n * params->input.h * params->input.w;
    const int32_t b_most = c < block ? c : block;
    const int32_t sub_size = need - round4(taps * b_most) - round4(pixels * b_most) - pixels * b_most;
    int8_t *const w = buf + sub_size;
    int8_t *const x = w + round4(taps * b_most);
    int8_t *const y = x + round4(pixels * b_most);
    const mcu_context_t sub_ctx = {sub_size > 0 ? buf : NULL, sub_size};
    for (int32_t c0 = 0; c0 < c; c0 += block) {
        const int32_t b = c - c0 < block ? c - c0 : block;
        const mcu_depthwise_conv_params_t sub = block_params(params, c0, b);
        copy_runs(w, b, filter + c0, c, taps, b);
        copy_runs(x, b, input + c0, c, pixels, b);
        const mcu_status_t st =
            depthwise(&sub_ctx, &sub, x, w, bias != NULL ? bias + c0 : NULL, y, MCU_ISA_PLAN, 0, NULL);
        if (st != MCU_OK) {
            return st;
        }
        copy_runs(output + c0, c, y, b, pixels, b);
    }
    return MCU_OK;
}

/* -- the output over its input in one whole call: how far below it must start -- */

/* The last output row (or column) whose window reads input row (column) i: a window of `taps` taps,
 * `out` outputs; -1 when none reads it. */
static int32_t last_reader(int32_t i, int32_t pad, int32_t stride, int32_t dilation, int32_t taps,
                           int32_t out)
{
    int32_t last = -1;
    for (int32_t k = 0; k < taps; ++k) {
        const int32_t o = i + pad - k * dilation;
        if (o >= 0 && o % stride == 0 && o / stride < out && o / stride > last) {
            last = o / stride;
        }
    }
    return last;
}

/* The orders in which the paths write one channel's outputs, each output after every input of its
 * window is read (reading a later window early, as the MVE ring does, only helps):
 * DW_BY_ROWS: row by row, each left to right (the generic and MVE paths; the DSP path's row sweeps,
 * 1xK lines and tail channels). DW_BY_PAIRS: the DSP path's 3x3 row pairs, rows y and y + 1 column
 * by column (mcu_dw_dsp_pair_at), other rows alone. DW_BY_COLUMNS: the DSP path's Kx1 lines, column
 * by column, each top down. */
enum { DW_BY_ROWS, DW_BY_PAIRS, DW_BY_COLUMNS, DW_BY_ROWS_SHIFTED };

/* DW_BY_ROWS_SHIFTED (the lean call's 3x3 variant, mcu_dw_dsp_lean_shifted): rows, but a window one
 * column out reads the three columns inside: the last output column reading input column i. */
static int32_t last_shifted_reader(int32_t i, const mcu_depthwise_conv_params_t *p)
{
    for (int32_t x = p->output.w - 1; x >= 0; --x) {
        const int32_t in_x = x * p->stride_w - p->pad_left;
        const int32_t b = in_x < 0 ? 0 : (in_x > p->input.w - 3 ? p->input.w - 3 : in_x);
        if (b <= i && i <= b + 2) {
            return x;
        }
    }
    return -1;
}

/* Whether, in `order`, every output written d positions below the input lands where no output still
 * to come reads. A block is one row (a pair of rows; one column for DW_BY_COLUMNS), swept across;
 * when the sweep is at `a`, the earlier blocks and the block's outputs up to `a` are done. Readers
 * of an input pixel are the outputs of its reader rows x reader columns: all done when the last of
 * them is. Channels never read one another's input (depth_multiplier 1). */
static int overlap_ok(const mcu_depthwise_conv_params_t *p, int order, int32_t d)
{
    const int32_t out_h = p->output.h;
    const int32_t out_w = p->output.w;
    const int32_t in_w = p->input.w;
    const int32_t in_px = p->input.h * in_w;
    const int cols = order == DW_BY_COLUMNS;
    const int32_t blocks = cols ? out_w : out_h;
    const int32_t sweep = cols ? out_h : out_w;
    for (int32_t b0 = 0, b1 = 0; b0 < blocks; b0 = b1 + 1) {
        b1 = order == DW_BY_PAIRS && mcu_dw_dsp_pair_at(b0, p->pad_top, p->input.h, out_h) ? b0 + 1
                                                                                            : b0;
        for (int32_t a = 0; a < sweep; ++a) {
            for (int32_t b = b0; b <= b1; ++b) {
                const int32_t j = (cols ? a * out_w + b : b * out_w + a) - d;
                if (j < 0 || j >= in_px) {
                    continue;
                }
                const int32_t ry = last_reader(j / in_w, p->pad_top, p->stride_h, p->dilation_h,
                                               p->filter.h, out_h);
                const int32_t rx = order == DW_BY_ROWS_SHIFTED
                                       ? last_shifted_reader(j % in_w, p)
                                       : last_reader(j % in_w, p->pad_left, p->stride_w,
                                                     p->dilation_w, p->filter.w, out_w);
                if (ry < 0 || rx < 0) {
                    continue;
                }
                const int32_t r_block = cols ? rx : ry;
                const int32_t r_sweep = cols ? ry : rx;
                if (r_block > b1 || (r_block >= b0 && r_sweep > a)) {
                    return 0;
                }
            }
        }
    }
    return 1;
}

/* overlap_down() of the whole call (lean 0) or of the lean call (lean 1: no row pairs) */
static int32_t overlap_down(const mcu_depthwise_conv_params_t *params, const int32_t *bias,
                            int32_t isa, int lean)
{
    if (params == NULL || params->depth_multiplier != 1 || params->input.n != 1 ||
        params->output.n != 1 || params->input.c != params->output.c ||
        !dims_valid(&params->input) || !dims_valid(&params->filter) ||
        !dims_valid(&params->output) || params->stride_h < 1 || params->stride_w < 1 ||
        params->dilation_h < 1 || params->dilation_w < 1 || params->pad_top < 0 ||
        params->pad_left < 0) {
        return -1;
    }
    /* the orders the path may take: rows always (the generic loops, the DSP path's tail channels) */
    int by_pairs = 0, by_columns = 0, by_shifted = 0;
    const int32_t path = lean ? mcu_depthwise_conv2d_s8_lean_path(params, bias, isa)
                              : mcu_depthwise_conv2d_s8_path(params, bias, isa);
    if (path == MCU_PATH_DSP) {
        by_pairs = !lean && params->filter.h == 3 && params->filter.w == 3 &&
                   params->stride_h == 1 && params->dilation_h == 1;
        by_columns = params->filter.w == 1 && mcu_dw_dsp_line_ok(params);
        by_shifted = lean && mcu_dw_dsp_lean_shifted(params);
    }
    const int32_t most = params->output.h * params->output.w; /* from there on, no write lands on it */
    int32_t d = 0;
    while (d < most && (!overlap_ok(params, DW_BY_ROWS, d) ||
                        (by_pairs && !overlap_ok(params, DW_BY_PAIRS, d)) ||
                        (by_shifted && !overlap_ok(params, DW_BY_ROWS_SHIFTED, d)) ||
                        (by_columns && !overlap_ok(params, DW_BY_COLUMNS, d)))) {
        ++d;
    }
    return d * params->output.c;
}

int32_t mcu_depthwise_conv2d_s8_overlap_down(const mcu_depthwise_conv_params_t *params,
                                             const int32_t *bias, int32_t isa)
{
    return overlap_down(params, bias, isa, 0);
}

int32_t mcu_depthwise_conv2d_s8_lean_overlap_down(const mcu_depthwise_conv_params_t *params,
                                                  const int32_t *bias, int32_t isa)
{
    return overlap_down(params, bias, isa, 1);
}
