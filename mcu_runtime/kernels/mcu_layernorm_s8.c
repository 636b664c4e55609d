/*
 * mcu_layernorm_s8.c - int8 LayerNormalization over the innermost axis in integer arithmetic
 * (mean and variance exact in integers, 1/sqrt in fixed point, gamma and beta folded into
 * per-element multipliers and Q16 biases at build time). The formula, step by step, is on the
 * prototype in mcu_nn.h; emitter/kernels/mcu_layernorm_s8.py is its bit-exact twin.
 */
#include "mcu_math.h"
#include "mcu_nn.h"

#define LN_MAX_ROW 8192
#define LN_Y_BITS 16

/** a / 2^k rounded half up, 1 <= k <= 62. Arithmetic right shift of a negative value:
 * implementation-defined in C99, arithmetic on every compiler mcugen supports (as mcu_math.h). */
static inline int64_t ln_rshift(int64_t a, int32_t k)
{
    return (a + ((int64_t)1 << (k - 1))) >> k;
}

/** floor(sqrt(v)) for v < 2^62. */
static uint32_t ln_isqrt(uint64_t v)
{
    uint64_t r = 0;
    uint64_t bit = (uint64_t)1 << 60;
    while (bit > v) {
        bit >>= 2;
    }
    while (bit != 0) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return (uint32_t)r;
}

static int ln_params_ok(const mcu_layernorm_params_t *p)
{
    if (p->rows < 1 || p->row_size < 1 || p->row_size > LN_MAX_ROW || p->var_shift < 0 ||
        p->var_shift > 60 || (p->var_shift & 1) != 0 || p->eps_mantissa < 0 || p->eps_shift < 0 ||
        p->eps_shift > 30 || p->output_zero_point < MCU_INT8_MIN ||
        p->output_zero_point > MCU_INT8_MAX || p->act_min < MCU_INT8_MIN ||
        p->act_max > MCU_INT8_MAX || p->act_min > p->act_max) {
        return 0;
    }
    const uint64_t n = (uint64_t)p->row_size;
    const uint64_t vmax = n * n << 14;
    const uint64_t limit = (uint64_t)1 << 62;
    const uint64_t eps = (uint64_t)p->eps_mantissa << p->eps_shift;
    if (eps >= limit || vmax > ((limit - eps - 1) >> p->var_shift)) {
        return 0;
    }
    for (int32_t i = 0; i < p->row_size; ++i) {
        if (p->shift[i] < -23 || p->shift[i] > 38) {
            return 0;
        }
    }
    return 1;
}

mcu_status_t mcu_layernorm_s8(const mcu_layernorm_params_t *params, const int8_t *input,
                              int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL || params->multiplier == NULL ||
        params->shift == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_layernorm_params_t *p = params;
    if (!ln_params_ok(p)) {
        return MCU_ERR_ARG;
    }
    const int32_t n = p->row_size;
    const uint64_t eps = (uint64_t)p->eps_mantissa << p->eps_shift;
    const int32_t *const mult = p->multiplier;
    const int32_t *const shift = p->shift;
    const int32_t *const bias = p->bias;
    const int64_t zp = p->output_zero_point;
    const int64_t lo = p->act_min;
    const int64_t hi = p->act_max;
    for (int32_t row = 0; row < p->rows; ++row) {
        const int8_t *in = input + (size_t)row * (size_t)n;
        int8_t *out = output + (size_t)row * (size_t)n;

        int32_t sum = 0;
        int32_t sum_sq = 0;
        for (int32_t i = 0; i < n; ++i) {
            const int32_t q = in[i];
            sum += q;
            sum_sq += q * q;
        }
        const int64_t v = (int64_t)n * sum_sq - (int64_t)sum * sum;

        /* V == 0: every D_i is 0, so u_i = 0 with inv = 0 (k = 1 keeps the shift defined) */
        int32_t inv = 0;
        int32_t k = 1;
        if (v > 0) {
            const uint64_t w = ((uint64_t)v << p->var_shift) + eps;
            int32_t bits = 0;
            for (uint64_t rest = w; rest != 0; rest >>= 1) {
                ++bits;
            }
            const int32_t t = (62 - bits) / 2; /* the largest t with w << 2t < 2^62 */
            const uint32_t r = ln_isqrt(w << (2 * t));
            inv = (int32_t)((((uint64_t)1 << 60) + (r >> 1)) / r); /* in (2^29, 2^30] */
            k = 36 - p->var_shift / 2 - t;
        }
        for (int32_t i = 0; i < n; ++i) {
            const int32_t d = n * (int32_t)in[i] - sum;
            const int32_t u = (int32_t)ln_rshift((int64_t)d * inv, k);
            int64_t y = ln_rshift((int64_t)u * mult[i], 39 - shift[i]);
            if (bias != NULL) {
                y += bias[i];
            }
            const int64_t q = zp + ln_rshift(y, LN_Y_BITS);
            out[i] = (int8_t)(q < lo ? lo : (q > hi ? hi : q));
        }
    }
    return MCU_OK;
}
