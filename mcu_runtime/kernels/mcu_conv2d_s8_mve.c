/*
 * mcu_conv2d_s8_mve.c - the MVE path of mcu_conv2d_s8 (__ARM_FEATURE_MVE; see mcu_conv2d_s8.c
 * for the dispatch): every channel's requantization realistic (requant2_ok) and windows of at
 * most MCU_CONV_PATCH_BYTES bytes.
 *
 * - Windows of at most MCU_CONV_MVE_K bytes: four output positions at a time, their windows
 *   (gathered with predicated vector copies) interleaved in 16-byte chunks in scratch, every
 *   channel's weight vectors meeting the four windows (VMLADAVA), the four sums requantized
 *   together (requant4) and scattered with one store; corrections kept for MCU_CONV_MVE_OC_BLOCK
 *   channels at a time (conv_block_mve). The last positions: one at a time (pixel_mve).
 * - Larger windows: one position at a time, four channels per pass (pixel_mve), corrections for
 *   MCU_CONV_OC_BLOCK channels at a time (conv_rows_mve).
 * Scratch: corrections and requantization bases (2 words per channel of a block), then (K <=
 * MCU_CONV_MVE_K) the 4 * roundup16(K) bytes of interleaved windows, then the K-byte patch.
 */
#include <stdint.h>
#include <string.h>

#include "../support/mcu_dot_s8.h"
#include "mcu_conv2d_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

/* Every channel of the block at one position from its patch: four channels per pass over the
 * patch (VMLADAVA, 16 products per instruction, four sums in scalar registers), requantized
 * together (requant4), stored with one narrowing store. */
static void pixel_mve(const mcu_conv_block_t *c, const int8_t *patch, int8_t *out_px)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t k = c->filter_size;
    const int32x4_t lo = vdupq_n_s32(p->q.act_min);
    const int32x4_t hi = vdupq_n_s32(p->q.act_max);
    const mve_pred16_t tail = vctp8q((uint32_t)(k & 15));
    int32_t oc = c->oc_base;
    for (; oc + 4 <= c->oc_end; oc += 4) {
        const int8_t *x = patch;
        const int8_t *w0 = c->filter + oc * k;
        const int8_t *w1 = w0 + k;
        const int8_t *w2 = w1 + k;
        const int8_t *w3 = w2 + k;
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (int32_t n = k >> 4; n > 0; --n) {
            const int8x16_t xv = vld1q_s8(x);
            a0 = vmladavaq_s8(a0, xv, vld1q_s8(w0));
            a1 = vmladavaq_s8(a1, xv, vld1q_s8(w1));
            a2 = vmladavaq_s8(a2, xv, vld1q_s8(w2));
            a3 = vmladavaq_s8(a3, xv, vld1q_s8(w3));
            x += 16;
            w0 += 16;
            w1 += 16;
            w2 += 16;
            w3 += 16;
        }
        if ((k & 15) != 0) {
            const int8x16_t xv = vldrbq_z_s8(x, tail);
            a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(w0, tail));
            a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(w1, tail));
            a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(w2, tail));
            a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(w3, tail));
        }
        const int32_t i = oc - c->oc_base;
        int32x4_t acc = vsetq_lane_s32(a3, vsetq_lane_s32(a2, vsetq_lane_s32(a1,
                            vdupq_n_s32(a0), 1), 2), 3);
        acc = vaddq_s32(acc, vldrwq_s32(c->corr + i));
        int32x4_t v = requant4(acc, vldrwq_s32(p->multiplier + oc), vldrwq_s32(c->base + i),
                               vldrwq_s32(p->shift + oc));
        v = vminq_s32(vmaxq_s32(v, lo), hi);
        vstrbq_s32(out_px + oc, v);
    }
    for (; oc < c->oc_end; ++oc) {
        /* corr holds requant2_lift for requant4; output_stage takes the plain sum */
        const int32_t corr = c->corr[oc - c->oc_base] - requant2_lift(p->multiplier[oc], &p->q);
        const int32_t acc = mcu_conv_add_wrap(mcu_dot1_s8(patch, c->filter + oc * k, k), corr);
        out_px[oc] = output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q);
    }
}

/* Four positions at a time: their windows (filter_size = K bytes each, up to MCU_CONV_MVE_K)
 * copied into one buffer, interleaved in 16-byte chunks,
 *   xq[64 j + 16 i + b] = byte 16 j + b of position i's window
 * (a last partial chunk padded with zeros, which meet zero weights), so that one pointer walks
 * all four: 10 instructions per 64 multiply-accumulates (VMLADAVA) and few live registers. */

/* Every channel of the block at four positions whose windows are interleaved in xq; output
 * pixels at out + i * out_step. Per channel: one pass over its weights, each 16-byte weight
 * vector meeting the four windows (VMLADAVA), the four sums plus corr requantized together
 * (requant4) and scattered with one store. */
MCU_CONV_NOINLINE static void quad_mve(const mcu_conv_block_t *c, const int8_t *xq, int8_t *out,
                                       int32_t out_step)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t k = c->filter_size;
    const int32_t chunks = k >> 4;
    const int32_t rest = k & 15;
    const mve_pred16_t tail = vctp8q((uint32_t)rest);
    const uint32x4_t offsets = vmulq_n_u32(vidupq_n_u32(0, 1), (uint32_t)out_step);
    const int32x4_t lo = vdupq_n_s32(p->q.act_min);
    const int32x4_t hi = vdupq_n_s32(p->q.act_max);
    const int32_t *const corr = c->corr - c->oc_base;
    const int32_t *const base = c->base - c->oc_base;
    const int32_t *const multiplier = p->multiplier;
    const int32_t *const shift = p->shift;
    const int8_t *w = c->filter + c->oc_base * k;
    for (int32_t oc = c->oc_base; oc < c->oc_end; ++oc) {
        const int8_t *x = xq;
        const int32_t init = corr[oc];
        int32_t a0 = init, a1 = init, a2 = init, a3 = init;
        for (int32_t n = chunks; n > 0; --n) {
            const int8x16_t wv = vld1q_s8(w);
            w += 16;
            a0 = vmladavaq_s8(a0, vld1q_s8(x), wv);
            x += 16;
            a1 = vmladavaq_s8(a1, vld1q_s8(x), wv);
            x += 16;
            a2 = vmladavaq_s8(a2, vld1q_s8(x), wv);
            x += 16;
            a3 = vmladavaq_s8(a3, vld1q_s8(x), wv);
            x += 16;
        }
        if (rest != 0) {
            const int8x16_t wv = vldrbq_z_s8(w, tail);
            a0 = vmladavaq_s8(a0, vld1q_s8(x), wv);
            a1 = vmladavaq_s8(a1, vld1q_s8(x + 16), wv);
            a2 = vmladavaq_s8(a2, vld1q_s8(x + 32), wv);
            a3 = vmladavaq_s8(a3, vld1q_s8(x + 48), wv);
            w += rest;
        }
        const int32x4_t acc = vsetq_lane_s32(
            a3, vsetq_lane_s32(a2, vsetq_lane_s32(a1, vdupq_n_s32(a0), 1), 2), 3);
        int32x4_t v = requant4(acc, vdupq_n_s32(multiplier[oc]), vdupq_n_s32(base[oc]),
                               vdupq_n_s32(shift[oc]));
        v = vminq_s32(vmaxq_s32(v, lo), hi);
        vstrbq_scatter_offset_s32(out + oc, offsets, v);
    }
}

/* n bytes from src to dst / n copies of v's bytes to dst, 16 per predicated vector op */
static inline void copy_mve(int8_t *dst, const int8_t *src, int32_t n)
{
    for (; n > 0; n -= 16, dst += 16, src += 16) {
        const mve_pred16_t pr = vctp8q((uint32_t)n);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, pr), pr);
    }
}

static inline void fill_mve(int8_t *dst, int8x16_t v, int32_t n)
{
    for (; n > 0; n -= 16, dst += 16) {
        vstrbq_p_s8(dst, v, vctp8q((uint32_t)n));
    }
}

/* gather_patch with predicated vector copies instead of memcpy/memset calls per tap row. */
static void gather_mve(const mcu_conv_block_t *c, const mcu_conv_window_t *win, int8_t *patch)
{
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
                     (win->kx_end - win->kx_begin) * in_c);
        } else {
            for (int32_t kx = win->kx_begin; kx < win->kx_end; ++kx) {
                copy_mve(dst + kx * in_c, src + (win->x0 + kx * p->dilation_w) * in_c, in_c);
            }
        }
        fill_mve(dst + win->kx_end * in_c, pad, (k_w - win->kx_end) * in_c);
    }
}

/* One block of output channels (c->corr, c->base filled) through quad_mve: the positions four
 * at a time (the last one to three through pixel_mve), windows copied from the input when they
 * are one run of it, else gathered (padding taps holding the input zero point). */
MCU_CONV_NOINLINE static void conv_block_mve(const mcu_conv_block_t *c, const int8_t *input,
                                             int8_t *output, int8_t *xq, int8_t *patch)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_c = p->input.c;
    const int32_t k_h = p->filter.h;
    const int32_t k_w = p->filter.w;
    const int32_t out_h = p->output.h;
    const int32_t out_w = p->output.w;
    const int32_t k = c->filter_size;
    const int contiguous = k_h == 1 && (k_w == 1 || p->dilation_w == 1);
    const int32_t positions = p->input.n * out_h * out_w;
    /* a last partial chunk's padding: zeros (they meet zero weights) */
    memset(xq + 4 * (k & ~15), 0, (size_t)(4 * ((k + 15) & ~15) - 4 * (k & ~15)));
    for (int32_t n0 = 0; n0 < positions; n0 += 4) {
        /* four positions; fewer at the end, one at a time through pixel_mve */
        const int32_t count = positions - n0 < 4 ? positions - n0 : 4;
        for (int32_t i = 0; i < count; ++i) {
            const int32_t n = n0 + i;
            const int32_t b = n / (out_h * out_w);
            const int32_t out_y = n / out_w - b * out_h;
            const int32_t out_x = n - (b * out_h + out_y) * out_w;
            mcu_conv_window_t win;
            win.in_batch = input + b * p->input.h * c->in_row;
            win.y0 = out_y * p->stride_h - p->pad_top;
            win.x0 = out_x * p->stride_w - p->pad_left;
            valid_taps(win.y0, p->dilation_h, k_h, p->input.h, &win.ky_begin, &win.ky_end);
            valid_taps(win.x0, p->dilation_w, k_w, p->input.w, &win.kx_begin, &win.kx_end);
            const int inside = win.ky_begin == 0 && win.ky_end == k_h && win.kx_begin == 0 &&
                               win.kx_end == k_w;
            const int8_t *src = patch;
            if (inside && contiguous) {
                src = win.in_batch + win.y0 * c->in_row + win.x0 * in_c;
            } else {
                gather_mve(c, &win, patch);
            }
            if (count < 4) {
                pixel_mve(c, src, output + n * p->output.c);
                continue;
            }
            int8_t *dst = xq + 16 * i;
            int32_t j = 0;
            for (; j + 16 <= k; j += 16, dst += 64) {
                vst1q_s8(dst, vld1q_s8(src + j));
            }
            if (j < k) {
                vstrbq_p_s8(dst, vldrbq_z_s8(src + j, vctp8q((uint32_t)(k - j))),
                            vctp8q((uint32_t)(k - j)));
            }
        }
        if (count < 4) {
            break;
        }
        quad_mve(c, xq, output + n0 * p->output.c, p->output.c);
    }
}

/* One block of output channels (c->corr, c->base filled) at every batch and output position, one
 * position at a time (windows larger than MCU_CONV_MVE_K): the generic path's loop nest with
 * pixel_mve. */
MCU_CONV_NOINLINE static void conv_rows_mve(const mcu_conv_block_t *c, const int8_t *input,
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
    const int contiguous = k_h == 1 && (k_w == 1 || p->dilation_w == 1);
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
                const int full = win.ky_begin == 0 && win.ky_end == k_h && win.kx_begin == 0 &&
                                 win.kx_end == k_w;
                if (full && contiguous) {
                    pixel_mve(c, win.in_batch + win.y0 * c->in_row + win.x0 * in_c, out_px);
                } else {
                    mcu_conv2d_s8_gather(c, &win, patch_buf);
                    pixel_mve(c, patch_buf, out_px);
                }
            }
        }
    }
}

/* The block's corrections corr[oc] = bias[oc] + input_offset * sum of w[oc] and requantization
 * bases (out of line: its vector registers stay out of the frame the loop nest sits on). */
MCU_CONV_NOINLINE static void block_constants(const mcu_conv_block_t *c, const int32_t *bias,
                                              int32_t *corr, int32_t *base)
{
    /* local copies: an int32_t store may alias them, which would reload them per channel */
    const int32_t k = c->filter_size;
    const int8_t *const filter = c->filter;
    const int32_t *const shift = c->params->shift;
    const int32_t *const multiplier = c->params->multiplier;
    const mcu_quant_io_t q = c->params->q;
    const int32_t input_offset = q.input_offset;
    const int32_t oc_base = c->oc_base;
    const int32_t oc_end = c->oc_end;
    for (int32_t oc = oc_base; oc < oc_end; ++oc) {
        const int32_t w_sum = mcu_sum_s8(filter + oc * k, k);
        corr[oc - oc_base] = mcu_conv_add_wrap(bias != NULL ? bias[oc] : 0,
                                               (int32_t)((uint32_t)input_offset * (uint32_t)w_sum));
        base[oc - oc_base] = requant2_base(shift[oc], q.output_offset);
    }
    if (q.rounding == MCU_ROUND_NEAREST_NO_TIE) { /* onnxruntime's rounding: requant2_lift */
        for (int32_t oc = oc_base; oc < oc_end; ++oc) {
            int32_t lift2;
            base[oc - oc_base] = requant2_no_tie(multiplier[oc], shift[oc], q.output_offset, &lift2);
            corr[oc - oc_base] = mcu_conv_add_wrap(corr[oc - oc_base], lift2 / 2);
        }
    }
}

void mcu_conv2d_s8_mve(const mcu_conv_params_t *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, void *scratch)
{
    const int32_t out_c = p->output.c;
    const int32_t filter_size = p->filter.h * p->filter.w * p->input.c;
    const int quad = filter_size <= MCU_CONV_MVE_K;
    const int32_t block = quad ? MCU_CONV_MVE_OC_BLOCK : MCU_CONV_OC_BLOCK;
    const int32_t n = out_c < block ? out_c : block;
    int32_t *const corr = (int32_t *)scratch;
    int32_t *const base = corr + n;
    int8_t *const xq = (int8_t *)(base + n);
    int8_t *const patch = quad ? xq + 4 * ((filter_size + 15) & ~15) : xq;
    mcu_conv_block_t c;
    c.params = p;
    c.filter = filter;
    c.filter_size = filter_size;
    c.in_row = p->input.w * p->input.c;
    c.corr = corr;
    c.base = base;
    for (c.oc_base = 0; c.oc_base < out_c; c.oc_base += block) {
        c.oc_end = out_c - c.oc_base < block ? out_c : c.oc_base + block;
        block_constants(&c, bias, corr, base);
        if (quad) {
            conv_block_mve(&c, input, output, xq, patch);
        } else {
            conv_rows_mve(&c, input, output, patch);
        }
    }
}

#endif /* MCU_ISA_NATIVE == MCU_ISA_MVE */
