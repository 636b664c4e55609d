/*
 * quant_shim.c - exports the static inline helpers of mcu_math.h so tests/test_quant.py can call
 * them through ctypes and compare them with their Python twins in emitter/quant.py.
 */
#include <stdint.h>

#include "mcu_math.h"

int32_t shim_srdhm(int32_t a, int32_t b);
int32_t shim_rounding_divide_by_pot(int32_t x, int32_t exponent);
int32_t shim_requantize(int32_t x, int32_t multiplier, int32_t shift);
void shim_requantize_array(const int32_t *x, const int32_t *multiplier, const int32_t *shift,
                           int32_t *out, int32_t count);
void shim_srdhm_array(const int32_t *a, const int32_t *b, int32_t *out, int32_t count);
void shim_rounding_divide_by_pot_array(const int32_t *x, const int32_t *exponent, int32_t *out,
                                       int32_t count);

int32_t shim_srdhm(int32_t a, int32_t b)
{
    return mcu_srdhm(a, b);
}

int32_t shim_rounding_divide_by_pot(int32_t x, int32_t exponent)
{
    return mcu_rounding_divide_by_pot(x, exponent);
}

int32_t shim_requantize(int32_t x, int32_t multiplier, int32_t shift)
{
    return mcu_requantize(x, multiplier, shift);
}

void shim_requantize_array(const int32_t *x, const int32_t *multiplier, const int32_t *shift,
                           int32_t *out, int32_t count)
{
    for (int32_t i = 0; i < count; ++i) {
        out[i] = mcu_requantize(x[i], multiplier[i], shift[i]);
    }
}

void shim_srdhm_array(const int32_t *a, const int32_t *b, int32_t *out, int32_t count)
{
    for (int32_t i = 0; i < count; ++i) {
        out[i] = mcu_srdhm(a[i], b[i]);
    }
}

void shim_rounding_divide_by_pot_array(const int32_t *x, const int32_t *exponent, int32_t *out,
                                       int32_t count)
{
    for (int32_t i = 0; i < count; ++i) {
        out[i] = mcu_rounding_divide_by_pot(x[i], exponent[i]);
    }
}
