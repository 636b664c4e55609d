/*
 * kernel_info.c - host tool: asks mcu_runtime's own dispatchers which code path a call takes and
 * how much scratch it needs, so that the emitter plans with the C's answers instead of a copy of
 * its formulas (emitter/kernels/kernel_info.py builds it with the host gcc, caches it and asks it).
 *
 * One query per line on stdin, one answer line "PATH SIZE" on stdout (PATH: MCU_PATH_GENERIC 0,
 * MCU_PATH_DSP 1, MCU_PATH_MVE 2; SIZE: the _get_buffer_size() bytes), flushed after each line.
 * ISA is MCU_ISA_C 0, MCU_ISA_DSP 1 or MCU_ISA_MVE 2: the dispatchers' queries take the ISA as an
 * argument, so this one host build answers for every target. The numbers are the params struct's
 * fields in mcu_nn.h order, then the per-channel arrays:
 *
 *   conv ISA  in(n h w c) filter(n h w c) out(n h w c) stride_h stride_w dilation_h dilation_w
 *             pad_top pad_left  q(input_offset output_offset act_min act_max rounding)
 *             C multiplier[C] shift[C] HAS_BIAS bias[C if HAS_BIAS]
 *   lean ISA  (as conv): mcu_conv2d_s8_lean's path and scratch on ISA (mcu_conv2d_s8_lean_path,
 *             mcu_conv2d_s8_lean_buffer_size: mcu_conv2d_s8_internal.h)
 *   room ISA ROOM (then as conv): mcu_conv2d_s8_lean's path with ROOM bytes of scratch, and as SIZE
 *             1 where with them it runs the fast call (mcu_conv2d_s8_lean_fast), else 0
 *   pw   ISA  (as conv): the path, and mcu_conv2d_s8_in_place_down() as SIZE (-1: not in place)
 *   ok   ISA  (as conv): the path, and mcu_conv2d_s8_channels_fast() as SIZE (1 or 0)
 *   leans, rooms ISA: lean and room for params that carry build-time kernel_sums and
 *             requant_bases (mcugen gives them to every lean call: its MVE variant then needs less
 *             scratch)
 *   wide, wides ISA (as conv; wides with them): the lean path, and
 *             mcu_conv2d_s8_lean_wide_buffer_size() as SIZE
 *   lpws ISA  (as conv, with them): the lean path, and mcu_conv2d_s8_lean_in_place_down()
 *             as SIZE (-1: not in place)
 *   dw   ISA  in filter out depth_multiplier stride_h ... pad_left q C multiplier shift HAS_BIAS bias
 *   dwip ISA  (as dw): the path, and mcu_depthwise_conv2d_s8_in_place_get_buffer_size() as SIZE
 *   dwov ISA  (as dw): the path, and mcu_depthwise_conv2d_s8_overlap_down() as SIZE (-1: not over it)
 *   dwlean ISA (as dw): mcu_depthwise_conv2d_s8_lean_path() and _lean_buffer_size()
 *   dwlov ISA (as dw): the lean path, and mcu_depthwise_conv2d_s8_lean_overlap_down() as SIZE
 *   dwok ISA  (as dw): the path, and mcu_depthwise_conv2d_s8_channels_fast() as SIZE (1 or 0)
 *   dwgw ISA  (as dw): the lean path, and the int32 words of one build-time group of dsp_groups
 *             (DW_DSP_GROUP_WORDS: the shifted 3x3 layout or the layer's taps)
 *   dwleans, dwlovs ISA: dwlean and dwlov for params that carry build-time dsp_groups and mve_groups
 *             (mcugen gives a layer it calls lean those of its target's fast path: no scratch then)
 *   fc   ISA  batches in_features out_features q per_channel C multiplier[C] shift[C]
 *
 * A malformed line ends the tool with status 2.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcu_conv2d_s8_internal.h"
#include "mcu_depthwise_conv2d_s8_internal.h"
#include "mcu_nn.h"

#define MAX_CHANNELS 65536

static int32_t multiplier[MAX_CHANNELS], shift[MAX_CHANNELS], bias[MAX_CHANNELS];
/* the kernel_sums of a query with them: only that there are some matters to a path or size */
static const int32_t sums[1];

/* `count` int32 values into `out`. */
static int read_ints(int32_t *out, int count)
{
    for (int i = 0; i < count; ++i) {
        long v;
        if (scanf("%ld", &v) != 1) {
            return 0;
        }
        out[i] = (int32_t)v;
    }
    return 1;
}

/* v[0..3] as [N, H, W, C] dims; v[0..4] as the quantization (input_offset output_offset act_min
 * act_max rounding): the struct fields in mcu_nn.h order. */
static mcu_dims_t dims_at(const int32_t *v)
{
    const mcu_dims_t d = {v[0], v[1], v[2], v[3]};
    return d;
}

static mcu_quant_io_t quant_at(const int32_t *v)
{
    const mcu_quant_io_t q = {v[0], v[1], v[2], v[3], v[4]};
    return q;
}

/* "C multiplier[C] shift[C]" and, with_bias, "HAS_BIAS bias[C]": the channel count, 0 on error;
 * *has_bias whether a bias was given. */
static int read_channels(int with_bias, int32_t *has_bias)
{
    int32_t count;
    if (!read_ints(&count, 1) || count < 1 || count > MAX_CHANNELS || !read_ints(multiplier, count) ||
        !read_ints(shift, count)) {
        return 0;
    }
    *has_bias = 0;
    if (with_bias && (!read_ints(has_bias, 1) || (*has_bias && !read_ints(bias, count)))) {
        return 0;
    }
    return count;
}

/* A conv or depthwise query after its ISA ("in filter out [depth_multiplier] stride_h stride_w
 * dilation_h dilation_w pad_top pad_left q", then the channels) as depthwise params (a conv's
 * depth_multiplier 1); 0 on a malformed query. */
static int read_window(mcu_depthwise_conv_params_t *p, int with_multiplier, int32_t *has_bias)
{
    int32_t v[24];
    if (!read_ints(v, with_multiplier ? 24 : 23)) {
        return 0;
    }
    const int32_t *w = v + 12; /* past the three dims */
    memset(p, 0, sizeof(*p));
    p->input = dims_at(v), p->filter = dims_at(v + 4), p->output = dims_at(v + 8);
    p->depth_multiplier = with_multiplier ? *w++ : 1;
    p->stride_h = w[0], p->stride_w = w[1], p->dilation_h = w[2], p->dilation_w = w[3];
    p->pad_top = w[4], p->pad_left = w[5], p->q = quant_at(w + 6);
    p->multiplier = multiplier, p->shift = shift;
    return read_channels(1, has_bias) == p->output.c;
}

int main(void)
{
    char op[8];
    int32_t isa;
    for (;;) {
        const int got = scanf("%7s %d", op, &isa);
        if (got == EOF) {
            return 0;
        }
        if (got != 2) {
            return 2;
        }
        int32_t path, size, room = 0;
        int32_t has_bias;
        mcu_depthwise_conv_params_t w;
        const size_t len = strlen(op);
        const int with_sums = strcmp(op, "leans") == 0 || strcmp(op, "rooms") == 0 ||
                              strcmp(op, "lpws") == 0 || strcmp(op, "wides") == 0 ||
                              strcmp(op, "dwleans") == 0 || strcmp(op, "dwlovs") == 0;
        if (with_sums) {
            op[len - 1] = '\0'; /* then as the query without the s */
        }
        if (strcmp(op, "room") == 0 && scanf("%d", &room) != 1) {
            return 2;
        }
        if (strcmp(op, "conv") == 0 || strcmp(op, "lean") == 0 || strcmp(op, "pw") == 0 ||
            strcmp(op, "room") == 0 || strcmp(op, "ok") == 0 || strcmp(op, "lpw") == 0 ||
            strcmp(op, "wide") == 0) {
            if (!read_window(&w, 0, &has_bias)) {
                return 2;
            }
            const mcu_conv_params_t p = {
                .input = w.input, .filter = w.filter, .output = w.output,
                .stride_h = w.stride_h, .stride_w = w.stride_w,
                .dilation_h = w.dilation_h, .dilation_w = w.dilation_w,
                .pad_top = w.pad_top, .pad_left = w.pad_left,
                .q = w.q, .multiplier = w.multiplier, .shift = w.shift,
                .kernel_sums = with_sums ? sums : NULL, .requant_bases = with_sums ? sums : NULL};
            if (op[0] == 'w') {
                path = mcu_conv2d_s8_lean_path(&p, has_bias ? bias : NULL, isa);
                size = mcu_conv2d_s8_lean_wide_buffer_size(&p, has_bias ? bias : NULL, isa);
            } else if (op[1] == 'p') { /* lpw */
                path = mcu_conv2d_s8_lean_path(&p, has_bias ? bias : NULL, isa);
                size = mcu_conv2d_s8_lean_in_place_down(&p, has_bias ? bias : NULL, isa);
            } else if (op[0] == 'r') {
                path = mcu_conv2d_s8_lean_room_path(&p, has_bias ? bias : NULL, isa, room);
                size = mcu_conv2d_s8_lean_fast(&p, has_bias ? bias : NULL, isa, room);
            } else if (op[0] == 'l') {
                path = mcu_conv2d_s8_lean_path(&p, has_bias ? bias : NULL, isa);
                size = mcu_conv2d_s8_lean_buffer_size(&p, has_bias ? bias : NULL, isa);
            } else if (op[0] == 'p') {
                path = mcu_conv2d_s8_path(&p, has_bias ? bias : NULL, isa);
                size = mcu_conv2d_s8_in_place_down(&p, has_bias ? bias : NULL, isa);
            } else if (op[0] == 'o') {
                path = mcu_conv2d_s8_path(&p, has_bias ? bias : NULL, isa);
                size = mcu_conv2d_s8_channels_fast(&p, has_bias ? bias : NULL);
            } else {
                path = mcu_conv2d_s8_path(&p, has_bias ? bias : NULL, isa);
                size = mcu_conv2d_s8_get_buffer_size(&p, has_bias ? bias : NULL, isa);
            }
        } else if (strcmp(op, "dw") == 0 || strcmp(op, "dwip") == 0 || strcmp(op, "dwov") == 0 ||
                   strcmp(op, "dwlean") == 0 || strcmp(op, "dwlov") == 0 || strcmp(op, "dwok") == 0 ||
                   strcmp(op, "dwgw") == 0) {
            if (!read_window(&w, 1, &has_bias)) {
                return 2;
            }
            w.dsp_groups = with_sums ? sums : NULL; /* only that there are some matters */
            w.mve_groups = w.dsp_groups;
            const int32_t *const b = has_bias ? bias : NULL;
            path = op[2] == 'l' || op[2] == 'g' ? mcu_depthwise_conv2d_s8_lean_path(&w, b, isa)
                                : mcu_depthwise_conv2d_s8_path(&w, b, isa);
            size = op[2] == 'g' ? DW_DSP_GROUP_WORDS(mcu_dw_dsp_group_taps(&w))
                   : op[2] == 'o' && op[3] == 'k' ? mcu_depthwise_conv2d_s8_channels_fast(&w, b)
                   : op[2] == 'i'   ? mcu_depthwise_conv2d_s8_in_place_get_buffer_size(&w, b, isa)
                   : op[2] == 'o' ? mcu_depthwise_conv2d_s8_overlap_down(&w, b, isa)
                   : op[3] == 'o' ? mcu_depthwise_conv2d_s8_lean_overlap_down(&w, b, isa)
                   : op[2] == 'l' ? mcu_depthwise_conv2d_s8_lean_buffer_size(&w, b, isa)
                                  : mcu_depthwise_conv2d_s8_get_buffer_size(&w, b, isa);
        } else if (strcmp(op, "fc") == 0) {
            /* batches in_features out_features, q, per_channel */
            mcu_fc_params_t p;
            int32_t v[9];
            memset(&p, 0, sizeof(p));
            if (!read_ints(v, 9)) {
                return 2;
            }
            p.batches = v[0], p.in_features = v[1], p.out_features = v[2], p.q = quant_at(v + 3);
            p.per_channel = v[8];
            if (read_channels(0, &has_bias) != (p.per_channel ? p.out_features : 1)) {
                return 2;
            }
            p.multiplier = multiplier, p.shift = shift;
            path = mcu_fully_connected_s8_path(&p, NULL, isa);
            size = mcu_fully_connected_s8_get_buffer_size(&p, NULL, isa);
        } else {
            return 2;
        }
        printf("%d %d\n", (int)path, (int)size);
        fflush(stdout);
    }
}
