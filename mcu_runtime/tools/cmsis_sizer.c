/*
 * cmsis_sizer.c - host tool: asks the user's CMSIS-NN how much scratch each kernel call needs.
 *
 * mcugen builds this against CMSIS_NN_PATH with the host compiler and feeds it one query per line
 * on stdin; it prints one decimal byte count per line. VARIANT selects the buffer-size function
 * of the target's code path: c (generic function, host build = plain C path), dsp (_dsp), mve (_mve).
 * The queries are generated from the `sizer` entries of the API table in
 * emitter/backends/cmsis_api.py (tests/test_cmsis_api.py checks both sides agree):
 *
 *   conv VAR  in_n in_h in_w in_c  f_n f_h f_w f_c  out_n out_h out_w out_c  sw sh pw ph dw dh
 *   dw   VAR  in_n in_h in_w in_c  f_n f_h f_w f_c  out_n out_h out_w out_c  sw sh pw ph dw dh ch_mult
 *   fc   VAR  f_n f_h f_w f_c
 *   avg  VAR  out_w ch
 *   tconv VAR in_n in_h in_w in_c  f_n f_h f_w f_c  out_n out_h out_w out_c  sw sh
 *        (v7.0.0 defines only the generic size function of the transpose conv: every VAR asks it)
 * and the int16-activation kernels' conv16, dw16, fc16, avg16 with the same numbers, and the
 * 4-bit-weight kernels' conv4, dw4 likewise.
 */
#include <stdio.h>
#include <string.h>

#include "arm_nnfunctions.h"

static int read_dims(cmsis_nn_dims *d)
{
    return scanf("%d %d %d %d", &d->n, &d->h, &d->w, &d->c) == 4;
}

int main(void)
{
    char op[8], var[8];
    while (scanf("%7s %7s", op, var) == 2) {
        cmsis_nn_dims in, f, out;
        int32_t size = -1;
        const int s16 = strcmp(op, "conv16") == 0 || strcmp(op, "dw16") == 0 || strcmp(op, "fc16") == 0 ||
                        strcmp(op, "avg16") == 0;
        const int s4 = strcmp(op, "conv4") == 0 || strcmp(op, "dw4") == 0;
        if (s16) {
            op[strlen(op) - 2] = '\0'; /* the same numbers as the int8 query */
        }
        if (s4) {
            op[strlen(op) - 1] = '\0';
        }
        if (strcmp(op, "conv") == 0 || strcmp(op, "dw") == 0) {
            int sw, sh, pw, ph, dw, dh, mult = 1;
            if (!read_dims(&in) || !read_dims(&f) || !read_dims(&out) ||
                scanf("%d %d %d %d %d %d", &sw, &sh, &pw, &ph, &dw, &dh) != 6) {
                return 2;
            }
            if (strcmp(op, "dw") == 0 && scanf("%d", &mult) != 1) {
                return 2;
            }
            if (strcmp(op, "conv") == 0) {
                cmsis_nn_conv_params p;
                memset(&p, 0, sizeof(p));
                p.stride.w = sw; p.stride.h = sh; p.padding.w = pw; p.padding.h = ph;
                p.dilation.w = dw; p.dilation.h = dh; p.activation.min = -128; p.activation.max = 127;
                if (s4 && strcmp(var, "mve") == 0) {
                    /* v7.0.0's generic s4 size function, which <prefix>_init() checks on the target, answers
                       the s8 wrapper's MVE size on MVE: plan the larger of that and the s4 kernels' own */
                    const int32_t s4_size = arm_convolve_wrapper_s4_get_buffer_size_mve(&p, &in, &f, &out);
                    const int32_t s8_size = arm_convolve_wrapper_s8_get_buffer_size_mve(&p, &in, &f, &out);
                    size = s4_size > s8_size ? s4_size : s8_size;
                }
                else if (s4 && strcmp(var, "dsp") == 0) size = arm_convolve_wrapper_s4_get_buffer_size_dsp(&p, &in, &f, &out);
                else if (s4) size = arm_convolve_wrapper_s4_get_buffer_size(&p, &in, &f, &out);
                else if (s16 && strcmp(var, "mve") == 0) size = arm_convolve_wrapper_s16_get_buffer_size_mve(&p, &in, &f, &out);
                else if (s16 && strcmp(var, "dsp") == 0) size = arm_convolve_wrapper_s16_get_buffer_size_dsp(&p, &in, &f, &out);
                else if (s16) size = arm_convolve_wrapper_s16_get_buffer_size(&p, &in, &f, &out);
                else if (strcmp(var, "mve") == 0) size = arm_convolve_wrapper_s8_get_buffer_size_mve(&p, &in, &f, &out);
                else if (strcmp(var, "dsp") == 0) size = arm_convolve_wrapper_s8_get_buffer_size_dsp(&p, &in, &f, &out);
                else size = arm_convolve_wrapper_s8_get_buffer_size(&p, &in, &f, &out);
            } else {
                cmsis_nn_dw_conv_params p;
                memset(&p, 0, sizeof(p));
                p.ch_mult = mult;
                p.stride.w = sw; p.stride.h = sh; p.padding.w = pw; p.padding.h = ph;
                p.dilation.w = dw; p.dilation.h = dh; p.activation.min = -128; p.activation.max = 127;
                if (s4 && strcmp(var, "mve") == 0) size = arm_depthwise_conv_wrapper_s4_get_buffer_size_mve(&p, &in, &f, &out);
                else if (s4 && strcmp(var, "dsp") == 0) size = arm_depthwise_conv_wrapper_s4_get_buffer_size_dsp(&p, &in, &f, &out);
                else if (s4) size = arm_depthwise_conv_wrapper_s4_get_buffer_size(&p, &in, &f, &out);
                else if (s16 && strcmp(var, "mve") == 0) size = arm_depthwise_conv_wrapper_s16_get_buffer_size_mve(&p, &in, &f, &out);
                else if (s16 && strcmp(var, "dsp") == 0) size = arm_depthwise_conv_wrapper_s16_get_buffer_size_dsp(&p, &in, &f, &out);
                else if (s16) size = arm_depthwise_conv_wrapper_s16_get_buffer_size(&p, &in, &f, &out);
                else if (strcmp(var, "mve") == 0) size = arm_depthwise_conv_wrapper_s8_get_buffer_size_mve(&p, &in, &f, &out);
                else if (strcmp(var, "dsp") == 0) size = arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(&p, &in, &f, &out);
                else size = arm_depthwise_conv_wrapper_s8_get_buffer_size(&p, &in, &f, &out);
            }
        } else if (strcmp(op, "fc") == 0) {
            if (!read_dims(&f)) {
                return 2;
            }
            if (s16 && strcmp(var, "mve") == 0) size = arm_fully_connected_s16_get_buffer_size_mve(&f);
            else if (s16 && strcmp(var, "dsp") == 0) size = arm_fully_connected_s16_get_buffer_size_dsp(&f);
            else if (s16) size = arm_fully_connected_s16_get_buffer_size(&f);
            else if (strcmp(var, "mve") == 0) size = arm_fully_connected_s8_get_buffer_size_mve(&f);
            else if (strcmp(var, "dsp") == 0) size = arm_fully_connected_s8_get_buffer_size_dsp(&f);
            else size = arm_fully_connected_s8_get_buffer_size(&f);
        } else if (strcmp(op, "tconv") == 0) {
            int sw, sh;
            if (!read_dims(&in) || !read_dims(&f) || !read_dims(&out) || scanf("%d %d", &sw, &sh) != 2) {
                return 2;
            }
            cmsis_nn_transpose_conv_params p;
            memset(&p, 0, sizeof(p));
            p.stride.w = sw; p.stride.h = sh; p.dilation.w = 1; p.dilation.h = 1;
            p.activation.min = -128; p.activation.max = 127;
            size = arm_transpose_conv_s8_get_buffer_size(&p, &in, &f, &out);
        } else if (strcmp(op, "avg") == 0) {
            int ow, ch;
            if (scanf("%d %d", &ow, &ch) != 2) {
                return 2;
            }
            if (s16 && strcmp(var, "mve") == 0) size = arm_avgpool_s16_get_buffer_size_mve(ow, ch);
            else if (s16 && strcmp(var, "dsp") == 0) size = arm_avgpool_s16_get_buffer_size_dsp(ow, ch);
            else if (s16) size = arm_avgpool_s16_get_buffer_size(ow, ch);
            else if (strcmp(var, "mve") == 0) size = arm_avgpool_s8_get_buffer_size_mve(ow, ch);
            else if (strcmp(var, "dsp") == 0) size = arm_avgpool_s8_get_buffer_size_dsp(ow, ch);
            else size = arm_avgpool_s8_get_buffer_size(ow, ch);
        } else {
            return 2;
        }
        printf("%d\n", (int)size);
    }
    return 0;
}
