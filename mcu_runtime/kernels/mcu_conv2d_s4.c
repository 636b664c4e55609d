/*
 * mcu_conv2d_s4.c - int8 2-D convolution with 4-bit weights (group == 1; a 1-D convolution runs
 * with H = 1), NHWC input/output, filter packed two weights a byte (mcu_conv2d_s4_internal.h):
 * argument checks, the choice of code path, its scratch size, the window gather and the generic
 * path.
 *
 * The numbers are mcu_conv2d_s8's with weights in [-8, 7]: one int32 sum per output element,
 *   acc = sums[oc] + sum_k x[k] * w[oc, k],  sums[oc] = bias[oc] + input_offset * sum_k w[oc, k]
 * (the build computes sums: the input offset leaves the inner loops; a padding tap reads the input
 * zero point, x + input_offset = 0, as mcu_conv2d_s8 skipping it), then mcu_output_stage.
 *
 * Paths (each bit-exact with the generic one):
 * - DSP (mcu_conv2d_s4_dsp.c) for K up to 576 widened taps: up to four positions a pass, their
 *   windows widened to int16 once; each word of weights becomes four words of int16 pairs (16 w:
 *   the nibble left in the high half of its byte, SXTB16) for SMLAD, the sum shifted right by 4.
 * - MVE (mcu_conv2d_s4_mve.c): three positions and two channels a pass, 16 bytes of weights
 *   becoming two vectors of 16 (VSHL/VSHR) for VMLADAVA, tail-predicated.
 * - Generic (here, every target): one position a pass, its window read from the input or gathered.
 *
 * Scratch (mcu_conv2d_s4_get_buffer_size): generic K bytes of window when some window is gathered
 * (mcu_conv2d_s4_gathers), else none; DSP 2 * P * widened(K) bytes of int16 windows plus that
 * window; MVE 4 * 5 * 64 bytes of starting sums, requantization bases and three rows of sums,
 * plus 3 * K bytes of windows when some are gathered.
 */
#include <stdint.h>
#include <string.h>

#include "mcu_conv2d_s4_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_nn.h"
#include "mcu_nn_s4.h"
#include "mcu_requant.h"

int mcu_conv2d_s4_gathers(const mcu_conv_params_t *p)
{
    const int contiguous = p->filter.h == 1 && (p->filter.w == 1 || p->dilation_w == 1);
    const int64_t last_y = (int64_t)(p->output.h - 1) * p->stride_h +
                           (int64_t)(p->filter.h - 1) * p->dilation_h - p->pad_top;
    const int64_t last_x = (int64_t)(p->output.w - 1) * p->stride_w +
                           (int64_t)(p->filter.w - 1) * p->dilation_w - p->pad_left;
    const int border = p->pad_top > 0 || p->pad_left > 0 || last_y >= p->input.h ||
                       last_x >= p->input.w;
    return !contiguous || border;
}

/* n bytes: library calls for long runs, loops for short ones */
static inline void copy(int8_t *d, const int8_t *src, int32_t n)
{
    if (n >= 16) {
        memcpy(d, src, (size_t)n);
        return;
    }
    for (int32_t i = 0; i < n; ++i) {
        d[i] = src[i];
    }
}

static inline void fill(int8_t *d, int8_t v, int32_t n)
{
    if (n >= 16) {
        memset(d, v, (size_t)n);
        return;
    }
    for (int32_t i = 0; i < n; ++i) {
        d[i] = v;
    }
}

const int8_t *mcu_conv2d_s4_window(const mcu_conv_params_t *p, const int8_t *input, int32_t pos,
                                   int8_t *patch)
{
    const int32_t ox = pos % p->output.w;
    const int32_t oy = (pos / p->output.w) % p->output.h;
    const int32_t b = pos / (p->output.w * p->output.h);
    const int32_t c = p->input.c;
    const int8_t *image = input + (size_t)b * (size_t)(p->input.h * p->input.w * c);
    const int32_t y0 = oy * p->stride_h - p->pad_top;
    const int32_t x0 = ox * p->stride_w - p->pad_left;
    if (patch == NULL) { /* every window is one run of the input */
        return image + ((size_t)y0 * (size_t)p->input.w + (size_t)x0) * (size_t)c;
    }
    const int8_t zp = (int8_t)(-p->q.input_offset);
    int8_t *d = patch;
    int32_t kx0, kx1; /* the taps of a row inside the input */
    valid_taps(x0, p->dilation_w, p->filter.w, p->input.w, &kx0, &kx1);
    const int32_t row = p->filter.w * c;
    for (int32_t ky = 0; ky < p->filter.h; ++ky, d += row) {
        const int32_t iy = y0 + ky * p->dilation_h;
        if (iy < 0 || iy >= p->input.h || kx0 == kx1) {
            fill(d, zp, row);
            continue;
        }
        fill(d, zp, kx0 * c);
        const int8_t *src = image + ((size_t)iy * (size_t)p->input.w + (size_t)(x0 + kx0 * p->dilation_w)) *
                                        (size_t)c;
        if (p->dilation_w == 1) { /* the row's inside taps are one run of the input */
            copy(d + kx0 * c, src, (kx1 - kx0) * c);
        } else {
            for (int32_t kx = kx0; kx < kx1; ++kx, src += p->dilation_w * c) {
                copy(d + kx * c, src, c);
            }
        }
        fill(d + kx1 * c, zp, (p->filter.w - kx1) * c);
    }
    return patch;
}

int mcu_conv2d_s4_requant2(const mcu_conv_params_t *p, const int32_t *sums)
{
    if (p->q.rounding == MCU_ROUND_NEAREST_EVEN) {
        return 0;
    }
    for (int32_t oc = 0; oc < p->output.c; ++oc) {
        if (!mcu_requant2_ok(p->multiplier[oc], p->shift[oc], sums[oc])) {
            return 0;
        }
    }
    return 1;
}

int32_t mcu_conv2d_s4_dsp_positions(const mcu_conv_params_t *p)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    if (k > MCU_CONV_S4_DSP_BYTES) {
        return 0;
    }
    const int32_t bytes = 2 * mcu_conv2d_s4_widened(k);
    int32_t per_pass = 4 * bytes <= MCU_CONV_S4_DSP_BYTES   ? 4
                       : 2 * bytes <= MCU_CONV_S4_DSP_BYTES ? 2
                       : bytes <= MCU_CONV_S4_DSP_BYTES     ? 1
                                                            : 0;
    const int32_t positions = p->input.n * p->output.h * p->output.w;
    while (per_pass > positions) {
        per_pass >>= 1;
    }
    return per_pass;
}

/* The path on `isa`, its scratch bytes through *size and the DSP path's P through *per_pass. */
static int32_t plan(const mcu_conv_params_t *p, int32_t isa, int32_t *size, int32_t *per_pass)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t patch = mcu_conv2d_s4_gathers(p) ? k : 0;
    *per_pass = isa == MCU_ISA_DSP ? mcu_conv2d_s4_dsp_positions(p) : 0;
    if (*per_pass > 0) {
        *size = 2 * *per_pass * mcu_conv2d_s4_widened(k) + patch;
        return MCU_PATH_DSP;
    }
    if (isa == MCU_ISA_MVE) {
        *size = 4 * (2 + MCU_CONV_S4_MVE_POSITIONS) * MCU_CONV_S4_MVE_OC_BLOCK +
                MCU_CONV_S4_MVE_POSITIONS * patch;
        return MCU_PATH_MVE;
    }
    *size = patch;
    return MCU_PATH_GENERIC;
}

int32_t mcu_conv2d_s4_get_buffer_size(const mcu_conv_params_t *params, int32_t isa)
{
    int32_t size, per_pass;
    (void)plan(params, isa, &size, &per_pass);
    return size;
}

int32_t mcu_conv2d_s4_path(const mcu_conv_params_t *params, int32_t isa)
{
    int32_t size, per_pass;
    return plan(params, isa, &size, &per_pass);
}

/* sum_k x[k] * w[k] over the packed weights of one channel */
static int32_t dot_s4(const int8_t *x, const uint8_t *w, int32_t k)
{
    int32_t acc = 0;
    for (; k >= MCU_S4_BLOCK; k -= MCU_S4_BLOCK, x += MCU_S4_BLOCK, w += MCU_S4_BLOCK / 2) {
        for (int32_t j = 0; j < MCU_S4_BLOCK / 2; ++j) {
            acc += x[j] * mcu_s4_lo(w[j]) + x[MCU_S4_BLOCK / 2 + j] * mcu_s4_hi(w[j]);
        }
    }
    const int32_t h = (k + 1) / 2;
    for (int32_t j = 0; j < h; ++j) {
        acc += x[j] * mcu_s4_lo(w[j]);
        if (h + j < k) {
            acc += x[h + j] * mcu_s4_hi(w[j]);
        }
    }
    return acc;
}

static void conv_generic(const mcu_conv_params_t *p, const int8_t *input, const uint8_t *filter,
                         const int32_t *sums, int8_t *output, void *scratch)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t row = (k + 1) / 2;
    const int32_t positions = p->input.n * p->output.h * p->output.w;
    const int32_t c_out = p->output.c;
    int8_t *out = output;
    for (int32_t pos = 0; pos < positions; ++pos) {
        const int8_t *x = mcu_conv2d_s4_window(p, input, pos, (int8_t *)scratch);
        const uint8_t *w = filter;
        for (int32_t oc = 0; oc < c_out; ++oc, w += row) {
            const int32_t acc = (int32_t)((uint32_t)dot_s4(x, w, k) + (uint32_t)sums[oc]);
            *out++ = mcu_output_stage(acc, p->multiplier[oc], p->shift[oc], &p->q);
        }
    }
}

/* The call on the paths of `isa`: MCU_ISA_PLAN, or MCU_ISA_C for the generic path. */
static mcu_status_t conv2d(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                           const int8_t *input, const uint8_t *filter, const int32_t *sums,
                           int8_t *output, int32_t isa)
{
    if (params == NULL || input == NULL || filter == NULL || sums == NULL || output == NULL ||
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
        (int64_t)f_dims->h * f_dims->w * f_dims->c > 65535 || !quant_io_valid(&params->q) ||
        !shifts_valid(params->shift, out_dims->c)) {
        return MCU_ERR_ARG;
    }
    int32_t size, per_pass;
    const int32_t path = plan(params, isa, &size, &per_pass);
    if (!scratch_ok(ctx, size)) {
        return MCU_ERR_SCRATCH;
    }
    void *const scratch = size > 0 ? ctx->buf : NULL;
#if MCU_ISA_PLAN == MCU_ISA_DSP
    if (path == MCU_PATH_DSP) {
        mcu_conv2d_s4_dsp(params, input, filter, sums, output, per_pass, scratch);
        return MCU_OK;
    }
#elif MCU_ISA_PLAN == MCU_ISA_MVE
    if (path == MCU_PATH_MVE) {
        mcu_conv2d_s4_mve(params, input, filter, sums, output, scratch);
        return MCU_OK;
    }
#endif
    (void)path;
    (void)per_pass;
    conv_generic(params, input, filter, sums, output, scratch);
    return MCU_OK;
}

mcu_status_t mcu_conv2d_s4(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                           const int8_t *input, const uint8_t *filter, const int32_t *sums,
                           int8_t *output)
{
    return conv2d(ctx, params, input, filter, sums, output, MCU_ISA_PLAN);
}

mcu_status_t mcu_conv2d_s4_lean(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                                const int8_t *input, const uint8_t *filter, const int32_t *sums,
                                int8_t *output)
{
    return conv2d(ctx, params, input, filter, sums, output, MCU_ISA_C);
}
