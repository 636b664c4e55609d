/*
 * mcu_softmax_s16.c - TFLite int16 SOFTMAX, zero points 0 (twin: emitter/kernels/mcu_softmax_s16.py). Per row:
 *   e[c] = lut(exp_lut, clamp(requant(in[c] - max, input_multiplier, input_shift) + 32767))    Q0.15
 *   h    = clz32(sum e);  r = lut(recip_lut, clamp((((sum << (h - 1)) + 2^13) >> 14) - 3 * 2^15))
 *   mode 0: out[c] = clamp((e[c] * r + 2^(30 - h)) >> (31 - h), 0, 32767)
 *   mode 1: out[c] = RoundingDivideByPOT(SRDHM(e[c] * r, output_multiplier), 31 - h - output_shift)
 * e is kept in the output between the passes (each element read before it is written: in place OK).
 */
#include "mcu_math.h"
#include "mcu_nn_s16.h"

#define MCU_SOFTMAX_S16_LUT 513

/* The 513-entry table interpolated at v: base + (slope * (v & 127) + 64) >> 7. */
static int32_t lut_lookup(const int16_t *lut, int32_t v)
{
    const int32_t index = 256 + (v >> 7);
    const int32_t base = lut[index];
    const int32_t slope = (int32_t)lut[index + 1] - base;
    return base + ((slope * (v & 0x7F) + 64) >> 7);
}

static int32_t count_leading_zeros(uint32_t x)
{
    int32_t n = 0;
    while (n < 32 && (x & 0x80000000u) == 0u) {
        x <<= 1;
        ++n;
    }
    return n;
}

static int32_t tables_ok(const int16_t *exp_lut, const int16_t *recip_lut)
{
    for (int32_t i = 0; i < MCU_SOFTMAX_S16_LUT; ++i) {
        if (exp_lut[i] < 0 || recip_lut[i] < 0) {
            return 0;
        }
    }
    return lut_lookup(exp_lut, 32767) >= (1 << 14);
}

mcu_status_t mcu_softmax_s16(const mcu_softmax_s16_params_t *params, const int16_t *exp_lut, const int16_t *recip_lut,
                             const int16_t *input, int16_t *output)
{
    if (params == NULL || exp_lut == NULL || recip_lut == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_softmax_s16_params_t *p = params;
    if (p->rows < 1 || p->row_size < 1 || p->row_size > 65536 || p->input_multiplier < 0 || p->input_shift < -31 ||
        p->input_shift > 15 || p->output_mode < 0 || p->output_mode > 1 || p->output_multiplier < 0 ||
        p->output_shift < -31 || p->output_shift > 14 || !tables_ok(exp_lut, recip_lut)) {
        return MCU_ERR_ARG;
    }
    for (int32_t row = 0; row < p->rows; ++row) {
        const int16_t *in = input + (size_t)row * (size_t)p->row_size;
        int16_t *out = output + (size_t)row * (size_t)p->row_size;
        int32_t max = MCU_INT16_MIN;
        for (int32_t c = 0; c < p->row_size; ++c) {
            max = in[c] > max ? in[c] : max;
        }
        int32_t sum = 0; /* <= 65536 * 32767 */
        for (int32_t c = 0; c < p->row_size; ++c) {
            const int32_t scaled = mcu_requantize((int32_t)in[c] - max, p->input_multiplier, p->input_shift);
            const int32_t e = lut_lookup(exp_lut, mcu_clamp_s32(scaled + 32767, MCU_INT16_MIN, MCU_INT16_MAX));
            out[c] = (int16_t)e;
            sum += e;
        }
        const int32_t h = count_leading_zeros((uint32_t)sum); /* 1..17: sum >= exp(0) >= 2^14 */
        const int32_t shifted = (int32_t)((((int64_t)sum << (h - 1)) + (1 << 13)) >> 14);
        const int32_t r = lut_lookup(recip_lut, mcu_clamp_s32(shifted - ((1 << 15) + (1 << 16)), MCU_INT16_MIN,
                                                              MCU_INT16_MAX));
        const int32_t right = 31 - h;
        for (int32_t c = 0; c < p->row_size; ++c) {
            const int32_t product = (int32_t)out[c] * r; /* < 2^30 */
            int32_t value;
            if (p->output_mode == 0) {
                value = (int32_t)(((int64_t)product + ((int64_t)1 << (right - 1))) >> right);
                value = mcu_clamp_s32(value, 0, MCU_INT16_MAX);
            } else {
                const int32_t exponent = right - p->output_shift;
                const int32_t scaled = mcu_srdhm(product, p->output_multiplier);
                value = mcu_rounding_divide_by_pot(scaled, exponent > 31 ? 31 : exponent);
                value = mcu_clamp_s32(value, MCU_INT16_MIN, MCU_INT16_MAX);
            }
            out[c] = (int16_t)value;
        }
    }
    return MCU_OK;
}
