/*
 * mcu_conv2d_s8.c - int8 2-D convolution (group == 1), NHWC input/output, OHWI filter: argument
 * checks, the choice of code path, its scratch size, and the call.
 *
 * Semantics of TFLite Micro's per-channel int8 convolution and CMSIS-NN's arm_convolve_s8 (the
 * spec: mcu_conv2d_s8_ref.c): one int32 sum per output element, taps that fall outside the input
 * are skipped (the same as padding with the input zero point), then requantize with the output
 * channel's multiplier and shift, add the output offset and clamp.
 *
 * Paths (each bit-exact with the reference: it adds the same integer terms in another order,
 * modulo 2^32 where a partial sum could leave int32):
 * - DSP (mcu_conv2d_s8_dsp.c, __ARM_FEATURE_DSP) for K = KH * KW * C_in up to
 *   2 * MCU_CONV_DSP_WORDS and realistic requantization (mcu_requant2_ok for every channel): up to
 *   four output positions at a time, their windows extended to int16 once and interleaved in
 *   scratch, every channel's weights read once per pass (SMLAD).
 * - MVE (mcu_conv2d_s8_mve.c, __ARM_FEATURE_MVE) for K up to MCU_CONV_PATCH_BYTES (any K when
 *   every window is one run of the input) and realistic requantization: three positions and two
 *   channels per tail-predicated VMLADAVA loop, requantized four channels at a time (mcu_requant4).
 * - Generic (mcu_conv2d_s8_generic.c, every target): the input offset taken out of the inner
 *   loops into per-channel corrections, windows read straight from the input or gathered into
 *   scratch, four channels per pass of the shared dot products (support/mcu_dot_s8.h, in the
 *   target's instructions).
 * The paths share the window gather and the residual Add's stores (mcu_conv2d_s8_common.c).
 * Under MCU_OPTIMIZE_SIZE (mcu_config.h) it plans as on MCU_ISA_C (MCU_ISA_PLAN): generic only.
 *
 * The lean call (mcu_conv2d_s8_lean: a layer run by rows in a tight memory plan) takes a lean
 * variant of the fast path when that needs at most MCU_CONV_LEAN_EXTRA bytes more scratch than
 * the generic path: on DSP at most two positions a pass, two channels at a time
 * (mcu_conv2d_s8_dsp_lean); on MVE, with the build-time constants below (kernel_sums and
 * requant_bases: mcu_conv2d_s8_mve_lean_groups), every channel of three positions a pass in groups
 * of MCU_CONV_MVE_LEAN_GROUP channels, MCU_CONV_MVE_LEAN_WIDE where its ctx holds their sums
 * (mcu_conv2d_s8_lean_wide_buffer_size), none of the constants in scratch, and so over its input
 * as the fast call (mcu_conv2d_s8_lean_in_place_down), where its ctx holds the groups or they need
 * no more than the generic path; where it holds neither, the groups reading the windows where they
 * lie (MCU_CONV_MVE_LEAN_DIRECT: the windows that are not one run of the input gathered, K bytes
 * each, then their sums; three positions a pass, else two; not over its input) where they fit its
 * ctx or need no more than the generic path; else the generic path; without the constants blocks of
 * MCU_CONV_MVE_LEAN_BLOCK channels a call; else the generic path. Its scratch on an ISA: mcu_conv2d_s8_lean_buffer_size
 * (mcu_conv2d_s8_internal.h). Where
 * its ctx holds the fast path's scratch it runs the fast call, unless on DSP its channel pairs are
 * the faster (lean_plan; mcu_conv2d_s8_lean_fast says which): a streamed plan's band over the input
 * rows the bands before it have passed (emitter/plan/stream.py fed).
 *
 * A layer called band by band or by the lean call carries build-time constants in its params
 * (mcugen writes them): kernel_sums, the offset corrections the generic and MVE paths would
 * otherwise sum from the whole filter on every call, requant_bases, the MVE path's requantization
 * bases, and channels_fast, the per-channel check (mcu_conv2d_s8_channels_fast) every call would
 * make again. The fast call's scratch stays that of the plain call.
 *
 * Scratch (mcu_conv2d_s8_get_buffer_size, exact for each path; none is taken from the stack):
 * - generic: 4 * min(C_out, MCU_CONV_OC_BLOCK) bytes of corrections, plus K bytes of patch when
 *   K <= MCU_CONV_PATCH_BYTES and some window is not one run of the input;
 * - DSP: 8 * P * ceil(K / 4) bytes of interleaved windows, plus 8 * C_out bytes of per-channel
 *   requantization constants for MCU_ROUND_NEAREST_NO_TIE, plus, when C_in % 4 != 0 and some
 *   window is not one run of the input, a patch of KW * C_in bytes (windows read row by row:
 *   KW * C_in % 4 == 0, no horizontal dilation) or K bytes;
 * - MVE: for n = min(C_out, MCU_CONV_MVE_OC_BLOCK), 8 * n bytes of corrections and
 *   requantization bases, 48 * ceil(K / 16) bytes of three interleaved windows, then
 *   4 * (2 * row + n rounded up to even) of sums (row: n rounded up to 8, 16, 32 or 64), or K
 *   bytes if more and some window is not one run of the input (the patch shares the sums); the
 *   lean call's groups of g channels only the windows and their sums (row: g rounded up to 8 or
 *   16), its direct groups the gathered windows (K bytes each, rounded up to 4) and the rows of
 *   sums.
 */
#include <stdint.h>

#include "mcu_conv2d_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_nn.h"

/* Positions per pass (P = 4, 2 or 1) of the DSP path for this call; 0 when it cannot run. */
int32_t mcu_conv2d_s8_dsp_positions(const mcu_conv_params_t *p, const int32_t *bias)
{
    if (p->filter.h > 2 * MCU_CONV_DSP_WORDS || p->filter.w > 2 * MCU_CONV_DSP_WORDS ||
        p->input.c > 2 * MCU_CONV_DSP_WORDS) {
        return 0;
    }
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t groups = (k + 3) >> 2;
    if (groups * 2 > MCU_CONV_DSP_WORDS || (k > MCU_CONV_DSP_PATCH && p->input.c % 4 != 0)) {
        return 0;
    }
    if (p->q.rounding == MCU_ROUND_NEAREST_EVEN) {
        return 0; /* onnxruntime's rounding, not proven tie-free: generic loops */
    }
    if (!p->channels_fast && !mcu_conv2d_s8_channels_fast(p, bias)) {
        return 0;
    }
    const int32_t positions = p->input.n * p->output.h * p->output.w;
    int32_t per_pass =
        groups * 8 <= MCU_CONV_DSP_WORDS ? 4 : (groups * 4 <= MCU_CONV_DSP_WORDS ? 2 : 1);
    while (per_pass > positions) {
        per_pass >>= 1;
    }
    return per_pass;
}

/* Whether some output position's window is not one run of the input (it has padding taps, or
 * its taps are not adjacent in one input row): such windows are gathered into a patch. */
int mcu_conv2d_s8_gathers(const mcu_conv_params_t *p)
{
    const int contiguous = p->filter.h == 1 && (p->filter.w == 1 || p->dilation_w == 1);
    if (!contiguous || p->pad_top > 0 || p->pad_left > 0) {
        return 1; /* (the products below only where these do not decide) */
    }
    const int64_t last_y = (int64_t)(p->output.h - 1) * p->stride_h +
                           (int64_t)(p->filter.h - 1) * p->dilation_h - p->pad_top;
    const int64_t last_x = (int64_t)(p->output.w - 1) * p->stride_w +
                           (int64_t)(p->filter.w - 1) * p->dilation_w - p->pad_left;
    return last_y >= p->input.h || last_x >= p->input.w;
}

/* The DSP path's patch bytes: none when C_in % 4 == 0 (windows read tap by tap) or every window is
 * one run of the input; one window row when windows are read row by row (KW * C_in % 4 == 0, no
 * horizontal dilation); else the whole window (gathered). */
static int32_t dsp_patch(const mcu_conv_params_t *p, int32_t k, int gathers)
{
    if (p->input.c % 4 == 0 || !gathers) {
        return 0;
    }
    const int32_t w_row = p->filter.w * p->input.c;
    return w_row % 4 == 0 && p->dilation_w == 1 ? w_row : k;
}

int mcu_conv2d_s8_mve_lean_groups(const mcu_conv_params_t *p)
{
    return p->kernel_sums != NULL && p->requant_bases != NULL;
}

int mcu_conv2d_s8_channels_fast(const mcu_conv_params_t *p, const int32_t *bias)
{
    for (int32_t oc = 0; oc < p->output.c; ++oc) {
        if (!mcu_requant2_ok(p->multiplier[oc], p->shift[oc], bias != NULL ? bias[oc] : 0)) {
            return 0;
        }
    }
    return 1;
}

/* Every channel's constants allow mcu_requant2/mcu_requant4 (MVE path). */
static int requant_fast(const mcu_conv_params_t *p, const int32_t *bias)
{
    if (p->filter.h * p->filter.w * p->input.c > MCU_CONV_FAST_MAX_K ||
        p->q.rounding == MCU_ROUND_NEAREST_EVEN) {
        return 0;
    }
    return p->channels_fast || mcu_conv2d_s8_channels_fast(p, bias);
}

static int32_t min32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

/* The fast path on `isa` (its per-channel conditions checked here, once a call) and the DSP
 * path's P (*per_pass; 0 on the other paths). */
static int32_t fast_path(const mcu_conv_params_t *p, const int32_t *bias, int32_t isa,
                         int gathers, int32_t *per_pass)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    *per_pass = 0;
    if (isa == MCU_ISA_DSP) {
        *per_pass = mcu_conv2d_s8_dsp_positions(p, bias);
        if (*per_pass > 0) {
            return MCU_PATH_DSP;
        }
    }
    if (isa == MCU_ISA_MVE && (k <= MCU_CONV_PATCH_BYTES || !gathers) &&
        requant_fast(p, bias)) {
        return MCU_PATH_MVE;
    }
    return MCU_PATH_GENERIC;
}

/* The lean call's MVE variant in groups of `group` channels (mcu_conv2d_s8_mve_lean_groups): the
 * windows of three positions, and three rows of the group's sums (the patch shares them). */
static int32_t groups_size(const mcu_conv_params_t *p, int32_t group, int gathers)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t g = min32(p->output.c, group);
    const int32_t row = g <= 8 ? 8 : g <= 16 ? 16 : g <= 32 ? 32 : 64;
    const int32_t sums = 4 * (2 * row + g + (g & 1));
    return 48 * ((k + 15) >> 4) + (gathers && k > sums ? k : sums);
}

/* The lean call's MVE groups reading their windows where they lie (MCU_CONV_MVE_LEAN_DIRECT), at
 * `windows` positions a pass: K bytes for each window where some are gathered, then that many rows
 * of the group's sums. */
static int32_t direct_size(const mcu_conv_params_t *p, int32_t group, int32_t windows, int gathers)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t g = min32(p->output.c, group);
    const int32_t row = g <= 8 ? 8 : g <= 16 ? 16 : g <= 32 ? 32 : 64;
    return (gathers ? (windows * k + 3) & ~3 : 0) + 4 * ((windows - 1) * row + g + (g & 1));
}

/* The scratch bytes of `path` (per_pass: the DSP path's P; gathers: mcu_conv2d_s8_gathers(p));
 * lean: the lean call's variant (on MVE blocks of MCU_CONV_MVE_LEAN_BLOCK channels; on DSP the
 * caller passes its P). */
static int32_t path_size(const mcu_conv_params_t *p, int32_t path, int32_t per_pass, int lean,
                         int gathers)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    if (path == MCU_PATH_DSP) {
        return 8 * per_pass * ((k + 3) >> 2) + dsp_patch(p, k, gathers) +
               (p->q.rounding == MCU_ROUND_NEAREST_NO_TIE ? 8 * p->output.c : 0);
    }
    if (path == MCU_PATH_MVE && lean && mcu_conv2d_s8_mve_lean_groups(p)) {
        return groups_size(p, MCU_CONV_MVE_LEAN_GROUP, gathers);
    }
    if (path == MCU_PATH_MVE) {
        const int32_t n = min32(p->output.c, lean ? MCU_CONV_MVE_LEAN_BLOCK : MCU_CONV_MVE_OC_BLOCK);
        const int32_t row = n <= 8 ? 8 : n <= 16 ? 16 : n <= 32 ? 32 : 64;
        const int32_t sums = 4 * (2 * row + n + (n & 1)); /* the patch shares them */
        return 8 * n + 48 * ((k + 15) >> 4) + (gathers && k > sums ? k : sums);
    }
    return 4 * min32(p->output.c, MCU_CONV_OC_BLOCK) + (k <= MCU_CONV_PATCH_BYTES && gathers ? k : 0);
}

/* The path on `isa`, and through *size its scratch bytes; per_pass: the DSP path's P. */
static int32_t plan(const mcu_conv_params_t *p, const int32_t *bias, int32_t isa, int32_t *size,
                    int32_t *per_pass)
{
    const int gathers = mcu_conv2d_s8_gathers(p);
    const int32_t path = fast_path(p, bias, isa, gathers, per_pass);
    *size = path_size(p, path, *per_pass, 0, gathers);
    return path;
}

/* The lean call's path on `isa` with `room` bytes of scratch (its ctx's): the fast call where its
 * scratch fits and it is the faster (*fast = 1); else the least: the fast path's lean variant (at
 * most two positions a pass on DSP, channel pairs; on MVE blocks of MCU_CONV_MVE_LEAN_BLOCK
 * channels) when that needs at most MCU_CONV_LEAN_EXTRA bytes more than the generic path, else
 * the generic path. On DSP the channel pairs (19 instructions per 16 products) beat passes of two
 * positions (22), and passes of four (17) where those round the call's positions up more. */
static int32_t lean_plan(const mcu_conv_params_t *p, const int32_t *bias, int32_t isa,
                         int32_t room, int32_t *size, int32_t *per_pass, int *fast)
{
    int32_t fast_pp;
    const int gathers = mcu_conv2d_s8_gathers(p);
    const int32_t path = fast_path(p, bias, isa, gathers, &fast_pp);
    const int32_t fast_size = path_size(p, path, fast_pp, 0, gathers);
    int32_t lean = path;
    *per_pass = min32(fast_pp, 2);
    *size = path_size(p, path, *per_pass, 1, gathers);
    const int32_t generic = path_size(p, MCU_PATH_GENERIC, 0, 1, gathers);
    const int groups = path == MCU_PATH_MVE && mcu_conv2d_s8_mve_lean_groups(p);
    if (groups) {
        /* the groups of MCU_CONV_MVE_LEAN_GROUP channels where the room holds them,
         * MCU_CONV_MVE_LEAN_WIDE where it holds theirs (*per_pass: the channels of a group); with
         * less room, the direct groups of three positions a pass, else of two, where they fit the
         * room or need no more than the generic path; else the least of the generic path and the
         * groups */
        /* (each size computed only where it decides: a lean call plans once a call) */
        const int32_t budget = room > generic ? room : generic; /* the room, or the least */
        int32_t direct3 = 0, direct2 = 0;
        if (room < *size && (direct3 = direct_size(p, MCU_CONV_MVE_LEAN_GROUP, 3, gathers)) <= budget) {
            /* no room to copy the windows: read where they lie, three positions a pass */
            const int32_t direct_wide = direct_size(p, MCU_CONV_MVE_LEAN_WIDE, 3, gathers);
            *per_pass = MCU_CONV_MVE_LEAN_DIRECT |
                        (direct_wide <= room ? MCU_CONV_MVE_LEAN_WIDE : MCU_CONV_MVE_LEAN_GROUP);
            *size = direct_wide <= room ? direct_wide : direct3;
        } else if (room < *size &&
                   (direct2 = direct_size(p, MCU_CONV_MVE_LEAN_GROUP, 2, gathers)) <= budget) {
            *per_pass = MCU_CONV_MVE_LEAN_DIRECT | MCU_CONV_MVE_LEAN_TWO | MCU_CONV_MVE_LEAN_GROUP;
            *size = direct2;
        } else if (*size > generic && room < *size) {
            lean = MCU_PATH_GENERIC;
            *size = generic;
            *per_pass = 0;
        } else {
            const int32_t wide = groups_size(p, MCU_CONV_MVE_LEAN_WIDE, gathers);
            *per_pass = wide <= room ? MCU_CONV_MVE_LEAN_WIDE : MCU_CONV_MVE_LEAN_GROUP;
            *size = wide <= room ? wide : *size;
        }
    } else if (path != MCU_PATH_GENERIC && *size > generic + MCU_CONV_LEAN_EXTRA) {
        lean = MCU_PATH_GENERIC;
        *size = generic;
        *per_pass = 0;
    }
    const int32_t n = p->input.n * p->output.h * p->output.w;
    const int pairs_win = lean == MCU_PATH_DSP &&
                          (fast_pp < 4 || 17 * ((n + 3) & ~3) > 19 * ((n + 1) & ~1));
    *fast = fast_size <= room && !pairs_win;
    if (*fast) {
        *size = fast_size;
        *per_pass = fast_pp;
        return path;
    }
    if (lean == MCU_PATH_MVE && !groups) {
        *per_pass = MCU_CONV_MVE_LEAN_BLOCK; /* its blocks of channels */
    }
    return lean;
}

int32_t mcu_conv2d_s8_lean_path(const mcu_conv_params_t *params, const int32_t *bias, int32_t isa)
{
    int32_t size, per_pass;
    int fast;
    return lean_plan(params, bias, isa, 0, &size, &per_pass, &fast);
}

int32_t mcu_conv2d_s8_lean_buffer_size(const mcu_conv_params_t *params, const int32_t *bias,
                                       int32_t isa)
{
    int32_t size, per_pass;
    int fast;
    (void)lean_plan(params, bias, isa, 0, &size, &per_pass, &fast);
    return size;
}

int32_t mcu_conv2d_s8_lean_wide_buffer_size(const mcu_conv_params_t *params, const int32_t *bias,
                                            int32_t isa)
{
    int32_t size, per_pass;
    int fast;
    (void)lean_plan(params, bias, isa, 0, &size, &per_pass, &fast);
    if (mcu_conv2d_s8_path(params, bias, isa) == MCU_PATH_MVE && mcu_conv2d_s8_mve_lean_groups(params)) {
        size = groups_size(params, MCU_CONV_MVE_LEAN_WIDE, mcu_conv2d_s8_gathers(params));
    }
    return size;
}

int32_t mcu_conv2d_s8_lean_room_path(const mcu_conv_params_t *params, const int32_t *bias,
                                     int32_t isa, int32_t room)
{
    int32_t size, per_pass;
    int fast;
    return lean_plan(params, bias, isa, room, &size, &per_pass, &fast);
}

int mcu_conv2d_s8_lean_fast(const mcu_conv_params_t *params, const int32_t *bias, int32_t isa,
                             int32_t room)
{
    int32_t size, per_pass;
    int fast;
    (void)lean_plan(params, bias, isa, room, &size, &per_pass, &fast);
    return fast;
}

int32_t mcu_conv2d_s8_get_buffer_size(const mcu_conv_params_t *params, const int32_t *bias,
                                      int32_t isa)
{
    int32_t size, per_pass;
    (void)plan(params, bias, isa, &size, &per_pass);
    return size;
}

int32_t mcu_conv2d_s8_path(const mcu_conv_params_t *params, const int32_t *bias, int32_t isa)
{
    int32_t size, per_pass;
    return plan(params, bias, isa, &size, &per_pass);
}

/* The call on the paths of MCU_ISA_PLAN; lean: the lean call's (lean_plan). */
static mcu_status_t conv2d(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                           const int8_t *input, const int8_t *filter, const int32_t *bias,
                           int8_t *output, const mcu_conv_fuse_t *fuse, int lean)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_dims_t *const in_dims = &params->input;
    const mcu_dims_t *const f_dims = &params->filter;
    const mcu_dims_t *const out_dims = &params->output;
    if (!dims_valid(in_dims) || !dims_valid(f_dims) || !dims_valid(out_dims) ||
        f_dims->c != in_dims->c || f_dims->n != out_dims->c || out_dims->n != in_dims->n ||
        params->stride_h < 1 || params->stride_w < 1 || params->dilation_h < 1 ||
        params->dilation_w < 1 || params->pad_top < 0 || params->pad_left < 0 ||
        !quant_io_valid(&params->q) ||
        (!params->channels_fast && !shifts_valid(params->shift, out_dims->c))) {
        return MCU_ERR_ARG;
    }
    int32_t size, per_pass;
    int fast = 1;
    const int32_t path = lean ? lean_plan(params, bias, MCU_ISA_PLAN, ctx != NULL ? ctx->size : 0,
                                          &size, &per_pass, &fast)
                              : plan(params, bias, MCU_ISA_PLAN, &size, &per_pass);
    if (!scratch_ok(ctx, size)) {
        return MCU_ERR_SCRATCH;
    }
    void *const scratch = size > 0 ? ctx->buf : NULL;
    lean = !fast; /* the lean call is the fast one where its ctx has room for that */
#if MCU_ISA_PLAN == MCU_ISA_DSP
    if (path == MCU_PATH_DSP) {
        if (lean) {
            mcu_conv2d_s8_dsp_lean(params, input, filter, bias, output, per_pass, scratch);
        } else {
            mcu_conv2d_s8_dsp(params, input, filter, bias, output, per_pass, scratch, fuse);
        }
        return MCU_OK;
    }
#elif MCU_ISA_PLAN == MCU_ISA_MVE
    if (path == MCU_PATH_MVE) {
        mcu_conv2d_s8_mve(params, input, filter, bias, output, lean ? per_pass : 0, scratch, fuse);
        return MCU_OK;
    }
#endif
    (void)path;
    (void)per_pass;
    mcu_conv2d_s8_generic(params, input, filter, bias, output, scratch, fuse);
    return MCU_OK;
}

mcu_status_t mcu_conv2d_s8(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                           const int8_t *input, const int8_t *filter, const int32_t *bias,
                           int8_t *output)
{
    return conv2d(ctx, params, input, filter, bias, output, NULL, 0);
}

mcu_status_t mcu_conv2d_s8_run(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                               const int8_t *input, const int8_t *filter, const int32_t *bias,
                               int8_t *output, const mcu_conv_fuse_t *fuse)
{
    return conv2d(ctx, params, input, filter, bias, output, fuse, 0);
}

mcu_status_t mcu_conv2d_s8_lean(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                                const int8_t *input, const int8_t *filter, const int32_t *bias,
                                int8_t *output)
{
    return conv2d(ctx, params, input, filter, bias, output, NULL, 1);
}
