/*
 * mcu_fully_connected_s8.c - int8 fully connected layer: in [batches, K], weights [N, K] row-major
 * (symmetric, zero point 0), bias [N] or NULL, out [batches, N].
 *
 * Semantics of TFLite Micro's int8 fully connected (per-tensor or per-channel) and CMSIS-NN's
 * arm_fully_connected_s8: one int32 sum per output.
 *
 * How it is fast and still bit-exact: four weight rows are computed together (two per pass on
 * Armv6-M, whose eight low registers hold no more), so every input byte is loaded (and offset)
 * once for several MACs. Pure C99 on every target (the host included); with
 * __ARM_FEATURE_DSP, SXTAB16 adds the input offset to two inputs at once and SMLAD does two 16x16
 * MACs; with __ARM_FEATURE_MVE, VMLADAVA.S8 does 16 8x8 MACs (the input offset entering as
 * input_offset * sum(w), VADDVA.S8) and four outputs are requantized per vector. Each output's sum
 * has exactly the reference's terms (integer sums, only the order differs).
 */
#include <string.h>

#include "mcu_kernel_util.h"
#include "mcu_math.h"
#include "mcu_nn.h"

/* The dot products stay out of line: inlined into the loop nest they lose registers. */
#if defined(__GNUC__)
#define MCU_FC_NOINLINE __attribute__((noinline))
#else
#define MCU_FC_NOINLINE
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(__ARM_BIG_ENDIAN)
#define MCU_FC_MVE 1
#include <arm_mve.h>
#elif defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#define MCU_FC_DSP 1
#include <arm_acle.h>
#endif

/*
 * Per-target dot products over `len` bytes (len >= 1):
 *   dot4: acc[r] = sum_k (x[k] + input_offset) * w[r * len + k], r = 0..3 (four weight rows)
 *   dot1: returns  sum_k (x[k] + input_offset) * w[k]
 */
#if defined(MCU_FC_MVE)

/* Two rows: sum x * w (VMLADAVA.S8) and sum w (VADDVA.S8), then + input_offset * sum w. Two rows
 * per pass keep the four scalar accumulators in the even registers VMLADAVA needs. */
MCU_FC_NOINLINE static void dot2(const int8_t *x, const int8_t *w, int32_t len,
                                 int32_t input_offset, int32_t acc[2])
{
    const int8_t *w0 = w;
    const int8_t *w1 = w + len;
    int32_t s0 = 0, s1 = 0, ws0 = 0, ws1 = 0;
    for (int32_t n = len >> 4; n > 0; --n) {
        const int8x16_t xv = vld1q_s8(x);
        const int8x16_t v0 = vld1q_s8(w0);
        const int8x16_t v1 = vld1q_s8(w1);
        s0 = vmladavaq_s8(s0, xv, v0);
        ws0 = vaddvaq_s8(ws0, v0);
        s1 = vmladavaq_s8(s1, xv, v1);
        ws1 = vaddvaq_s8(ws1, v1);
        x += 16;
        w0 += 16;
        w1 += 16;
    }
    if ((len & 15) != 0) {
        const mve_pred16_t p = vctp8q((uint32_t)(len & 15));
        const int8x16_t xv = vldrbq_z_s8(x, p);
        const int8x16_t v0 = vldrbq_z_s8(w0, p);
        const int8x16_t v1 = vldrbq_z_s8(w1, p);
        s0 = vmladavaq_s8(s0, xv, v0);
        ws0 = vaddvaq_s8(ws0, v0);
        s1 = vmladavaq_s8(s1, xv, v1);
        ws1 = vaddvaq_s8(ws1, v1);
    }
    acc[0] = s0 + input_offset * ws0;
    acc[1] = s1 + input_offset * ws1;
}

MCU_FC_NOINLINE static void dot4(const int8_t *x, const int8_t *w, int32_t len,
                                 int32_t input_offset, int32_t acc[4])
{
    dot2(x, w, len, input_offset, acc);
    dot2(x, w + 2 * len, len, input_offset, acc + 2);
}

MCU_FC_NOINLINE static int32_t dot1(const int8_t *x, const int8_t *w, int32_t len,
                                    int32_t input_offset)
{
    int32_t s = 0, ws = 0;
    for (int32_t left = len; left > 0; left -= 16) {
        const mve_pred16_t p = vctp8q((uint32_t)left);
        const int8x16_t wv = vldrbq_z_s8(w, p);
        s = vmladavaq_s8(s, vldrbq_z_s8(x, p), wv);
        ws = vaddvaq_s8(ws, wv);
        x += 16;
        w += 16;
    }
    return s + input_offset * ws;
}

/* Outputs n .. n + 3 from their sums: + bias, requantized per lane (CMSIS-NN's
 * arm_requantize_mve, bit-exact with output_stage: VQRDMULH is SaturatingRoundingDoublingHighMul,
 * VRSHL by -exponent after gemmlowp's fix-up of negative values is RoundingDivideByPOT). */
static void store4(const int32_t acc[4], const int32_t *bias, int32_t n,
                   const mcu_fc_params_t *params, int8_t *out)
{
    int32x4_t v = vldrwq_s32(acc);
    if (bias != NULL) {
        v = vaddq_s32(v, vld1q_s32(bias + n));
    }
    int32x4_t multiplier, shift;
    if (params->per_channel) {
        multiplier = vld1q_s32(params->multiplier + n);
        shift = vld1q_s32(params->shift + n);
    } else {
        multiplier = vdupq_n_s32(params->multiplier[0]);
        shift = vdupq_n_s32(params->shift[0]);
    }
    vstrbq_s32(out + n, output_stage4(v, multiplier, shift, &params->q));
}

#else

#if defined(MCU_FC_DSP)

MCU_FC_NOINLINE static void dot4(const int8_t *x, const int8_t *w, int32_t len,
                                 int32_t input_offset, int32_t acc[4])
{
    /* Two int16 lanes of (x + input_offset), in [-255, 255], against two int16 lanes of w:
     * SMLAD adds both products, exactly as two scalar MACs. Rows 0/1 are read at wa and
     * wa + len, rows 2/3 at wb and wb + len. */
    const int32_t offset2 = (int32_t)(((uint32_t)input_offset & 0xFFFFu) |
                                      ((uint32_t)input_offset << 16));
    const int8_t *wa = w;
    const int8_t *wb = w + 2 * len;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int32_t n = len >> 2; n > 0; --n) {
        const uint32_t xv = read_s8x4(x);
        const int32_t x02 = __sxtab16(offset2, (int32_t)xv);
        const int32_t x13 = sxtab16_ror8(offset2, xv);
        const uint32_t v0 = read_s8x4(wa);
        a0 = __smlad(x02, __sxtb16((int32_t)v0), a0);
        a0 = __smlad(x13, sxtb16_ror8(v0), a0);
        const uint32_t v1 = read_s8x4(wa + len);
        a1 = __smlad(x02, __sxtb16((int32_t)v1), a1);
        a1 = __smlad(x13, sxtb16_ror8(v1), a1);
        const uint32_t v2 = read_s8x4(wb);
        a2 = __smlad(x02, __sxtb16((int32_t)v2), a2);
        a2 = __smlad(x13, sxtb16_ror8(v2), a2);
        const uint32_t v3 = read_s8x4(wb + len);
        a3 = __smlad(x02, __sxtb16((int32_t)v3), a3);
        a3 = __smlad(x13, sxtb16_ror8(v3), a3);
        x += 4;
        wa += 4;
        wb += 4;
    }
    for (int32_t i = 0; i < (len & 3); ++i) {
        const int32_t xv = (int32_t)x[i] + input_offset;
        a0 += xv * (int32_t)wa[i];
        a1 += xv * (int32_t)wa[len + i];
        a2 += xv * (int32_t)wb[i];
        a3 += xv * (int32_t)wb[len + i];
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

MCU_FC_NOINLINE static int32_t dot1(const int8_t *x, const int8_t *w, int32_t len,
                                    int32_t input_offset)
{
    const int32_t offset2 = (int32_t)(((uint32_t)input_offset & 0xFFFFu) |
                                      ((uint32_t)input_offset << 16));
    int32_t acc = 0;
    for (int32_t n = len >> 2; n > 0; --n) {
        const uint32_t xv = read_s8x4(x);
        const uint32_t wv = read_s8x4(w);
        acc = __smlad(__sxtab16(offset2, (int32_t)xv), __sxtb16((int32_t)wv), acc);
        acc = __smlad(sxtab16_ror8(offset2, xv), sxtb16_ror8(wv), acc);
        x += 4;
        w += 4;
    }
    for (int32_t i = 0; i < (len & 3); ++i) {
        acc += ((int32_t)x[i] + input_offset) * (int32_t)w[i];
    }
    return acc;
}

#else /* pure C99 */

/* The loops index from -len up to 0 off pointers to the ends: on Armv6-M every load then has the
 * one addressing mode LDRSB offers (base + register) and the loop test is the index update. */
#if defined(__thumb__) && !defined(__thumb2__)
/* Thumb-1 (Armv6-M) has eight low registers: two rows per pass keep everything in them. */
MCU_FC_NOINLINE static void dot2(const int8_t *x, const int8_t *w, int32_t len,
                                 int32_t input_offset, int32_t acc[2])
{
    const int8_t *const x_end = x + len;
    const int8_t *const w0_end = w + len;
    const int8_t *const w1_end = w0_end + len;
    int32_t a0 = 0, a1 = 0;
    for (int32_t i = -len; i != 0; ++i) {
        const int32_t xv = (int32_t)x_end[i] + input_offset;
        a0 += xv * (int32_t)w0_end[i];
        a1 += xv * (int32_t)w1_end[i];
    }
    acc[0] = a0;
    acc[1] = a1;
}

MCU_FC_NOINLINE static void dot4(const int8_t *x, const int8_t *w, int32_t len,
                                 int32_t input_offset, int32_t acc[4])
{
    dot2(x, w, len, input_offset, acc);
    dot2(x, w + 2 * len, len, input_offset, acc + 2);
}
#else
MCU_FC_NOINLINE static void dot4(const int8_t *x, const int8_t *w, int32_t len,
                                 int32_t input_offset, int32_t acc[4])
{
    const int8_t *const x_end = x + len;
    const int8_t *const w0_end = w + len;
    const int8_t *const w1_end = w0_end + len;
    const int8_t *const w2_end = w1_end + len;
    const int8_t *const w3_end = w2_end + len;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int32_t i = -len; i != 0; ++i) {
        const int32_t xv = (int32_t)x_end[i] + input_offset;
        a0 += xv * (int32_t)w0_end[i];
        a1 += xv * (int32_t)w1_end[i];
        a2 += xv * (int32_t)w2_end[i];
        a3 += xv * (int32_t)w3_end[i];
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
#endif

MCU_FC_NOINLINE static int32_t dot1(const int8_t *x, const int8_t *w, int32_t len,
                                    int32_t input_offset)
{
    const int8_t *const x_end = x + len;
    const int8_t *const w_end = w + len;
    int32_t acc = 0;
    for (int32_t i = -len; i != 0; ++i) {
        acc += ((int32_t)x_end[i] + input_offset) * (int32_t)w_end[i];
    }
    return acc;
}

#endif

static void store4(const int32_t acc[4], const int32_t *bias, int32_t n,
                   const mcu_fc_params_t *params, int8_t *out)
{
    /* local copies: an int8_t store may alias anything, which would reload them per output */
    const mcu_quant_io_t q = params->q;
    const int32_t step = params->per_channel; /* 1: per-channel, 0: per-tensor */
    const int32_t *const multiplier = params->multiplier + step * n;
    const int32_t *const shift = params->shift + step * n;
    for (int32_t r = 0; r < 4; ++r) {
        out[n + r] = output_stage(acc[r] + (bias != NULL ? bias[n + r] : 0), multiplier[step * r],
                                  shift[step * r], &q);
    }
}

#endif

mcu_status_t mcu_fully_connected_s8(const mcu_fc_params_t *params, const int8_t *input,
                                    const int8_t *weights, const int32_t *bias, int8_t *output)
{
    if (params == NULL || input == NULL || weights == NULL || output == NULL ||
        params->multiplier == NULL || params->shift == NULL) {
        return MCU_ERR_ARG;
    }
    if (params->batches < 1 || params->in_features < 1 || params->out_features < 1 ||
        (params->per_channel != 0 && params->per_channel != 1) || !quant_io_valid(&params->q) ||
        !shifts_valid(params->shift, params->per_channel ? params->out_features : 1)) {
        return MCU_ERR_ARG;
    }

    const int32_t batches = params->batches;
    const int32_t in_features = params->in_features;
    const int32_t out_features = params->out_features;
    const int32_t input_offset = params->q.input_offset;

    for (int32_t b = 0; b < batches; ++b) {
        const int8_t *const in_row = input + b * in_features;
        int8_t *const out_row = output + b * out_features;
        /* acc[n] = sum_k (in[b,k] + input_offset) * w[n,k] + bias[n], four rows n at a time */
        int32_t n = 0;
        for (; n + 4 <= out_features; n += 4) {
            int32_t acc[4];
            dot4(in_row, weights + n * in_features, in_features, input_offset, acc);
            store4(acc, bias, n, params, out_row);
        }
        for (; n < out_features; ++n) {
            const int32_t q_index = params->per_channel ? n : 0;
            const int32_t acc = dot1(in_row, weights + n * in_features, in_features, input_offset) +
                                (bias != NULL ? bias[n] : 0);
            out_row[n] = output_stage(acc, params->multiplier[q_index], params->shift[q_index],
                                      &params->q);
        }
    }
    return MCU_OK;
}
