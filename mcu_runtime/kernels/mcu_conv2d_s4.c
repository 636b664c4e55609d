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
 * Paths (each bit-exact with the generic one). The blocked ones unpack the int8 weights of a block
 * of output channels once into scratch (at most MCU_CONV_S4_UNPACK_BYTES, one channel at least),
 * then run every output position through mcu_conv2d_s8's own loops for that block (its
 * mcu_conv2d_s8_generic_block / _mve_block / _dsp; the params copied with the block's multipliers,
 * shifts and output start, so channels count from 0); the unpacking is paid once per block and
 * call, not per position:
 * - blocked DSP where mcu_conv2d_s8 takes its DSP path (dsp8_positions: not onnxruntime's
 *   unproven rounding, K <= 576, mcu_requant2 constants), blocks of up to 64 channels, their bias
 *   sums - input_offset * sum w (the s8 path adds the offset to the inputs);
 * - unblocked DSP (mcu_conv2d_s4_dsp.c) where only it fits (K up to 576 widened taps, C_in % 4 != 0
 *   past 144): up to four positions a pass, windows widened to int16, SMLAD on nibbles;
 * - blocked MVE where mcu_conv2d_s8 takes its MVE path (mve_ok), blocks of up to 64 channels,
 *   starting sums = sums (+ onnxruntime's lift), mcu_requant4 rows;
 * - blocked generic everywhere else (and when a sum is out of mcu_requant2's range), blocks of up
 *   to 32 channels (multiples of 4), corrections = sums;
 * - mcu_conv2d_s4_lean: the blocked generic path with blocks of 4 channels (the least scratch).
 *
 * Scratch (mcu_conv2d_s4_get_buffer_size; emitter/kernels/mcu_conv2d_s4.py repeats it): blocked
 * generic 4 n + n K (+ K of patch for gathered windows when K <= 576), n = unpack_block(32, 4, 1);
 * blocked DSP 4 n + mcu_conv2d_s8's DSP scratch for n channels + n K, n = unpack_block(64, 2, 16);
 * blocked MVE mcu_conv2d_s8's MVE scratch for n channels + n K, n = unpack_block(64, 2, 16) (each
 * blocked fast path at least the blocked generic one's); unblocked DSP 2 P widened(K) (+ K);
 * lean 4 n + n K (+ the patch), n = min(4, the blocked generic path's n).
 */
#include <stdint.h>
#include <string.h>

#include "mcu_conv2d_s4_internal.h"
#include "mcu_conv2d_s8_internal.h"
#include "../support/mcu_dot_s8.h"
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

/* Output channels a block on the blocked paths: at most `most`, their unpacked weights within
 * MCU_CONV_S4_UNPACK_BYTES but `least` channels at least (each block re-reads every window); a
 * multiple of `round` when it is not all of them and that many fit. */
static int32_t unpack_block(const mcu_conv_params_t *p, int32_t most, int32_t round, int32_t least)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    int32_t n = MCU_CONV_S4_UNPACK_BYTES / k;
    n = n > least ? n : least;
    n = n < most ? n : most;
    if (n >= p->output.c) {
        return p->output.c;
    }
    if (n >= round) {
        n -= n % round;
    }
    return n < 1 ? 1 : n;
}

/* Scratch of the blocked generic path: the block's corrections and unpacked weights, then the
 * window patch of mcu_conv2d_s8's generic path (K <= MCU_CONV_PATCH_BYTES, gathered windows). */
static int32_t generic_size(const mcu_conv_params_t *p)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t n = unpack_block(p, MCU_CONV_OC_BLOCK, 4, 1);
    return 4 * n + n * k + (k <= MCU_CONV_PATCH_BYTES && mcu_conv2d_s4_gathers(p) ? k : 0);
}

/* Words between rows of sums of mcu_conv2d_s8's MVE path for a block of n channels. */
static int32_t sums_row(int32_t n)
{
    return n <= 8 ? 8 : n <= 16 ? 16 : n <= 32 ? 32 : 64;
}

/* Scratch of the blocked MVE path: mcu_conv2d_s8's MVE scratch for the block (corrections,
 * bases, three rows of sums, interleaved windows, patch), then the unpacked weights. */
static int32_t mve_size(const mcu_conv_params_t *p)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t n = unpack_block(p, MCU_CONV_MVE_OC_BLOCK, 2, MCU_CONV_S4_MIN_OC_BLOCK);
    return 8 * n + 4 * (2 * sums_row(n) + n + (n & 1)) + 48 * ((k + 15) >> 4) +
           (mcu_conv2d_s4_gathers(p) ? k : 0) + n * k;
}

/* Whether mcu_conv2d_s8's MVE path takes these parameters (but for the sums, checked per call:
 * mcu_conv2d_s4_requant2, else the blocked generic path runs). */
static int mve_ok(const mcu_conv_params_t *p)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    if (p->q.rounding == MCU_ROUND_NEAREST_EVEN || k > MCU_CONV_FAST_MAX_K ||
        (k > MCU_CONV_PATCH_BYTES && mcu_conv2d_s4_gathers(p))) {
        return 0;
    }
    for (int32_t oc = 0; oc < p->output.c; ++oc) {
        if (!mcu_requant2_ok(p->multiplier[oc], p->shift[oc], 0)) {
            return 0;
        }
    }
    return 1;
}

/* P (4, 2 or 1 positions a pass) of mcu_conv2d_s8's DSP path for these parameters, the sums aside
 * (checked per call: mcu_conv2d_s4_requant2, else the blocked generic path runs); 0 when it does
 * not run. mcu_conv2d_s8_dsp_positions() with mcu_requant2_ok() asked of the sums instead of the
 * bias: its int32 sums are 2 (sums + sum x w), |.| < 2 (2^29 + 576 * 128 * 8) < 2^31. */
static int32_t dsp8_positions(const mcu_conv_params_t *p)
{
    if (p->filter.h > 2 * MCU_CONV_DSP_WORDS || p->filter.w > 2 * MCU_CONV_DSP_WORDS ||
        p->input.c > 2 * MCU_CONV_DSP_WORDS || p->q.rounding == MCU_ROUND_NEAREST_EVEN) {
        return 0;
    }
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t groups = (k + 3) >> 2;
    if (groups * 2 > MCU_CONV_DSP_WORDS || (k > MCU_CONV_DSP_PATCH && p->input.c % 4 != 0)) {
        return 0;
    }
    for (int32_t oc = 0; oc < p->output.c; ++oc) {
        if (!mcu_requant2_ok(p->multiplier[oc], p->shift[oc], 0)) {
            return 0;
        }
    }
    const int32_t positions = p->input.n * p->output.h * p->output.w;
    int32_t per_pass = groups * 8 <= MCU_CONV_DSP_WORDS ? 4 : (groups * 4 <= MCU_CONV_DSP_WORDS ? 2 : 1);
    while (per_pass > positions) {
        per_pass >>= 1;
    }
    return per_pass;
}

/* Scratch of the blocked DSP path: the block's biases, mcu_conv2d_s8's DSP scratch for the block
 * (interleaved windows, onnxruntime's constants, patch), then the unpacked weights. */
static int32_t dsp8_size(const mcu_conv_params_t *p, int32_t per_pass)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t n = unpack_block(p, MCU_CONV_S4_DSP_OC_BLOCK, 2, MCU_CONV_S4_MIN_OC_BLOCK);
    return 4 * n + 8 * per_pass * ((k + 3) >> 2) +
           (p->q.rounding == MCU_ROUND_NEAREST_NO_TIE ? 8 * n : 0) +
           (p->input.c % 4 != 0 && mcu_conv2d_s4_gathers(p) ? k : 0) + n * k;
}

/* The path on `isa`, its scratch bytes through *size and the DSP path's P through *per_pass
 * (negative: the blocked DSP path's, through mcu_conv2d_s8's loops). */
static int32_t plan(const mcu_conv_params_t *p, int32_t isa, int32_t *size, int32_t *per_pass)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t patch = mcu_conv2d_s4_gathers(p) ? k : 0;
    const int32_t p8 = isa == MCU_ISA_DSP ? dsp8_positions(p) : 0;
    if (p8 > 0) {
        const int32_t dsp = dsp8_size(p, p8);
        const int32_t generic = generic_size(p);
        *per_pass = -p8;
        *size = dsp > generic ? dsp : generic; /* the generic one when a sum is out of range */
        return MCU_PATH_DSP;
    }
    *per_pass = isa == MCU_ISA_DSP && p->q.rounding != MCU_ROUND_NEAREST_EVEN
                    ? mcu_conv2d_s4_dsp_positions(p)
                    : 0;
    if (*per_pass > 0) {
        *size = 2 * *per_pass * mcu_conv2d_s4_widened(k) + patch;
        return MCU_PATH_DSP;
    }
    *size = generic_size(p);
    if (isa == MCU_ISA_MVE && mve_ok(p)) {
        const int32_t mve = mve_size(p);
        *size = mve > *size ? mve : *size; /* the generic one when a sum is out of range */
        return MCU_PATH_MVE;
    }
    return MCU_PATH_GENERIC;
}

int32_t mcu_conv2d_s4_get_buffer_size(const mcu_conv_params_t *params, int32_t isa)
{
    int32_t size, per_pass;
    (void)plan(params, isa, &size, &per_pass);
    return size;
}

/* Output channels a block of mcu_conv2d_s4_lean: at most four (one dot product of mcu_conv2d_s8's
 * generic loops) and the blocked generic path's. */
static int32_t lean_block(const mcu_conv_params_t *p)
{
    const int32_t n = unpack_block(p, MCU_CONV_OC_BLOCK, 4, 1);
    return n < MCU_CONV_S4_LEAN_OC_BLOCK ? n : MCU_CONV_S4_LEAN_OC_BLOCK;
}

int32_t mcu_conv2d_s4_lean_get_buffer_size(const mcu_conv_params_t *params)
{
    const int32_t k = params->filter.h * params->filter.w * params->input.c;
    const int32_t n = lean_block(params);
    return 4 * n + n * k + (k <= MCU_CONV_PATCH_BYTES && mcu_conv2d_s4_gathers(params) ? k : 0);
}

int32_t mcu_conv2d_s4_path(const mcu_conv_params_t *params, int32_t isa)
{
    int32_t size, per_pass;
    return plan(params, isa, &size, &per_pass);
}

#if MCU_ISA_NATIVE != MCU_ISA_MVE
/* Four nibbles (the low one of each byte of v) as four int8 bytes: x ^ 8 with bit 7 set, less 8
 * (no borrow leaves a byte), bit 7 flipped back: x - 16 for x >= 8. */
static inline uint32_t s4_bytes(uint32_t v)
{
    return (((v & 0x0F0F0F0Fu) ^ 0x88888888u) - 0x08080808u) ^ 0x80808080u;
}
#endif

/* One output channel's K packed weights (mcu_nn_s4.h) as K int8 in (ky, kx, ic) order. */
#if MCU_ISA_NATIVE == MCU_ISA_MVE
static void unpack(const uint8_t *w, int32_t k, int8_t *d)
{
    /* a block of 32 (or the tail of t, h = ceil(t / 2)): 16 (h) bytes, their low nibbles (VSHL,
     * VSHR) the first 16 (h) weights, their high nibbles the next 16 (t - h) */
    for (; k > 0; k -= MCU_S4_BLOCK, w += MCU_S4_BLOCK / 2, d += MCU_S4_BLOCK) {
        const int32_t t = k < MCU_S4_BLOCK ? k : MCU_S4_BLOCK;
        const int32_t h = (t + 1) / 2;
        const int8x16_t v = vldrbq_z_s8((const int8_t *)w, vctp8q((uint32_t)h));
        vstrbq_p_s8(d, vshrq_n_s8(vshlq_n_s8(v, 4), 4), vctp8q((uint32_t)h));
        vstrbq_p_s8(d + h, vshrq_n_s8(v, 4), vctp8q((uint32_t)(t - h)));
    }
}
#else
static void unpack(const uint8_t *w, int32_t k, int8_t *d)
{
    for (; k >= MCU_S4_BLOCK; k -= MCU_S4_BLOCK, w += MCU_S4_BLOCK / 2, d += MCU_S4_BLOCK) {
        for (int32_t j = 0; j < MCU_S4_BLOCK / 2; j += 4) {
            uint32_t v;
            memcpy(&v, w + j, 4);
            const uint32_t lo = s4_bytes(v);
            const uint32_t hi = s4_bytes(v >> 4);
            memcpy(d + j, &lo, 4);
            memcpy(d + MCU_S4_BLOCK / 2 + j, &hi, 4);
        }
    }
    /* the tail of k weights: h bytes, t - h = k / 2 of them with a weight in the high nibble */
    const int32_t h = (k + 1) / 2;
    int32_t j = 0;
    for (; j + 4 <= k / 2; j += 4) {
        uint32_t v;
        memcpy(&v, w + j, 4);
        const uint32_t lo = s4_bytes(v);
        const uint32_t hi = s4_bytes(v >> 4);
        memcpy(d + j, &lo, 4);
        memcpy(d + h + j, &hi, 4);
    }
    for (; j < h; ++j) {
        d[j] = (int8_t)mcu_s4_lo(w[j]);
        if (h + j < k) {
            d[h + j] = (int8_t)mcu_s4_hi(w[j]);
        }
    }
}
#endif

/* The blocked generic path: per block of output channels, their weights unpacked once, then every
 * position through mcu_conv2d_s8's generic loops (corrections: the sums; the block's channels
 * addressed from 0 through a copy of the params whose multipliers, shifts and output start at
 * the block's first channel). */
static void conv_blocked_generic(const mcu_conv_params_t *p, const int8_t *input,
                                 const uint8_t *filter, const int32_t *sums, int8_t *output,
                                 void *scratch, int32_t block)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t row = (k + 1) / 2;
    const int32_t out_c = p->output.c;
    int32_t *const corr = (int32_t *)scratch;
    int8_t *const wbuf = (int8_t *)(corr + block);
    int8_t *const patch = wbuf + block * k;
    mcu_conv_params_t q = *p;
    mcu_conv_block_t c;
    mcu_conv_block_init(&c, &q, wbuf, corr, NULL, NULL);
#if defined(__riscv)
    /* mcu_conv2d_s8_generic's condition, |acc| < 2^29 + 16384 * 128 * 8 < 2^30 */
    c.requant2 = p->q.rounding == MCU_ROUND_TFLITE && k <= MCU_CONV_FAST_MAX_K;
    for (int32_t oc = 0; oc < out_c && c.requant2; ++oc) {
        c.requant2 = mcu_requant2_ok(p->multiplier[oc], p->shift[oc], sums[oc]);
    }
#endif
    c.oc_base = 0;
    for (int32_t oc0 = 0; oc0 < out_c; oc0 += block) {
        const int32_t n = out_c - oc0 < block ? out_c - oc0 : block;
        for (int32_t j = 0; j < n; ++j) {
            unpack(filter + (size_t)(oc0 + j) * (size_t)row, k, wbuf + j * k);
            corr[j] = sums[oc0 + j];
        }
        q.multiplier = p->multiplier + oc0;
        q.shift = p->shift + oc0;
        c.oc_end = n;
        mcu_conv2d_s8_generic_block(&c, input, output + oc0, patch);
    }
}

#if MCU_ISA_PLAN == MCU_ISA_DSP
/* The blocked DSP path: as the blocked generic one, through mcu_conv2d_s8's DSP loops (their
 * params copy computes filter.n = the block's channels; its bias: sums - input_offset * sum w). */
static void conv_blocked_dsp(const mcu_conv_params_t *p, const int8_t *input,
                             const uint8_t *filter, const int32_t *sums, int8_t *output,
                             int32_t per_pass, void *scratch)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t row = (k + 1) / 2;
    const int32_t out_c = p->output.c;
    const int32_t block = unpack_block(p, MCU_CONV_S4_DSP_OC_BLOCK, 2, MCU_CONV_S4_MIN_OC_BLOCK);
    int32_t *const bias = (int32_t *)scratch;
    void *const s8 = bias + block;
    int8_t *const wbuf = (int8_t *)scratch + dsp8_size(p, per_pass) - block * k;
    const uint32_t offset = (uint32_t)p->q.input_offset;
    mcu_conv_params_t q = *p;
    for (int32_t oc0 = 0; oc0 < out_c; oc0 += block) {
        const int32_t n = out_c - oc0 < block ? out_c - oc0 : block;
        for (int32_t j = 0; j < n; ++j) {
            int8_t *const w = wbuf + j * k;
            unpack(filter + (size_t)(oc0 + j) * (size_t)row, k, w);
            bias[j] = (int32_t)((uint32_t)sums[oc0 + j] - offset * (uint32_t)mcu_sum_s8(w, k));
        }
        q.multiplier = p->multiplier + oc0;
        q.shift = p->shift + oc0;
        q.filter.n = n;
        mcu_conv2d_s8_dsp(&q, input, wbuf, bias, output + oc0, per_pass, s8, NULL);
    }
}
#endif

#if MCU_ISA_PLAN == MCU_ISA_MVE
/* The blocked MVE path: as the blocked generic one, through mcu_conv2d_s8's MVE loops (starting
 * sums: the sums, plus onnxruntime's lift; requantization bases per channel). */
static void conv_blocked_mve(const mcu_conv_params_t *p, const int8_t *input,
                             const uint8_t *filter, const int32_t *sums, int8_t *output,
                             void *scratch)
{
    const int32_t k = p->filter.h * p->filter.w * p->input.c;
    const int32_t row = (k + 1) / 2;
    const int32_t out_c = p->output.c;
    const int32_t block = unpack_block(p, MCU_CONV_MVE_OC_BLOCK, 2, MCU_CONV_S4_MIN_OC_BLOCK);
    int32_t *const corr = (int32_t *)scratch;
    int32_t *const base = corr + block;
    int32_t *const rows = base + block;
    int8_t *const xq = (int8_t *)(rows + 2 * sums_row(block) + block + (block & 1));
    int8_t *const patch = xq + 48 * ((k + 15) >> 4);
    int8_t *const wbuf = patch + (mcu_conv2d_s4_gathers(p) ? k : 0);
    const int no_tie = p->q.rounding == MCU_ROUND_NEAREST_NO_TIE;
    mcu_conv_params_t q = *p;
    mcu_conv_block_t c;
    mcu_conv_block_init(&c, &q, wbuf, corr, base, NULL);
    c.oc_base = 0;
    for (int32_t oc0 = 0; oc0 < out_c; oc0 += block) {
        const int32_t n = out_c - oc0 < block ? out_c - oc0 : block;
        for (int32_t j = 0; j < n; ++j) {
            const int32_t oc = oc0 + j;
            unpack(filter + (size_t)oc * (size_t)row, k, wbuf + j * k);
            int32_t lift2 = 0;
            base[j] = no_tie ? mcu_requant2_no_tie(p->multiplier[oc], p->shift[oc],
                                                   p->q.output_offset, &lift2)
                             : mcu_requant2_base(p->shift[oc], p->q.output_offset);
            corr[j] = mcu_conv_add_wrap(sums[oc], lift2 / 2);
        }
        if (n < block) { /* a lone last channel reads corr[1]: mcu_conv2d_s8_mve's base[0] */
            corr[n] = base[0];
        }
        q.multiplier = p->multiplier + oc0;
        q.shift = p->shift + oc0;
        c.oc_end = n;
        mcu_conv2d_s8_mve_block(&c, input, output + oc0, rows, xq, patch);
    }
}
#endif

/* The call on the paths of MCU_ISA_PLAN, or (lean) on the unblocked generic path. */
static mcu_status_t conv2d(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                           const int8_t *input, const uint8_t *filter, const int32_t *sums,
                           int8_t *output, int lean)
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
    int32_t path = plan(params, MCU_ISA_PLAN, &size, &per_pass);
    if (lean) {
        path = MCU_PATH_GENERIC;
        size = mcu_conv2d_s4_lean_get_buffer_size(params);
    }
    if (!scratch_ok(ctx, size)) {
        return MCU_ERR_SCRATCH;
    }
    void *const scratch = size > 0 ? ctx->buf : NULL;
#if MCU_ISA_PLAN == MCU_ISA_DSP
    if (path == MCU_PATH_DSP && per_pass < 0) {
        if (mcu_conv2d_s4_requant2(params, sums)) {
            conv_blocked_dsp(params, input, filter, sums, output, -per_pass, scratch);
        } else {
            conv_blocked_generic(params, input, filter, sums, output, scratch,
                                 unpack_block(params, MCU_CONV_OC_BLOCK, 4, 1));
        }
        return MCU_OK;
    }
    if (path == MCU_PATH_DSP) {
        mcu_conv2d_s4_dsp(params, input, filter, sums, output, per_pass, scratch);
        return MCU_OK;
    }
#elif MCU_ISA_PLAN == MCU_ISA_MVE
    if (path == MCU_PATH_MVE && mcu_conv2d_s4_requant2(params, sums)) {
        conv_blocked_mve(params, input, filter, sums, output, scratch);
        return MCU_OK;
    }
#endif
    (void)path;
    (void)per_pass;
    conv_blocked_generic(params, input, filter, sums, output, scratch,
                         lean ? lean_block(params) : unpack_block(params, MCU_CONV_OC_BLOCK, 4, 1));
    return MCU_OK;
}

mcu_status_t mcu_conv2d_s4(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                           const int8_t *input, const uint8_t *filter, const int32_t *sums,
                           int8_t *output)
{
    return conv2d(ctx, params, input, filter, sums, output, 0);
}

mcu_status_t mcu_conv2d_s4_lean(const mcu_context_t *ctx, const mcu_conv_params_t *params,
                                const int8_t *input, const uint8_t *filter, const int32_t *sums,
                                int8_t *output)
{
    return conv2d(ctx, params, input, filter, sums, output, 1);
}
