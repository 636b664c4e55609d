/*
 * mcu_depthwise_conv2d_s4_internal.h - what mcu_depthwise_conv2d_s4.c and its MVE path share.
 * Internal to mcu_runtime.
 */
#ifndef MCU_DEPTHWISE_CONV2D_S4_INTERNAL_H
#define MCU_DEPTHWISE_CONV2D_S4_INTERNAL_H

#include <stdint.h>

#include "mcu_nn.h"
#include "mcu_nn_s4.h"

/* Channels a group of the filter layout (4 bytes a tap): channel j low, 4 + j high. */
#define MCU_DW_S4_GROUP 8
/* Filters of at most this many weights (KH * KW * C_out) are unpacked to int8 in scratch once a
 * call and run through mcu_depthwise_conv2d_s8's paths; larger ones take the s4 paths below. */
#define MCU_DW_S4_UNPACK_BYTES 2048

/* One output position's taps inside the input, [ky0, ky1) x [kx0, kx1) (ky0 == ky1: none), and
 * the input pixel of tap (ky0, kx0). */
typedef struct {
    const int8_t *x;
    int32_t ky0, ky1, kx0, kx1;
} mcu_dw_s4_window_t;

void mcu_dw_s4_window(const mcu_depthwise_conv_params_t *p, const int8_t *image, int32_t oy,
                      int32_t ox, mcu_dw_s4_window_t *win);

/* The channels [g, C_out) of one position (g a multiple of 8) on the generic loop. */
void mcu_dw_s4_tail(const mcu_depthwise_conv_params_t *p, const mcu_dw_s4_window_t *win,
                    const uint8_t *filter, const int32_t *bias, int8_t *out, int32_t g);

/* The fast paths' per-channel constants: base[oc] (mcu_requant2's) and init[oc] (bias, plus the
 * lift of MCU_ROUND_NEAREST_NO_TIE); returns whether mcu_requant2/4 may requantize (else base is
 * 0 and init the bias). */
int mcu_dw_s4_constants(const mcu_depthwise_conv_params_t *p, const int32_t *bias, int32_t *base,
                        int32_t *init);

#if MCU_ISA_NATIVE == MCU_ISA_DSP
/* depth multiplier 1; scratch 8 * C_out bytes */
void mcu_depthwise_conv2d_s4_dsp(const mcu_depthwise_conv_params_t *p, const int8_t *input,
                                 const uint8_t *filter, const int32_t *bias, int8_t *output,
                                 void *scratch);
#endif

#if MCU_ISA_NATIVE == MCU_ISA_MVE
/* depth multiplier 1; scratch 8 * C_out bytes */
void mcu_depthwise_conv2d_s4_mve(const mcu_depthwise_conv_params_t *p, const int8_t *input,
                                 const uint8_t *filter, const int32_t *bias, int8_t *output,
                                 void *scratch);
#endif

#endif /* MCU_DEPTHWISE_CONV2D_S4_INTERNAL_H */
