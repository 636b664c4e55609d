/*
 * mcu_depthwise_conv2d_s4.c - int8 depthwise 2-D convolution with 4-bit weights, NHWC, any depth
 * multiplier; filter per tap (ky, kx): its C_out weights two a byte, channel 2j in byte j's low
 * nibble, 2j + 1 in its high nibble (mcu_nn_s4.h). The numbers are mcu_depthwise_conv2d_s8's: one
 * int32 sum per output element, bias plus (in + input_offset) * w over the taps inside the input
 * (a padding tap adds nothing), then mcu_output_stage.
 *
 * Each output position takes its taps inside the input once (valid_taps), then its channels two at
 * a time (one weight byte a tap, two sums); a depth multiplier above 1 reads input channel
 * oc / depth_multiplier. No scratch.
 */
#include <stdint.h>

#include "mcu_kernel_util.h"
#include "mcu_nn.h"
#include "mcu_nn_s4.h"

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

/* The window of one position: taps [ky0, ky1) x [kx0, kx1) inside the input, from `x` (the tap
 * (ky0, kx0)'s pixel). */
typedef struct {
    const int8_t *x;
    int32_t ky0, ky1, kx0, kx1;
} window_t;

/* sums of channels oc and oc + 1 (oc even) over the window; `in0`, `in1` their input channels */
static inline void pair(const mcu_depthwise_conv_params_t *p, const window_t *win,
                        const uint8_t *filter, int32_t row, int32_t oc, int32_t in0, int32_t in1,
                        int32_t *a0, int32_t *a1)
{
    const int32_t off = p->q.input_offset;
    const int32_t c_in = p->input.c;
    const int32_t dy = p->dilation_h * p->input.w * c_in;
    const int32_t dx = p->dilation_w * c_in;
    int32_t s0 = *a0, s1 = *a1;
    const int8_t *xr = win->x;
    for (int32_t ky = win->ky0; ky < win->ky1; ++ky, xr += dy) {
        const uint8_t *w = filter + (ky * p->filter.w + win->kx0) * row + oc / 2;
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

mcu_status_t mcu_depthwise_conv2d_s4(const mcu_context_t *ctx,
                                     const mcu_depthwise_conv_params_t *params,
                                     const int8_t *input, const uint8_t *filter,
                                     const int32_t *bias, int8_t *output)
{
    (void)ctx;
    if (params == NULL || input == NULL || filter == NULL || output == NULL ||
        !params_valid(params)) {
        return MCU_ERR_ARG;
    }
    const mcu_depthwise_conv_params_t *const p = params;
    const int32_t c_out = p->output.c;
    const int32_t c_in = p->input.c;
    const int32_t mult = p->depth_multiplier;
    const int32_t row = (c_out + 1) / 2;
    int8_t *out = output;
    for (int32_t b = 0; b < p->output.n; ++b) {
        const int8_t *image = input + (size_t)b * (size_t)(p->input.h * p->input.w * c_in);
        for (int32_t oy = 0; oy < p->output.h; ++oy) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            window_t win;
            valid_taps(y0, p->dilation_h, p->filter.h, p->input.h, &win.ky0, &win.ky1);
            for (int32_t ox = 0; ox < p->output.w; ++ox, out += c_out) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                valid_taps(x0, p->dilation_w, p->filter.w, p->input.w, &win.kx0, &win.kx1);
                const int32_t iy = y0 + win.ky0 * p->dilation_h;
                const int32_t ix = x0 + win.kx0 * p->dilation_w;
                win.x = image + ((size_t)iy * (size_t)p->input.w + (size_t)ix) * (size_t)c_in;
                if (win.ky0 == win.ky1 || win.kx0 == win.kx1) {
                    win.x = image; /* no tap inside: the sums are the biases */
                }
                int32_t ic = 0, m = 0; /* input channel of oc, and oc's place among its copies */
                for (int32_t oc = 0; oc < c_out; oc += 2) {
                    const int32_t in0 = ic;
                    if (++m == mult) {
                        m = 0;
                        ++ic;
                    }
                    const int32_t in1 = oc + 1 < c_out ? ic : in0;
                    if (++m == mult) {
                        m = 0;
                        ++ic;
                    }
                    int32_t a0 = bias != NULL ? bias[oc] : 0;
                    int32_t a1 = bias != NULL && oc + 1 < c_out ? bias[oc + 1] : 0;
                    pair(p, &win, filter, row, oc, in0, in1, &a0, &a1);
                    out[oc] = mcu_output_stage(a0, p->multiplier[oc], p->shift[oc], &p->q);
                    if (oc + 1 < c_out) {
                        out[oc + 1] =
                            mcu_output_stage(a1, p->multiplier[oc + 1], p->shift[oc + 1], &p->q);
                    }
                }
            }
        }
    }
    return MCU_OK;
}
