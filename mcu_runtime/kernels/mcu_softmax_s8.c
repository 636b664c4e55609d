/*
 * mcu_softmax_s8.c - TFLite int8 SOFTMAX (reference_ops::Softmax, int8 in / int8 out), bit-exact,
 * with gemmlowp's fixed-point exp and reciprocal re-implemented below as static helpers.
 *
 * Per row:
 *   max   = max_c in[c]
 *   diff  = in[c] - max                                  (<= 0; skipped when diff < diff_min)
 *   a     = SRDHM(diff << input_left_shift, input_multiplier)          Q5.26, a <= 0
 *   e     = exp_on_negative_values(a)                                  Q0.31
 *   sum   = sum_c RoundingDivideByPOT(e, 12)                           Q12.19
 *   scale = 1 / (sum * 2^-num_bits_over_unit)                          Q0.31, GetReciprocal
 *   mode 0 (output scale 1/256, zero point -128, TFLite):
 *     out = clamp(RoundingDivideByPOT(SRDHM(scale, e), num_bits_over_unit + 23) - 128)
 *   mode 1 (any other output scale):
 *     p   = RoundingDivideByPOT(SRDHM(scale, e), num_bits_over_unit)  probability, Q0.31
 *     out = clamp(requant(p, output_multiplier, output_shift) + output_offset)
 *   skipped elements have probability 0: -128 in mode 0, clamp(output_offset) in mode 1.
 *
 * Where TFLite's int32 arithmetic would overflow or abort (a row whose exp sum reaches 512 in
 * mode 0, or 4096), this kernel stays defined: the sum saturates at INT32_MAX and a division by
 * more than 2^31 yields 0. Inside TFLite's valid range the result is identical.
 */
#include "mcu_math.h"
#include "mcu_nn.h"

#define MCU_SOFTMAX_DIFF_INTEGER_BITS 5   /* Q5.26 scaled input differences */
#define MCU_SOFTMAX_ACCUM_INTEGER_BITS 12 /* Q12.19 sum of exponentials */

/** gemmlowp SaturatingRoundingMultiplyByPOT<exponent> for 0 < exponent < 31: x * 2^exponent,
 * saturated to the int32 range. */
static int32_t mcu_softmax_sat_shl(int32_t x, int32_t exponent)
{
    const int32_t threshold = (int32_t)(((uint32_t)1 << (31 - exponent)) - 1u);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << exponent);
}

/** exp(a) for a in [-1/4, 0), Q0.31 in and out: Taylor expansion around -1/8 to degree 4. */
static int32_t mcu_softmax_exp_quarter(int32_t a)
{
    const int32_t exp_minus_one_eighth = 1895147668; /* exp(-1/8), Q0.31 */
    const int32_t one_third = 715827883;             /* 1/3, Q0.31 */
    const int32_t x = a + (1 << 28);                 /* x = a + 1/8, in [-1/8, 1/8) */
    const int32_t x2 = mcu_srdhm(x, x);
    const int32_t x3 = mcu_srdhm(x2, x);
    const int32_t x4 = mcu_srdhm(x2, x2);
    const int32_t x4_over_4 = mcu_rounding_divide_by_pot(x4, 2);
    /* x^4/24 + x^3/6 + x^2/2 = ((x^4/4 + x^3) / 3 + x^2) / 2 */
    const int32_t poly =
        mcu_rounding_divide_by_pot(mcu_srdhm(x4_over_4 + x3, one_third) + x2, 1);
    /* exp(-1/8) * (1 + x + x^2/2 + x^3/6 + x^4/24) */
    return exp_minus_one_eighth + mcu_srdhm(exp_minus_one_eighth, x + poly);
}

/** gemmlowp exp_on_negative_values for a Q5.26 input a <= 0; result Q0.31. */
static int32_t mcu_softmax_exp_on_negative_values(int32_t a)
{
    const int32_t fractional_bits = 31 - MCU_SOFTMAX_DIFF_INTEGER_BITS; /* 26 */
    const int32_t one_quarter = (int32_t)1 << (fractional_bits - 2);
    const int32_t mask = one_quarter - 1;
    /* a = a_mod_quarter_minus_one_quarter - remainder, with remainder a multiple of 1/4. */
    const int32_t a_mod_quarter_minus_one_quarter = (a & mask) - one_quarter;
    int32_t result = mcu_softmax_exp_quarter(
        mcu_softmax_sat_shl(a_mod_quarter_minus_one_quarter, MCU_SOFTMAX_DIFF_INTEGER_BITS));
    const int32_t remainder = (int32_t)((uint32_t)a_mod_quarter_minus_one_quarter - (uint32_t)a);

    /* Barrel shifter: multiply by exp(-2^k) for every bit 2^k (k = -2..4) set in remainder. */
    static const int32_t exp_of_minus_pot[7] = {
        1672461947, /* exp(-1/4) */
        1302514674, /* exp(-1/2) */
        790015084,  /* exp(-1) */
        290630308,  /* exp(-2) */
        39332535,   /* exp(-4) */
        720401,     /* exp(-8) */
        242         /* exp(-16) */
    };
    for (int32_t k = 0; k < 7; ++k) {
        const int32_t bit = fractional_bits - 2 + k;
        if ((remainder & ((int32_t)1 << bit)) != 0) {
            result = mcu_srdhm(result, exp_of_minus_pot[k]);
        }
    }
    /* With 5 integer bits no clamp below -32 is needed; exp(0) is exactly one. */
    return a == 0 ? INT32_MAX : result;
}

/** gemmlowp one_over_one_plus_x_for_x_in_0_1: 1 / (1 + a), a in [0, 1) as Q0.31, result Q0.31.
 * Newton-Raphson on the half denominator in Q2.29, three iterations. */
static int32_t mcu_softmax_one_over_one_plus_x(int32_t a)
{
    const int64_t sum = (int64_t)a + INT32_MAX;
    const int32_t half_denominator = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2); /* Q0.31 */
    const int32_t constant_48_over_17 = 1515870810;      /* Q2.29 */
    const int32_t constant_neg_32_over_17 = -1010580540; /* Q2.29 */
    const int32_t one_q2 = (int32_t)1 << 29;             /* 1.0 in Q2.29 */
    int32_t x = constant_48_over_17 + mcu_srdhm(half_denominator, constant_neg_32_over_17);
    for (int32_t i = 0; i < 3; ++i) {
        const int32_t half_denominator_times_x = mcu_srdhm(half_denominator, x);    /* Q2.29 */
        const int32_t one_minus_half_denominator_times_x = one_q2 - half_denominator_times_x;
        /* x * (1 - d*x) is Q4.27; back to Q2.29 with a saturating shift by 2. */
        x = x + mcu_softmax_sat_shl(mcu_srdhm(x, one_minus_half_denominator_times_x), 2);
    }
    /* x ~ 1 / half_denominator in Q2.29 equals 1 / (1 + a) in Q1.30; to Q0.31, saturating. */
    return mcu_softmax_sat_shl(x, 1);
}

/** TFLite GetReciprocal: sum (Q12.19, > 0) -> 1 / (sum * 2^-num_bits_over_unit) in Q0.31. */
static int32_t mcu_softmax_reciprocal(int32_t sum, int32_t *num_bits_over_unit)
{
    int32_t headroom_plus_one = 0; /* count of leading zeros of sum */
    while (headroom_plus_one < 31 &&
           ((uint32_t)sum & ((uint32_t)1 << (31 - headroom_plus_one))) == 0u) {
        ++headroom_plus_one;
    }
    *num_bits_over_unit = MCU_SOFTMAX_ACCUM_INTEGER_BITS - headroom_plus_one;
    const int32_t shifted_sum_minus_one =
        (int32_t)(((uint32_t)sum << headroom_plus_one) - ((uint32_t)1 << 31));
    return mcu_softmax_one_over_one_plus_x(shifted_sum_minus_one);
}

/** exp(beta * input_scale * diff) in Q0.31 for diff <= 0: the difference is scaled to Q5.26 by
 * TFLite's MultiplyByQuantizedMultiplierGreaterThanOne (left shift, then SRDHM). */
static int32_t mcu_softmax_exp_of_diff(const mcu_softmax_params_t *p, int32_t diff)
{
    const int32_t scaled_diff = mcu_requantize(diff, p->input_multiplier, p->input_left_shift);
    return mcu_softmax_exp_on_negative_values(scaled_diff);
}

mcu_status_t mcu_softmax_s8(const mcu_softmax_params_t *params, const int8_t *input,
                            int8_t *output)
{
    if (params == NULL || input == NULL || output == NULL) {
        return MCU_ERR_ARG;
    }
    const mcu_softmax_params_t *p = params;
    if (p->rows < 1 || p->row_size < 1 || p->input_multiplier < 0 || p->input_left_shift < 0 ||
        p->input_left_shift > 31 || p->diff_min > 0) {
        return MCU_ERR_ARG;
    }
    if (p->output_mode == 0) {
        if (p->output_offset != MCU_INT8_MIN) {
            return MCU_ERR_ARG;
        }
    } else if (p->output_mode == 1) {
        if (p->output_shift < -31 || p->output_shift > 30 || p->output_offset < MCU_INT8_MIN ||
            p->output_offset > MCU_INT8_MAX) {
            return MCU_ERR_ARG;
        }
    } else {
        return MCU_ERR_ARG;
    }

    const int32_t row_size = p->row_size;
    for (int32_t r = 0; r < p->rows; ++r) {
        const int8_t *in_row = input + (size_t)r * (size_t)row_size;
        int8_t *out_row = output + (size_t)r * (size_t)row_size;

        int32_t max_in_row = MCU_INT8_MIN;
        for (int32_t c = 0; c < row_size; ++c) {
            max_in_row = in_row[c] > max_in_row ? in_row[c] : max_in_row;
        }

        /* Sum of exponentials in Q12.19, saturating (TFLite's plain int32 add never gets there
         * within its valid range). */
        int32_t sum_of_exps = 0;
        for (int32_t c = 0; c < row_size; ++c) {
            const int32_t diff = in_row[c] - max_in_row;
            if (diff >= p->diff_min) {
                const int32_t e = mcu_softmax_exp_of_diff(p, diff);
                const int64_t acc = (int64_t)sum_of_exps +
                                    mcu_rounding_divide_by_pot(e, MCU_SOFTMAX_ACCUM_INTEGER_BITS);
                sum_of_exps = acc > INT32_MAX ? INT32_MAX : (int32_t)acc;
            }
        }

        int32_t num_bits_over_unit = 0;
        const int32_t shifted_scale = mcu_softmax_reciprocal(sum_of_exps, &num_bits_over_unit);

        for (int32_t c = 0; c < row_size; ++c) {
            const int32_t diff = in_row[c] - max_in_row;
            int32_t out = MCU_INT8_MIN;
            if (p->output_mode == 0) {
                /* out = probability * 256 - 128 */
                const int32_t exponent = num_bits_over_unit + 31 - 8;
                int32_t unsat = 0;
                if (diff >= p->diff_min && exponent <= 31) {
                    const int32_t e = mcu_softmax_exp_of_diff(p, diff);
                    unsat = mcu_rounding_divide_by_pot(mcu_srdhm(shifted_scale, e), exponent);
                }
                out = mcu_clamp_s32(unsat + MCU_INT8_MIN, MCU_INT8_MIN, MCU_INT8_MAX);
            } else {
                int32_t prob = 0; /* Q0.31 */
                if (diff >= p->diff_min) {
                    const int32_t e = mcu_softmax_exp_of_diff(p, diff);
                    prob = mcu_rounding_divide_by_pot(mcu_srdhm(shifted_scale, e),
                                                      num_bits_over_unit);
                }
                const int32_t raw_out =
                    mcu_requantize(prob, p->output_multiplier, p->output_shift) + p->output_offset;
                out = mcu_clamp_s32(raw_out, MCU_INT8_MIN, MCU_INT8_MAX);
            }
            out_row[c] = (int8_t)out;
        }
    }
    return MCU_OK;
}
