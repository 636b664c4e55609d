/*
 * mcu_conv2d_s8_internal.h - what the dispatcher mcu_conv2d_s8.c and its path files
 * (mcu_conv2d_s8_generic.c, _dsp.c, _mve.c) share: tuning constants, the per-call state, the
 * window of one output position, and the path entry points. Internal to mcu_runtime.
 *
 * The tuning constants are the one definition: emitter/kernels/mcu_conv2d_s8.py reads them from
 * this file to size the scratch exactly as mcu_conv2d_s8_get_buffer_size() does.
 */
#ifndef MCU_CONV2D_S8_INTERNAL_H
#define MCU_CONV2D_S8_INTERNAL_H

#include <stdint.h>

#include "mcu_math.h"
#include "mcu_nn.h"
#include "mcu_requant.h"

/* Generic path: filters of at most this many bytes (KH * KW * C_in) have the windows that are not
 * one run of the input gathered into scratch (576: a 3x3 filter over 64 channels); larger ones
 * are read run by run, slower at the borders. */
#define MCU_CONV_PATCH_BYTES 576
/* Generic path: output channels whose offset corrections are kept at a time (int32 each). */
#define MCU_CONV_OC_BLOCK 32
/* pointwise calls over their input (mcu_conv2d_s8_in_place_down): up to this many channels the
 * generic path's scratch holds one position's outputs, so a host build of the bundle runs them at
 * any start below the input; above it they start at least one position below */
#define MCU_CONV_IN_PLACE_MAX_C (4 * MCU_CONV_OC_BLOCK)
/* DSP path: the interleaved window buffer in words (P = 4 positions per pass up to K = 144,
 * P = 2 up to 288, P = 1 up to 576) and the largest window gathered byte by byte (C_in % 4 != 0;
 * larger windows need C_in % 4 == 0 and are read tap by tap). */
#define MCU_CONV_DSP_WORDS 288
#define MCU_CONV_DSP_PATCH 144
/* MVE path: output channels whose constants (2 words each) and sums (three rows, 8, 16, 32 or 64
 * words apart: the block's channels rounded up) are kept at a time. */
#define MCU_CONV_MVE_OC_BLOCK 64
/* The lean call (mcu_conv2d_s8_lean): its MVE variant's channel block, and the most scratch bytes
 * a variant of the fast path may take beyond the generic path's (else the lean call is generic). */
#define MCU_CONV_MVE_LEAN_BLOCK 8
/* The lean call's MVE variant with build-time constants (mcu_conv2d_s8_mve_lean_groups): the
 * channels a pass meets and requantizes at a time; WIDE where its ctx holds their sums (a quarter
 * fewer instructions on KWS's layers than 8 at a time). */
#define MCU_CONV_MVE_LEAN_GROUP 8
#define MCU_CONV_MVE_LEAN_WIDE 16
/* Flags on the group of the lean call's MVE groups where its ctx has no room to copy the windows
 * (the call then may not write over its input): DIRECT, the windows read where they lie in the
 * input, those that are not one run of it (mcu_conv2d_s8_gathers) gathered into K bytes each, then
 * the group's sums; TWO, two positions a pass (else three). */
#define MCU_CONV_MVE_LEAN_DIRECT 0x100
#define MCU_CONV_MVE_LEAN_TWO 0x200
#define MCU_CONV_LEAN_EXTRA 256
/* Largest window whose requantization may take the fast, exact mcu_requant2/mcu_requant4 arithmetic
 * (|acc| < 2^29 + 16384 * 255 * 128 < 2^30 with mcu_requant2_ok() constants). */
#define MCU_CONV_FAST_MAX_K 16384

#if defined(__GNUC__)
#define MCU_CONV_NOINLINE __attribute__((noinline))
#define MCU_CONV_INLINE static inline __attribute__((always_inline))
#else
#define MCU_CONV_NOINLINE
#define MCU_CONV_INLINE static inline
#endif

/* What every output position of one call (and one block of output channels) shares. */
typedef struct {
    const mcu_conv_params_t *params;
    const int8_t *filter;
    int32_t filter_size; /* KH * KW * C_in: bytes of one output channel's filter */
    int32_t in_row;      /* W_in * C_in: bytes of one input row */
    int32_t oc_base;     /* the block of output channels [oc_base, oc_end) */
    int32_t oc_end;
    const int32_t *corr; /* corr[oc - oc_base] = bias[oc] + input_offset * sum of w[oc] */
    const int32_t *base; /* MVE path: mcu_requant2_base(shift[oc], ...) at [oc - oc_base] */
    const mcu_conv_fuse_t *fuse; /* generic path: the residual Add, or NULL */
#if defined(__riscv)
    int32_t requant2; /* generic path on RV32: mcu_requant2's arithmetic holds for every channel */
#endif
} mcu_conv_block_t;

/* *c for one call of a path, before its blocks (oc_base, oc_end): params, filter, the corrections
 * and MVE bases (NULL where a path keeps none) and the residual Add (or NULL). */
static inline void mcu_conv_block_init(mcu_conv_block_t *c, const mcu_conv_params_t *p,
                                       const int8_t *filter, const int32_t *corr,
                                       const int32_t *base, const mcu_conv_fuse_t *fuse)
{
    c->params = p;
    c->filter = filter;
    c->filter_size = p->filter.h * p->filter.w * p->input.c;
    c->in_row = p->input.w * p->input.c;
    c->corr = corr;
    c->base = base;
    c->fuse = fuse;
}

/* The window of one output position: top-left input tap (y0, x0) of batch `in_batch`, and the
 * taps inside the input, ky in [ky_begin, ky_end), kx in [kx_begin, kx_end). */
typedef struct {
    const int8_t *in_batch;
    int32_t y0;
    int32_t x0;
    int32_t ky_begin;
    int32_t ky_end;
    int32_t kx_begin;
    int32_t kx_end;
} mcu_conv_window_t;

/* a + b with int32 wrap-around (no undefined behaviour): sums of terms that the reference adds
 * in another order. */
static inline int32_t mcu_conv_add_wrap(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* Plain C (every target, the host included): the dispatcher's choice. */
int32_t mcu_conv2d_s8_dsp_positions(const mcu_conv_params_t *p, const int32_t *bias);
int mcu_conv2d_s8_gathers(const mcu_conv_params_t *p);
/* The lean call's (mcu_conv2d_s8_lean) path on `isa` (MCU_PATH_*) and its scratch bytes there
 * (the planner's lean_buffer_size takes the most of any target's). */
int32_t mcu_conv2d_s8_lean_path(const mcu_conv_params_t *p, const int32_t *bias, int32_t isa);
int32_t mcu_conv2d_s8_lean_buffer_size(const mcu_conv_params_t *p, const int32_t *bias,
                                       int32_t isa);
/* The lean call's scratch on `isa` with which its MVE variant in groups takes the wide ones
 * (MCU_CONV_MVE_LEAN_WIDE); elsewhere mcu_conv2d_s8_lean_buffer_size. (Its least scratch,
 * mcu_conv2d_s8_lean_buffer_size, is the generic path's where that is less than the groups':
 * with less room than theirs it runs the generic path.) */
int32_t mcu_conv2d_s8_lean_wide_buffer_size(const mcu_conv_params_t *p, const int32_t *bias,
                                            int32_t isa);
/* The path the lean call takes on `isa` given `room` bytes of scratch (its ctx's). */
int32_t mcu_conv2d_s8_lean_room_path(const mcu_conv_params_t *p, const int32_t *bias, int32_t isa,
                                     int32_t room);
/* Whether the lean call runs the fast one on `isa` given `room` bytes of scratch (its ctx's). */
int mcu_conv2d_s8_lean_fast(const mcu_conv_params_t *p, const int32_t *bias, int32_t isa,
                            int32_t room);
/* As mcu_conv2d_s8_in_place_down (mcu_nn.h), of the lean call with no room for the fast one: its
 * MVE variant in groups (every channel a pass; given the room for its groups:
 * mcu_conv2d_s8_lean_wide_buffer_size), or of one block. */
int32_t mcu_conv2d_s8_lean_in_place_down(const mcu_conv_params_t *p, const int32_t *bias,
                                         int32_t isa);

/* mcu_conv2d_s8_common.c (every target), shared by the paths: the residual Add's stores, out of
 * line (the paths inline their loops): o[r * stride] = mcu_conv_fuse_one(f, v[r], the skip
 * element at o[r * stride]), r = 0..n-1; and the window gathered in (ky, kx, ic) order, the input
 * zero point in the padding taps. */
void mcu_conv2d_s8_fuse_store(const mcu_conv_fuse_t *f, int8_t *o, int32_t stride, const int32_t *v,
                              int32_t n);
void mcu_conv2d_s8_gather(const mcu_conv_block_t *c, const mcu_conv_window_t *win, int8_t *patch);

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>

/* The window into patch where its rows of taps are at most 16 bytes (dilation_w 1): a row one
 * predicated copy, after a store of the zero point where the row has padding taps; 0 (nothing
 * written) for other windows. The MVE path's gather and, on MVE cores, mcu_conv2d_s8_gather. */
static inline int mcu_conv_gather_rows_mve(const mcu_conv_block_t *c, const mcu_conv_window_t *win,
                                           int8_t *patch)
{
    const mcu_conv_params_t *const p = c->params;
    const int32_t in_c = p->input.c;
    const int32_t w_row = p->filter.w * in_c;
    if (p->dilation_w != 1 || w_row > 16) {
        return 0;
    }
    const int8x16_t pad = vdupq_n_s8((int8_t)(-p->q.input_offset));
    const mve_pred16_t row = vctp8q((uint32_t)w_row);
    const int32_t lead = win->kx_begin * in_c;
    const int32_t len = (win->kx_end - win->kx_begin) * in_c;
    const mve_pred16_t taps = vctp8q((uint32_t)len);
    const int32_t row_step = p->dilation_h * c->in_row;
    const int8_t *src = win->in_batch + (win->y0 + win->ky_begin * p->dilation_h) * c->in_row +
                        (win->x0 + win->kx_begin) * in_c;
    int8_t *dst = patch;
    for (int32_t ky = 0; ky < p->filter.h; ++ky, dst += w_row) {
        if (ky < win->ky_begin || ky >= win->ky_end) {
            vstrbq_p_s8(dst, pad, row);
            continue;
        }
        if (len < w_row) {
            vstrbq_p_s8(dst, pad, row);
        }
        vstrbq_p_s8(dst + lead, vldrbq_z_s8(src, taps), taps);
        src += row_step;
    }
    return 1;
}
#endif

/* mcu_conv2d_s8.c: the checks, the path and the call, with the residual Add or without (NULL). */
mcu_status_t mcu_conv2d_s8_run(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                               const int8_t *input, const int8_t *filter, const int32_t *bias,
                               int8_t *output, const mcu_conv_fuse_t *fuse);

/* mcu_conv2d_s8_common.c: 1x1, stride 1, no padding, C_out == C_in (a call that may be planned
 * over its input, mcu_conv2d_s8_in_place_down). */
int mcu_conv2d_s8_pointwise_same(const mcu_conv_params_t *p);

/* mcu_conv2d_s8_generic.c: the generic path. */
void mcu_conv2d_s8_generic(const mcu_conv_params_t *p, const int8_t *input, const int8_t *filter,
                           const int32_t *bias, int8_t *output, void *scratch,
                           const mcu_conv_fuse_t *fuse);

/* One block of output channels (c->oc_base, c->oc_end, c->corr filled; c->requant2 on RV32) at
 * every position: the generic path's loop nest, exposed for mcu_conv2d_s4 (its blocks of weights
 * unpacked to int8). patch: K bytes when K <= MCU_CONV_PATCH_BYTES and windows are gathered. */
void mcu_conv2d_s8_generic_block(const mcu_conv_block_t *c, const int8_t *input, int8_t *output,
                                 int8_t *patch);

#if MCU_ISA_NATIVE == MCU_ISA_DSP
/* mcu_conv2d_s8_dsp.c; per_pass = mcu_conv2d_s8_dsp_positions() > 0. It computes the p->filter.n
 * channels of filter and bias (p->output.c for mcu_conv2d_s8; mcu_conv2d_s4 passes a block of
 * them, output.c then only the output pixels' stride). */
void mcu_conv2d_s8_dsp(const mcu_conv_params_t *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int32_t per_pass, void *scratch,
                       const mcu_conv_fuse_t *fuse);
/* The lean call's DSP variant: per_pass = min(mcu_conv2d_s8_dsp_positions(), 2), P = 2 passes
 * taking two output channels at a time (the window buffer of two positions). */
void mcu_conv2d_s8_dsp_lean(const mcu_conv_params_t *p, const int8_t *input, const int8_t *filter,
                            const int32_t *bias, int8_t *output, int32_t per_pass, void *scratch);
#endif

/* mcu_conv2d_s8.c: whether the lean call's MVE variant takes every channel a pass, in groups of
 * MCU_CONV_MVE_LEAN_GROUP (the params carry kernel_sums and requant_bases: no constants in scratch;
 * onnxruntime's rounding lifts a group's corrections in its sums' first row), rather than blocks of
 * MCU_CONV_MVE_LEAN_BLOCK channels a call. */
int mcu_conv2d_s8_mve_lean_groups(const mcu_conv_params_t *p);

#if MCU_ISA_NATIVE == MCU_ISA_MVE
/* mcu_conv2d_s8_mve.c; lean: 0, or the lean call's variant: with mcu_conv2d_s8_mve_lean_groups, every
 * channel a pass in groups of `lean` channels (| MCU_CONV_MVE_LEAN_DIRECT, | MCU_CONV_MVE_LEAN_TWO:
 * the windows read where they lie); else blocks of MCU_CONV_MVE_LEAN_BLOCK a call; fuse:
 * mcu_conv2d_add_s8's residual Add, or NULL */
void mcu_conv2d_s8_mve(const mcu_conv_params_t *p, const int8_t *input, const int8_t *filter,
                       const int32_t *bias, int8_t *output, int lean, void *scratch,
                       const mcu_conv_fuse_t *fuse);
/* One block of output channels (c->corr and c->base filled) at every position: the MVE path's
 * loop nest, exposed for mcu_conv2d_s4. sums: three rows of sums_row(n) words (8, 16, 32 or 64
 * for the block's n channels) plus n + (n & 1) words; xq: 48 * ceil(K / 16) bytes; patch: K bytes
 * when windows are gathered (it may share the sums' bytes). */
void mcu_conv2d_s8_mve_block(const mcu_conv_block_t *c, const int8_t *input, int8_t *output,
                             int32_t *sums, int8_t *xq, int8_t *patch);
#endif

#endif /* MCU_CONV2D_S8_INTERNAL_H */
