/*
 * mcu_depthwise_conv2d_s4.c - int8 depthwise 2-D convolution with 4-bit weights, NHWC, any depth
 * multiplier (mcu_nn_s4.h gives the filter layout: per tap, groups of 8 channels in 4 bytes, byte j
 * holding channel j low and channel h + j high, h = 4 or, for the last C_out % 8 channels, half of
 * them rounded up). The numbers are mcu_depthwise_conv2d_s8's: one int32 sum per output element,
 * bias plus (in + input_offset) * w over the taps inside the input (a padding tap adds nothing),
 * then mcu_output_stage.
 *
 * Paths:
 * - Unpacked (every target), filters of at most MCU_DW_S4_UNPACK_BYTES weights (KH * KW * C_out):
 *   the filter unpacked to int8 [KH * KW][C_out] at the end of the scratch once a call (two words
 *   per group of 8 channels and tap), then mcu_depthwise_conv2d_s8 on it with the scratch before
 *   (its DSP, MVE or generic path: the int8 twin's instructions plus the unpacking).
 * The s4 paths, for larger filters:
 * - DSP (mcu_depthwise_conv2d_s4_dsp.c, depth multiplier 1): eight channels a step, SXTB16 /
 *   SXTAB16 pairs and one SMLABB / SMLATT a product, mcu_requant2.
 * - MVE (mcu_depthwise_conv2d_s4_mve.c, depth multiplier 1): eight channels a step in two int32x4
 *   sums, four bytes of weights a tap becoming both halves' weights (VSHL/VSHR); requantized by
 *   mcu_requant4 when the constants allow, from per-channel bases and starting sums in scratch.
 * - Generic (here, every target): per output position its taps inside the input once
 *   (valid_taps), then its channels two at a time (one weight byte a tap).
 * Scratch (mcu_depthwise_conv2d_s4_get_buffer_size): unpacked, mcu_depthwise_conv2d_s8's scratch
 * (asked without the bias) plus KH * KW * C_out bytes; else 8 * C_out bytes on the DSP and MVE
 * paths, none on the generic one.
 */
#include <stdint.h>
#include <string.h>

#include "mcu_depthwise_conv2d_s4_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_nn.h"
#include "mcu_nn_s4.h"
#include "mcu_requant.h"

static inline int32_t lo4(uint32_t b)
{
    return (int32_t)(b << 28) >> 28;
}

static inline int32_t hi4(uint32_t b)
{
    return (int32_t)(b << 24) >> 28;
}

static int params_valid(const mcu_depthwise_conv_params_t *p)
{
    return dims_valid(&p->input) && dims_valid(&p->filter) && dims_valid(&p->output) &&
           p->filter.n == 1 && p->filter.c == p->output.c && p->output.n == p->input.n &&
           p->depth_multiplier >= 1 && p->output.c == p->input.c * p->depth_multiplier &&
           p->stride_h >= 1 && p->stride_w >= 1 && p->dilation_h >= 1 && p->dilation_w >= 1 &&
           p->pad_top >= 0 && p->pad_left >= 0 && quant_io_valid(&p->q) &&
           p->multiplier != NULL && p->shift != NULL && shifts_valid(p->shift, p->output.c);
}

void mcu_dw_s4_window(const mcu_depthwise_conv_params_t *p, const int8_t *image, int32_t oy,
                      int32_t ox, mcu_dw_s4_window_t *win)
{
    const int32_t y0 = oy * p->stride_h - p->pad_top;
    const int32_t x0 = ox * p->stride_w - p->pad_left;
    valid_taps(y0, p->dilation_h, p->filter.h, p->input.h, &win->ky0, &win->ky1);
    valid_taps(x0, p->dilation_w, p->filter.w, p->input.w, &win->kx0, &win->kx1);
    if (win->ky0 == win->ky1 || win->kx0 == win->kx1) { /* no tap inside: the sums are the biases */
        win->ky1 = win->ky0;
        win->x = image;
        return;
    }
    const int32_t iy = y0 + win->ky0 * p->dilation_h;
    const int32_t ix = x0 + win->kx0 * p->dilation_w;
    win->x = image + ((size_t)iy * (size_t)p->input.w + (size_t)ix) * (size_t)p->input.c;
}

/* sums a0, a1 of two channels over the window: weight byte `byte` of each tap row (low nibble:
 * the first channel, input channel in0; high: the second, in1) */
static inline void pair(const mcu_depthwise_conv_params_t *p, const mcu_dw_s4_window_t *win,
                        const uint8_t *filter, int32_t row, int32_t byte, int32_t in0, int32_t in1,
                        int32_t *a0, int32_t *a1)
{
    const int32_t off = p->q.input_offset;
    const int32_t c_in = p->input.c;
    const int32_t dy = p->dilation_h * p->input.w * c_in;
    const int32_t dx = p->dilation_w * c_in;
    int32_t s0 = *a0, s1 = *a1;
    const int8_t *xr = win->x;
    for (int32_t ky = win->ky0; ky < win->ky1; ++ky, xr += dy) {
        const uint8_t *w = filter + (ky * p->filter.w + win->kx0) * row + byte;
        const int8_t *x = xr;
        for (int32_t kx = win->kx0; kx < win->kx1; ++kx, x += dx, w += row) {
            const uint32_t b = *w;
            s0 += (x[in0] + off) * lo4(b);
            s1 += (x[in1] + off) * hi4(b);
        }
    }
    *a0 = s0;
    *a1 = s1;
}

void mcu_dw_s4_tail(const mcu_depthwise_conv_params_t *p, const mcu_dw_s4_window_t *win,
                    const uint8_t *filter, const int32_t *bias, int8_t *out, int32_t g)
{
    const int32_t c_out = p->output.c;
    const int32_t mult = p->depth_multiplier;
    const int32_t row = (c_out + 1) / 2;
    for (; g < c_out; g += MCU_DW_S4_GROUP) {
        const int32_t r = c_out - g < MCU_DW_S4_GROUP ? c_out - g : MCU_DW_S4_GROUP;
        const int32_t h = (r + 1) / 2;
        for (int32_t j = 0; j < h; ++j) {
            const int32_t oc0 = g + j, oc1 = g + h + j;
            const int has1 = oc1 < g + r; /* no second channel when r is odd */
            int32_t a0 = bias != NULL ? bias[oc0] : 0;
            int32_t a1 = bias != NULL && has1 ? bias[oc1] : 0;
            pair(p, win, filter, row, g / 2 + j, oc0 / mult, has1 ? oc1 / mult : oc0 / mult, &a0,
                 &a1);
            out[oc0] = mcu_output_stage(a0, p->multiplier[oc0], p->shift[oc0], &p->q);
            if (has1) {
                out[oc1] = mcu_output_stage(a1, p->multiplier[oc1], p->shift[oc1], &p->q);
            }
        }
    }
}

int mcu_dw_s4_constants(const mcu_depthwise_conv_params_t *p, const int32_t *bias, int32_t *base,
                        int32_t *init)
{
    int fast = p->q.rounding != MCU_ROUND_NEAREST_EVEN && p->filter.h * p->filter.w <= 65535;
    for (int32_t oc = 0; fast && oc < p->output.c; ++oc) {
        fast = mcu_requant2_ok_q(p->multiplier[oc], p->shift[oc], bias != NULL ? bias[oc] : 0,
                                 p->q.rounding);
    }
    for (int32_t oc = 0; oc < p->output.c; ++oc) {
        uint32_t lift = 0;
        base[oc] = 0;
        if (fast && p->q.rounding == MCU_ROUND_NEAREST_NO_TIE) {
            const int32_t m = p->multiplier[oc];
            base[oc] = mcu_requant2_base_q(m, p->shift[oc], &p->q);
            lift = (uint32_t)mcu_requant2_lift(m, p->shift[oc], &p->q);
        } else if (fast) {
            base[oc] = mcu_requant2_base(p->shift[oc], p->q.output_offset);
        }
        init[oc] = (int32_t)((uint32_t)(bias != NULL ? bias[oc] : 0) + lift);
    }
    return fast;
}

static void depthwise_generic(const mcu_depthwise_conv_params_t *p, const int8_t *input,
                              const uint8_t *filter, const int32_t *bias, int8_t *output)
{
    const int32_t c_out = p->output.c;
    const int32_t c_in = p->input.c;
    int8_t *out = output;
    for (int32_t b = 0; b < p->output.n; ++b) {
        const int8_t *image = input + (size_t)b * (size_t)(p->input.h * p->input.w * c_in);
        for (int32_t oy = 0; oy < p->output.h; ++oy) {
            for (int32_t ox = 0; ox < p->output.w; ++ox, out += c_out) {
                mcu_dw_s4_window_t win;
                mcu_dw_s4_window(p, image, oy, ox, &win);
                mcu_dw_s4_tail(p, &win, filter, bias, out, 0);
            }
        }
    }
}

/* KH * KW * C_out when the filter is unpacked (at most MCU_DW_S4_UNPACK_BYTES), else 0. */
static int32_t unpacked_bytes(const mcu_depthwise_conv_params_t *p)
{
    const int64_t n = (int64_t)p->filter.h * p->filter.w * p->output.c;
    return n <= MCU_DW_S4_UNPACK_BYTES ? (int32_t)n : 0;
}

/* Four nibbles (the low one of each byte of v) as four int8 bytes (mcu_conv2d_s4.c's s4_bytes). */
static inline uint32_t s4_bytes(uint32_t v)
{
    return (((v & 0x0F0F0F0Fu) ^ 0x88888888u) - 0x08080808u) ^ 0x80808080u;
}

/* The packed filter as int8 [KH * KW][C_out]: per tap, each group of 8 channels' 4 bytes as two
 * words of four, the last C_out % 8 channels (h = ceil(r / 2) bytes) byte by byte. */
static void unpack(const mcu_depthwise_conv_params_t *p, const uint8_t *filter, int8_t *d)
{
    const int32_t c = p->output.c;
    const int32_t row = (c + 1) / 2;
    const int32_t whole = c - c % MCU_DW_S4_GROUP;
    const int32_t r = c - whole;
    const int32_t h = (r + 1) / 2;
    for (int32_t t = p->filter.h * p->filter.w; t > 0; --t, filter += row, d += c) {
        int32_t g = 0;
        for (; g < whole; g += MCU_DW_S4_GROUP) {
            uint32_t v;
            memcpy(&v, filter + g / 2, 4);
            const uint32_t lo = s4_bytes(v);
            const uint32_t hi = s4_bytes(v >> 4);
            memcpy(d + g, &lo, 4);
            memcpy(d + g + 4, &hi, 4);
        }
        for (int32_t j = 0; j < h; ++j) {
            const uint32_t b = filter[g / 2 + j];
            d[g + j] = (int8_t)lo4(b);
            if (h + j < r) {
                d[g + h + j] = (int8_t)hi4(b);
            }
        }
    }
}

int32_t mcu_depthwise_conv2d_s4_path(const mcu_depthwise_conv_params_t *params, int32_t isa)
{
    if (unpacked_bytes(params) > 0) { /* mcu_depthwise_conv2d_s8's path (the bias checked per call) */
        return mcu_depthwise_conv2d_s8_path(params, NULL, isa);
    }
    if (params->depth_multiplier != 1) {
        return MCU_PATH_GENERIC;
    }
    return isa == MCU_ISA_MVE ? MCU_PATH_MVE : isa == MCU_ISA_DSP ? MCU_PATH_DSP : MCU_PATH_GENERIC;
}

int32_t mcu_depthwise_conv2d_s4_get_buffer_size(const mcu_depthwise_conv_params_t *params,
                                                int32_t isa)
{
    const int32_t unpacked = unpacked_bytes(params);
    if (unpacked > 0) { /* mcu_depthwise_conv2d_s8's scratch, then the unpacked filter */
        return mcu_depthwise_conv2d_s8_get_buffer_size(params, NULL, isa) + unpacked;
    }
    return mcu_depthwise_conv2d_s4_path(params, isa) != MCU_PATH_GENERIC ? 8 * params->output.c : 0;
}

mcu_status_t mcu_depthwise_conv2d_s4(const mcu_context_t *ctx,
                                     const mcu_depthwise_conv_params_t *params,
                                     const int8_t *input, const uint8_t *filter,
                                     const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || filter == NULL || output == NULL ||
        !params_valid(params)) {
        return MCU_ERR_ARG;
    }
    const int32_t size = mcu_depthwise_conv2d_s4_get_buffer_size(params, MCU_ISA_PLAN);
    if (!scratch_ok(ctx, size)) {
        return MCU_ERR_SCRATCH;
    }
    const int32_t unpacked = unpacked_bytes(params);
    if (unpacked > 0) { /* unpacked once, then mcu_depthwise_conv2d_s8 */
        const mcu_context_t sub = {ctx->buf, size - unpacked};
        int8_t *const w = (int8_t *)ctx->buf + (size - unpacked);
        unpack(params, filter, w);
        return mcu_depthwise_conv2d_s8(&sub, params, input, w, bias, output);
    }
#if MCU_ISA_PLAN == MCU_ISA_MVE
    if (mcu_depthwise_conv2d_s4_path(params, MCU_ISA_PLAN) == MCU_PATH_MVE) {
        mcu_depthwise_conv2d_s4_mve(params, input, filter, bias, output, ctx->buf);
        return MCU_OK;
    }
#elif MCU_ISA_PLAN == MCU_ISA_DSP
    if (mcu_depthwise_conv2d_s4_path(params, MCU_ISA_PLAN) == MCU_PATH_DSP) {
        mcu_depthwise_conv2d_s4_dsp(params, input, filter, bias, output, ctx->buf);
        return MCU_OK;
    }
#endif
    depthwise_generic(params, input, filter, bias, output);
    return MCU_OK;
}
