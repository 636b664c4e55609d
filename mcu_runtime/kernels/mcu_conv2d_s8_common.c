/*
 * mcu_conv2d_s8_common.c - the helpers the paths of mcu_conv2d_s8 share (every target; the
 * dispatcher is mcu_conv2d_s8.c, the paths mcu_conv2d_s8_generic.c, _dsp.c and _mve.c): the
 * window gather into a patch, and the residual Add's stores of mcu_conv2d_add_s8. Both stay out of
 * line (MCU_CONV_NOINLINE) so the paths' inner loops do not grow. Also the planner's question
 * whether a call may write over its input (mcu_conv2d_s8_in_place_down), which the paths' loop
 * orders answer.
 */
#include <stdint.h>
#include <string.h>

#include "mcu_conv2d_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_nn.h"

/* Runs of at most this many bytes are copied and filled inline (a call to memcpy or memset costs
 * more than such a run: the 9-byte window rows of a 3x3 filter over three channels), on the DSP
 * cores (unaligned words) and not under --optimize size */
#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN) && !defined(MCU_OPTIMIZE_SIZE)
#define SHORT_RUN 16
#endif

/* n bytes from src to dst */
MCU_CONV_INLINE void copy_run(int8_t *dst, const int8_t *src, int32_t n)
{
#if defined(SHORT_RUN)
    if (n <= SHORT_RUN) {
        for (; n >= 4; n -= 4, dst += 4, src += 4) {
            write_s8x4(dst, read_s8x4(src));
        }
        for (; n > 0; --n) {
            *dst++ = *src++;
        }
        return;
    }
#endif
    memcpy(dst, src, (size_t)n);
}

/* n bytes of value v at dst */
MCU_CONV_INLINE void fill_run(int8_t *dst, int8_t v, int32_t n)
{
#if defined(SHORT_RUN)
    if (n <= SHORT_RUN) {
        const uint32_t word = (uint32_t)(uint8_t)v * 0x01010101u;
        for (; n >= 4; n -= 4, dst += 4) {
            write_s8x4(dst, word);
        }
        for (; n > 0; --n) {
            *dst++ = v;
        }
        return;
    }
#endif
    memset(dst, v, (size_t)n);
}

/* Gathers the window in (ky, kx, ic) order: valid taps copy the input, padding taps get the input
 * zero point (-input_offset). */
MCU_CONV_NOINLINE void mcu_conv2d_s8_gather(const mcu_conv_block_t *c, const mcu_conv_window_t *win,
                                            int8_t *patch)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_c = p->input.c;
    const int32_t k_w = p->filter.w;
    const int8_t pad = (int8_t)(-p->q.input_offset);
    const size_t tap = (size_t)in_c;
    const int32_t w_row = k_w * in_c;
#if MCU_ISA_NATIVE == MCU_ISA_MVE
    if (mcu_conv_gather_rows_mve(c, win, patch)) {
        return;
    }
#endif
    for (int32_t ky = 0; ky < p->filter.h; ++ky) {
        int8_t *const dst = patch + ky * w_row;
        if (ky < win->ky_begin || ky >= win->ky_end) {
            fill_run(dst, pad, w_row);
            continue;
        }
        const int8_t *const src = win->in_batch + (win->y0 + ky * p->dilation_h) * c->in_row;
        if (win->kx_begin > 0) {
            fill_run(dst, pad, in_c * win->kx_begin);
        }
        if (p->dilation_w == 1) {
            copy_run(dst + win->kx_begin * in_c, src + (win->x0 + win->kx_begin) * in_c,
                     in_c * (win->kx_end - win->kx_begin));
        } else {
            for (int32_t kx = win->kx_begin; kx < win->kx_end; ++kx) {
                memcpy(dst + kx * in_c, src + (win->x0 + kx * p->dilation_w) * in_c, tap);
            }
        }
        if (win->kx_end < k_w) {
            fill_run(dst + win->kx_end * in_c, pad, in_c * (k_w - win->kx_end));
        }
    }
}

/* o[r * stride] = mcu_conv_fuse_one(f, v[r], the skip element at o[r * stride]), r = 0..n-1. */
MCU_CONV_NOINLINE void mcu_conv2d_s8_fuse_store(const mcu_conv_fuse_t *f, int8_t *o, int32_t stride,
                                                const int32_t *v, int32_t n)
{
    const int8_t *const s = f->skip + (o - f->output);
    for (int32_t r = 0; r < n; ++r) {
        o[r * stride] = mcu_conv_fuse_one(f, v[r], s[r * stride]);
    }
}

int mcu_conv2d_s8_pointwise_same(const mcu_conv_params_t *p)
{
    return p->filter.h == 1 && p->filter.w == 1 && p->stride_h == 1 && p->stride_w == 1 &&
           p->pad_top == 0 && p->pad_left == 0 && p->output.h == p->input.h &&
           p->output.w == p->input.w && p->output.c == p->input.c;
}

int32_t mcu_conv2d_s8_in_place_down(const mcu_conv_params_t *p, const int32_t *bias, int32_t isa)
{
    if (!mcu_conv2d_s8_pointwise_same(p)) {
        return -1;
    }
    /* the same bundle built for plain C (a host build) runs the generic path's position-by-position
     * loop over it (mcu_conv2d_s8_generic): at least one position below beyond
     * MCU_CONV_IN_PLACE_MAX_C channels, where its scratch cannot hold a position's outputs */
    const int32_t one = p->output.c > MCU_CONV_IN_PLACE_MAX_C ? p->output.c : 0;
    const int32_t path = mcu_conv2d_s8_path(p, bias, isa);
    if (path == MCU_PATH_DSP) {
        /* a pass extends its positions' windows into the scratch, then writes their outputs; the
         * last pass of a call whose passes do not divide the positions starts over written ones */
        const int32_t per_pass = mcu_conv2d_s8_dsp_positions(p, bias);
        const int32_t positions = p->input.n * p->input.h * p->input.w;
        return positions % per_pass == 0 ? one : per_pass * p->output.c;
    }
    if (path == MCU_PATH_MVE && p->output.c <= MCU_CONV_MVE_OC_BLOCK) {
        return one; /* three positions' windows copied, then their outputs: one block of channels */
    }
    return -1; /* generic: each block of channels reads every position again */
}

int32_t mcu_conv2d_s8_lean_in_place_down(const mcu_conv_params_t *p, const int32_t *bias,
                                         int32_t isa)
{
    if (!mcu_conv2d_s8_pointwise_same(p)) {
        return -1;
    }
    const int32_t one = p->output.c > MCU_CONV_IN_PLACE_MAX_C ? p->output.c : 0;
    if (mcu_conv2d_s8_path(p, bias, isa) == MCU_PATH_MVE && mcu_conv2d_s8_mve_lean_groups(p)) {
        return one; /* with room for its groups: three positions' windows copied, then their outputs */
    }
    if (mcu_conv2d_s8_lean_path(p, bias, isa) == MCU_PATH_MVE &&
        p->output.c <= MCU_CONV_MVE_LEAN_BLOCK) {
        return one; /* one block of channels */
    }
    return -1; /* DSP: channel pairs over every position; generic: blocks of channels */
}
