/*
 * mcu_conv2d_s8_generic.c - the generic path of mcu_conv2d_s8 (every target; see
 * mcu_conv2d_s8.c for the dispatch and the scratch it is given).
 *
 * - The input offset leaves the inner loops: sum (x + off) * w = sum x * w + off * sum w. For a
 *   block of up to MCU_CONV_OC_BLOCK output channels, corr[oc] = bias[oc] + off * (sum of all the
 *   channel's weights) is computed once; the loops then only multiply raw int8 values.
 * - Per output position the valid tap ranges [ky_begin, ky_end) x [kx_begin, kx_end) are computed
 *   once. The window is read as one contiguous vector of KH * KW * C_in bytes (the patch):
 *   straight from the input when it is one run there (1x1 and 1xN filters inside the input: a
 *   plain matrix product), else gathered into scratch, with the input zero point (-off) in the
 *   padding taps, so that they add -off * w and corr's off * w cancels them. Filters larger than
 *   MCU_CONV_PATCH_BYTES are read run by run from the input (a run is a filter row of adjacent
 *   taps, (kx, ic) contiguous in NHWC and OHWI); at a border the weights of the missing taps are
 *   summed and off times that sum is taken back out.
 * - Four output channels are computed together (mcu_dot4_s8), so every input byte is loaded once
 *   for four MACs.
 */
#include <stdint.h>
#include <string.h>

#include "../support/mcu_dot_s8.h"
#include "mcu_conv2d_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

/* out_px[oc] = v, or with a residual Add the Add of v and the skip element at the same place */
static inline void put(const mcu_conv_fuse_t *fuse, int8_t *out_px, int32_t oc, int32_t v)
{
    if (fuse == NULL) {
        out_px[oc] = (int8_t)v;
    } else {
        mcu_conv2d_s8_fuse_store(fuse, out_px + oc, 1, &v, 1);
    }
}

/* store4: out_px[oc + r] = mcu_output_stage(acc[r] + corr[r], multiplier[oc + r], shift[oc + r]),
 * r = 0..3 (put() with a residual Add) */
#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

/* Four output channels: correction added, requantized (mcu_output_stage4), stored. */
static void store4(const int32_t acc[4], const int32_t corr[4], int32_t oc,
                   const mcu_conv_params_t *params, int8_t *out_px, const mcu_conv_fuse_t *fuse)
{
    const int32x4_t v = vaddq_s32(vldrwq_s32(acc), vldrwq_s32(corr));
    const int32x4_t q = mcu_output_stage4(v, vldrwq_s32(params->multiplier + oc),
                                      vldrwq_s32(params->shift + oc), &params->q);
    if (fuse == NULL) {
        vstrbq_s32(out_px + oc, q);
        return;
    }
    int32_t vals[4];
    vstrwq_s32(vals, q);
    mcu_conv2d_s8_fuse_store(fuse, out_px + oc, 1, vals, 4);
}

#else

static void store4(const int32_t acc[4], const int32_t corr[4], int32_t oc,
                   const mcu_conv_params_t *params, int8_t *out_px, const mcu_conv_fuse_t *fuse)
{
    /* local copies: an int8_t store may alias anything, which would reload them per output */
    const mcu_quant_io_t q = params->q;
    const int32_t *const multiplier = params->multiplier + oc;
    const int32_t *const shift = params->shift + oc;
    int8_t *const out = out_px + oc;
    if (fuse != NULL) {
        int32_t vals[4];
        for (int32_t r = 0; r < 4; ++r) {
            vals[r] = mcu_output_stage(mcu_conv_add_wrap(acc[r], corr[r]), multiplier[r], shift[r], &q);
        }
        mcu_conv2d_s8_fuse_store(fuse, out_px + oc, 1, vals, 4);
    } else if (q.rounding == MCU_ROUND_TFLITE) {
        for (int32_t r = 0; r < 4; ++r) {
            out[r] = mcu_output_stage_tflite(mcu_conv_add_wrap(acc[r], corr[r]), multiplier[r],
                                         shift[r], &q);
        }
    } else {
        for (int32_t r = 0; r < 4; ++r) {
            out[r] = mcu_output_stage_rne(mcu_conv_add_wrap(acc[r], corr[r]), multiplier[r], shift[r],
                                      &q);
        }
    }
}

#endif

#if defined(MCU_DOT_PAIRS)
/* store4 at one or two positions (out_b NULL: one; acc[4..7] the second's) for realistic
 * constants without a residual Add (c->requant2): mcu_output_stage_requant2's arithmetic, each
 * channel's constants and base read once for both positions, four channels written out; inline
 * (the pairs and the patch loops keep their registers). */
MCU_CONV_INLINE void store_requant2(const int32_t *acc, const int32_t *corr, int32_t oc,
                                    const mcu_conv_params_t *params, int8_t *out_a, int8_t *out_b)
{
    const int32_t lo = params->q.act_min;
    const int32_t hi = params->q.act_max;
    const int32_t offset = params->q.output_offset;
    const int32_t *const multiplier = params->multiplier + oc;
    const int32_t *const shift = params->shift + oc;
#define CONV_RQ2_ONE(k)                                                                          \
    do {                                                                                         \
        const int32_t m = multiplier[k];                                                         \
        const int32_t base = mcu_requant2_base(shift[k], offset);                                \
        const int32_t r = -shift[k];                                                             \
        out_a[oc + (k)] = (int8_t)mcu_clamp_s32(                                                 \
            mcu_requant2_mul(mcu_conv_add_wrap(acc[k], corr[k]), m, r, base), lo, hi);           \
        if (out_b != NULL) {                                                                     \
            out_b[oc + (k)] = (int8_t)mcu_clamp_s32(                                             \
                mcu_requant2_mul(mcu_conv_add_wrap(acc[4 + (k)], corr[k]), m, r, base), lo, hi); \
        }                                                                                        \
    } while (0)
    CONV_RQ2_ONE(0);
    CONV_RQ2_ONE(1);
    CONV_RQ2_ONE(2);
    CONV_RQ2_ONE(3);
#undef CONV_RQ2_ONE
}
#endif

/* Every channel of the block at one output position from its patch (filter_size contiguous
 * bytes whose padding taps hold the input zero point): acc = sum patch * w + corr. */
static void pixel_from_patch(const mcu_conv_block_t *c, const int8_t *patch, int8_t *out_px)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t k = c->filter_size;
    int32_t oc = c->oc_base;
    for (; oc + 4 <= c->oc_end; oc += 4) {
        int32_t acc[4] = {0, 0, 0, 0};
        mcu_dot4_s8(patch, c->filter + oc * k, k, k, acc);
#if defined(MCU_DOT_PAIRS)
        if (c->requant2) {
            store_requant2(acc, c->corr + (oc - c->oc_base), oc, p, out_px, NULL);
            continue;
        }
#endif
        store4(acc, c->corr + (oc - c->oc_base), oc, p, out_px, c->fuse);
    }
    for (; oc < c->oc_end; ++oc) {
        const int32_t acc = mcu_conv_add_wrap(mcu_dot1_s8(patch, c->filter + oc * k, k),
                                              c->corr[oc - c->oc_base]);
        put(c->fuse, out_px, oc, mcu_output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q));
    }
}

/* Sum of the weights of filter `w` at the taps outside the window's valid ranges (the taps a
 * border position skips). */
static int32_t missing_weights(const mcu_conv_block_t *c, const mcu_conv_window_t *win,
                               const int8_t *w)
{
    const int32_t in_c = c->params->input.c;
    const int32_t k_h = c->params->filter.h;
    const int32_t k_w = c->params->filter.w;
    const int32_t w_row = k_w * in_c;
    int32_t sum = 0;
    if (win->ky_begin > 0) {
        sum += mcu_sum_s8(w, win->ky_begin * w_row);
    }
    if (win->ky_end < k_h) {
        sum += mcu_sum_s8(w + win->ky_end * w_row, (k_h - win->ky_end) * w_row);
    }
    for (int32_t ky = win->ky_begin; ky < win->ky_end; ++ky) {
        if (win->kx_begin > 0) {
            sum += mcu_sum_s8(w + ky * w_row, win->kx_begin * in_c);
        }
        if (win->kx_end < k_w) {
            sum += mcu_sum_s8(w + ky * w_row + win->kx_end * in_c, (k_w - win->kx_end) * in_c);
        }
    }
    return sum;
}

/* Every channel of the block at one output position, for filters too large for the patch: one
 * dot product per run of valid taps (ky, kx, 0..C_in-1), all the kx of one ky being one run
 * when dilation_w == 1. The padding taps are missing from these sums, so at a border
 * input_offset * (their weights' sum) is taken back out of corr. */
MCU_CONV_NOINLINE static void pixel_from_runs(const mcu_conv_block_t *c,
                                              const mcu_conv_window_t *win, int8_t *out_px)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_c = p->input.c;
    const int32_t k = c->filter_size;
    const int32_t cols = win->kx_end - win->kx_begin;
    const int32_t rows = cols > 0 ? win->ky_end - win->ky_begin : 0;
    const int full = rows == p->filter.h && cols == p->filter.w;
    const int32_t runs_per_row = p->dilation_w == 1 ? 1 : cols;
    const int32_t run_len = p->dilation_w == 1 ? cols * in_c : in_c;
    const int32_t x_run_step = p->dilation_w * in_c;
    const int32_t x_row_step = p->dilation_h * c->in_row;
    const int32_t w_row_step = p->filter.w * in_c;
    const int8_t *x_first = win->in_batch; /* only read when rows > 0 */
    if (rows > 0) {
        x_first = win->in_batch + (win->y0 + win->ky_begin * p->dilation_h) * c->in_row +
                  (win->x0 + win->kx_begin * p->dilation_w) * in_c;
    }
    const int8_t *const w_first = c->filter + win->ky_begin * w_row_step + win->kx_begin * in_c;

    for (int32_t oc = c->oc_base; oc < c->oc_end; oc += 4) {
        const int32_t group = c->oc_end - oc < 4 ? c->oc_end - oc : 4;
        int32_t acc[4] = {0, 0, 0, 0};
        for (int32_t j = 0; j < rows; ++j) {
            for (int32_t r = 0; r < runs_per_row; ++r) {
                const int8_t *const x = x_first + j * x_row_step + r * x_run_step;
                const int8_t *const w = w_first + oc * k + j * w_row_step + r * in_c;
                if (group == 4) {
                    mcu_dot4_s8(x, w, k, run_len, acc);
                } else {
                    for (int32_t g = 0; g < group; ++g) {
                        acc[g] = mcu_conv_add_wrap(acc[g], mcu_dot1_s8(x, w + g * k, run_len));
                    }
                }
            }
        }
        int32_t corr[4];
        for (int32_t g = 0; g < group; ++g) {
            const uint32_t missing =
                full ? 0u : (uint32_t)missing_weights(c, win, c->filter + (oc + g) * k);
            corr[g] = mcu_conv_add_wrap(c->corr[oc + g - c->oc_base],
                                        (int32_t)(0u - (uint32_t)p->q.input_offset * missing));
        }
        if (group == 4) {
            store4(acc, corr, oc, p, out_px, c->fuse);
        } else {
            for (int32_t g = 0; g < group; ++g) {
                put(c->fuse, out_px, oc + g,
                    mcu_output_stage(mcu_conv_add_wrap(acc[g], corr[g]), p->multiplier[oc + g],
                                 p->shift[oc + g], &p->q));
            }
        }
    }
}

#if defined(MCU_DOT_PAIRS)
/* Every channel of the block at two output positions whose windows lie inside the input
 * (dilation_w == 1), or at one (xb == NULL): the windows read in place, row by row (one run of
 * KW * C_in bytes per filter row, the whole window when its rows are adjacent), each weight byte
 * loaded once for both positions (mcu_dot4x2_rows_s8). xa, xb: the windows' first taps. */
MCU_CONV_NOINLINE static void pixel_rows(const mcu_conv_block_t *c, const int8_t *xa,
                                         const int8_t *xb, int8_t *out_a, int8_t *out_b)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t k = c->filter_size;
    const int32_t x_step = p->dilation_h * c->in_row;
    int32_t run = p->filter.w * p->input.c;
    int32_t rows = p->filter.h;
    if (rows == 1 || run == x_step) {
        run = k;
        rows = 1;
    }
    int32_t oc = c->oc_base;
    for (; oc + 4 <= c->oc_end; oc += 4) {
        const int8_t *const w = c->filter + oc * k;
        const int32_t *const corr = c->corr + (oc - c->oc_base);
        int32_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (xb != NULL) {
            mcu_dot4x2_rows_s8(xa, xb, w, k, rows, run, x_step, acc);
        } else {
            for (int32_t j = 0; j < rows; ++j) {
                mcu_dot4_s8(xa + j * x_step, w + j * run, k, run, acc);
            }
        }
        if (c->requant2) {
            store_requant2(acc, corr, oc, p, out_a, out_b);
        } else {
            store4(acc, corr, oc, p, out_a, c->fuse);
            if (xb != NULL) {
                store4(acc + 4, corr, oc, p, out_b, c->fuse);
            }
        }
    }
    for (; oc < c->oc_end; ++oc) {
        const int8_t *const w = c->filter + oc * k;
        for (int32_t pos = 0; pos < (xb != NULL ? 2 : 1); ++pos) {
            const int8_t *const x = pos == 0 ? xa : xb;
            int32_t acc = c->corr[oc - c->oc_base];
            for (int32_t j = 0; j < rows; ++j) {
                acc = mcu_conv_add_wrap(acc, mcu_dot1_s8(x + j * x_step, w + j * run, run));
            }
            put(c->fuse, pos == 0 ? out_a : out_b, oc,
                mcu_output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q));
        }
    }
}
#endif

/* One block of output channels (c->corr filled) at every batch and output position. */
MCU_CONV_NOINLINE static void conv_block(const mcu_conv_block_t *c, const int8_t *input,
                                         int8_t *output, int8_t *patch_buf)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_h = p->input.h;
    const int32_t in_w = p->input.w;
    const int32_t in_c = p->input.c;
    const int32_t k_h = p->filter.h;
    const int32_t k_w = p->filter.w;
    const int32_t out_h = p->output.h;
    const int32_t out_w = p->output.w;
    const int32_t out_c = p->output.c;
    /* A window inside the input is one run of it when its taps are adjacent in one row. */
    const int contiguous = k_h == 1 && (k_w == 1 || p->dilation_w == 1);
#if defined(MCU_DOT_PAIRS)
    const int8_t *wait_x = NULL; /* a window inside the input waiting for its pair */
    int8_t *wait_out = NULL;
#endif
    for (int32_t b = 0; b < p->input.n; ++b) {
        mcu_conv_window_t win;
        win.in_batch = input + b * in_h * c->in_row;
        for (int32_t out_y = 0; out_y < out_h; ++out_y) {
            win.y0 = out_y * p->stride_h - p->pad_top;
            valid_taps(win.y0, p->dilation_h, k_h, in_h, &win.ky_begin, &win.ky_end);
            for (int32_t out_x = 0; out_x < out_w; ++out_x) {
                win.x0 = out_x * p->stride_w - p->pad_left;
                valid_taps(win.x0, p->dilation_w, k_w, in_w, &win.kx_begin, &win.kx_end);
                int8_t *const out_px = output + ((b * out_h + out_y) * out_w + out_x) * out_c;
                /* acc[oc] = sum_{ky,kx,ic} (in[b,iy,ix,ic] + input_offset) * w[oc,ky,kx,ic]
                 *           + bias[oc]
                 *         = sum_{ky,kx,ic} in[b,iy,ix,ic] * w[oc,ky,kx,ic] + corr[oc]
                 * with iy = y0 + ky * dilation_h, ix = x0 + kx * dilation_w, the taps outside the
                 * input counting as in = -input_offset (adding nothing). */
                const int full = win.ky_begin == 0 && win.ky_end == k_h && win.kx_begin == 0 &&
                                 win.kx_end == k_w;
#if defined(MCU_DOT_PAIRS)
                /* windows inside the input two at a time (any two: the pairs run on across rows);
                 * one left waiting is done before a border position, keeping the reads of the
                 * input no later than in the one-by-one order */
                if (full && p->dilation_w == 1) {
                    const int8_t *const x = win.in_batch + win.y0 * c->in_row + win.x0 * in_c;
                    if (wait_x == NULL) {
                        wait_x = x;
                        wait_out = out_px;
                    } else {
                        pixel_rows(c, wait_x, x, wait_out, out_px);
                        wait_x = NULL;
                    }
                    continue;
                }
                if (wait_x != NULL) {
                    pixel_rows(c, wait_x, NULL, wait_out, NULL);
                    wait_x = NULL;
                }
#endif
                if (full && contiguous) {
                    pixel_from_patch(c, win.in_batch + win.y0 * c->in_row + win.x0 * in_c, out_px);
                } else if (c->filter_size <= MCU_CONV_PATCH_BYTES) {
                    mcu_conv2d_s8_gather(c, &win, patch_buf);
                    pixel_from_patch(c, patch_buf, out_px);
                } else {
                    pixel_from_runs(c, &win, out_px);
                }
            }
        }
    }
#if defined(MCU_DOT_PAIRS)
    if (wait_x != NULL) {
        pixel_rows(c, wait_x, NULL, wait_out, NULL);
    }
#endif
}

void mcu_conv2d_s8_generic_block(const mcu_conv_block_t *c, const int8_t *input, int8_t *output,
                                 int8_t *patch)
{
    conv_block(c, input, output, patch);
}

/* A pointwise call whose output overlaps its input: planned so for a core whose path reads a group
 * of positions before it writes them (mcu_conv2d_s8_in_place_down), and run here because the
 * bundle was built for plain C (a host build). The generic loops read every position again per
 * block of channels, so this runs position by position, every channel of a position from its own
 * bytes, its outputs landing on positions already read; when the output starts less than one
 * position below the input, a position's outputs go through the scratch first (the generic
 * path's corrections, 4 * min(C, MCU_CONV_OC_BLOCK) >= C bytes: C <= MCU_CONV_IN_PLACE_MAX_C).
 * Each channel's weight sum is taken again per position: slower, the same integers. */
#if MCU_ISA_PLAN == MCU_ISA_C && !defined(MCU_PLANNED_FOR_C)
#define MCU_CONV_BY_POSITIONS 1 /* (not in a bundle planned for plain C: it plans no such call) */
static int over_input(const mcu_conv_params_t *p, const int8_t *input, const int8_t *output)
{
    const uintptr_t in = (uintptr_t)input;
    const uintptr_t out = (uintptr_t)output;
    const uintptr_t bytes = (uintptr_t)p->input.n * (uintptr_t)p->input.h *
                            (uintptr_t)p->input.w * (uintptr_t)p->input.c;
    return mcu_conv2d_s8_pointwise_same(p) && out < in + bytes && in < out + bytes;
}

MCU_CONV_NOINLINE static void by_positions(const mcu_conv_params_t *p, const int8_t *input,
                                           const int8_t *filter, const int32_t *bias,
                                           int8_t *output, int8_t *scratch,
                                           const mcu_conv_fuse_t *fuse)
{
    const int32_t c = p->input.c;
    const int32_t positions = p->input.n * p->input.h * p->input.w;
    /* (the residual Add's fused stores are never planned over the conv's input) */
    int8_t *const staged = fuse == NULL && (uintptr_t)input - (uintptr_t)output < (uintptr_t)c
                               ? scratch
                               : NULL;
    for (int32_t pos = 0; pos < positions; ++pos) {
        const int8_t *const x = input + pos * c;
        int8_t *const out_px = output + pos * c;
        int8_t *const to = staged != NULL ? staged : out_px;
        for (int32_t oc = 0; oc < c; ++oc) {
            const int8_t *const w = filter + oc * c;
            const int32_t corr = mcu_conv_add_wrap(
                bias != NULL ? bias[oc] : 0,
                (int32_t)((uint32_t)p->q.input_offset * (uint32_t)mcu_sum_s8(w, c)));
            const int32_t acc = mcu_conv_add_wrap(mcu_dot1_s8(x, w, c), corr);
            put(fuse, to, oc, mcu_output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q));
        }
        if (staged != NULL) {
            memmove(out_px, staged, (size_t)c);
        }
    }
}
#endif

/* scratch: corrections (4 * min(C_out, MCU_CONV_OC_BLOCK) bytes), then the patch */
void mcu_conv2d_s8_generic(const mcu_conv_params_t *p, const int8_t *input, const int8_t *filter,
                           const int32_t *bias, int8_t *output, void *scratch,
                           const mcu_conv_fuse_t *fuse)
{
#if defined(MCU_CONV_BY_POSITIONS)
    if (over_input(p, input, output)) {
        by_positions(p, input, filter, bias, output, (int8_t *)scratch, fuse);
        return;
    }
#endif
    const int32_t out_c = p->output.c;
    const int32_t input_offset = p->q.input_offset;
    int32_t *const corr = (int32_t *)scratch;
    mcu_conv_block_t c;
    mcu_conv_block_init(&c, p, filter, corr, NULL, fuse);
#if defined(MCU_DOT_PAIRS)
    /* |acc| < 2^30 as on the MVE path (K <= MCU_CONV_FAST_MAX_K, |bias| < 2^29) */
    c.requant2 = fuse == NULL && p->q.rounding == MCU_ROUND_TFLITE &&
                 c.filter_size <= MCU_CONV_FAST_MAX_K;
    for (int32_t oc = 0; oc < out_c && c.requant2 && !p->channels_fast; ++oc) {
        c.requant2 = mcu_requant2_ok(p->multiplier[oc], p->shift[oc], bias != NULL ? bias[oc] : 0);
    }
#endif
    const int32_t filter_size = c.filter_size;
    int8_t *const patch_buf =
        (int8_t *)(corr + (out_c < MCU_CONV_OC_BLOCK ? out_c : MCU_CONV_OC_BLOCK));
    for (c.oc_base = 0; c.oc_base < out_c; c.oc_base += MCU_CONV_OC_BLOCK) {
        c.oc_end = out_c - c.oc_base < MCU_CONV_OC_BLOCK ? out_c : c.oc_base + MCU_CONV_OC_BLOCK;
        /* corr[oc] = bias[oc] + input_offset * sum_{ky,kx,ic} w[oc,ky,kx,ic]: the params' own
         * build-time kernel_sums where they have them */
        c.corr = p->kernel_sums != NULL ? p->kernel_sums + c.oc_base : corr;
        if (p->kernel_sums == NULL) {
            for (int32_t oc = c.oc_base; oc < c.oc_end; ++oc) {
                const int32_t w_sum = mcu_sum_s8(filter + oc * filter_size, filter_size);
                corr[oc - c.oc_base] =
                    mcu_conv_add_wrap(bias != NULL ? bias[oc] : 0,
                                      (int32_t)((uint32_t)input_offset * (uint32_t)w_sum));
            }
        }
        conv_block(&c, input, output, patch_buf);
    }
}
