/*
 * mcu_band.c - row bands of the window kernels and the rows ring of streamed layers (see
 * mcu_band.h).
 */
#include "mcu_band.h"

int32_t mcu_window_rows(int32_t o0, int32_t o1, int32_t stride, int32_t dilation,
                        int32_t filter_h, int32_t pad_top, int32_t in_h, int32_t rows[2])
{
    const int32_t first = o0 * stride - pad_top;                             /* may be < 0 */
    const int32_t past = (o1 - 1) * stride - pad_top + (filter_h - 1) * dilation + 1;
    int32_t lo = first < 0 ? 0 : first;
    int32_t hi = past > in_h ? in_h : past;
    if (lo > in_h) {
        lo = in_h;
    }
    if (hi < lo) {
        hi = lo;
    }
    rows[0] = lo;
    rows[1] = hi;
    return lo - first;
}

/* 0 <= o0 < o1 <= out_h, and the band reads at least one input row */
static int band_ok(int32_t o0, int32_t o1, int32_t out_h, const int32_t rows[2])
{
    return 0 <= o0 && o0 < o1 && o1 <= out_h && rows[0] < rows[1];
}

/* A band of a windowed op (*band a copy of its params): rows [o0, o1) of its out_h output rows,
 * whose windows (stride, dilation, taps) read input rows rows[0] .. rows[1] - 1. Sets the band's
 * pad_top, input height and output height. */
static mcu_status_t window_band(int32_t o0, int32_t o1, int32_t out_h, int32_t stride,
                                int32_t dilation, int32_t taps, int32_t *pad_top, int32_t *in_h,
                                int32_t *band_out_h, int32_t rows[2])
{
    *pad_top = mcu_window_rows(o0, o1, stride, dilation, taps, *pad_top, *in_h, rows);
    *in_h = rows[1] - rows[0];
    *band_out_h = o1 - o0;
    return band_ok(o0, o1, out_h, rows) ? MCU_OK : MCU_ERR_ARG;
}

mcu_status_t mcu_conv2d_s8_band(const mcu_conv_params_t *params, int32_t o0, int32_t o1,
                                mcu_conv_params_t *band, int32_t rows[2])
{
    band->pad_top = params->pad_top; /* the rest: *band's copy of *params (mcu_band.h) */
    band->input.h = params->input.h;
    return window_band(o0, o1, params->output.h, params->stride_h, params->dilation_h,
                       params->filter.h, &band->pad_top, &band->input.h, &band->output.h, rows);
}

mcu_status_t mcu_depthwise_conv2d_s8_band(const mcu_depthwise_conv_params_t *params, int32_t o0,
                                          int32_t o1, mcu_depthwise_conv_params_t *band,
                                          int32_t rows[2])
{
    band->pad_top = params->pad_top; /* the rest: *band's copy of *params (mcu_band.h) */
    band->input.h = params->input.h;
    return window_band(o0, o1, params->output.h, params->stride_h, params->dilation_h,
                       params->filter.h, &band->pad_top, &band->input.h, &band->output.h, rows);
}

mcu_status_t mcu_pool_band(const mcu_pool_params_t *params, int32_t o0, int32_t o1,
                           mcu_pool_params_t *band, int32_t rows[2])
{
    band->pad_top = params->pad_top; /* the rest: *band's copy of *params (mcu_band.h) */
    band->input.h = params->input.h;
    return window_band(o0, o1, params->output.h, params->stride_h, 1, params->filter_h,
                       &band->pad_top, &band->input.h, &band->output.h, rows);
}

mcu_status_t mcu_avgpool_requant_s8_band(const mcu_avgpool_requant_params_t *params, int32_t o0,
                                         int32_t o1, mcu_avgpool_requant_params_t *band,
                                         int32_t rows[2])
{
    return mcu_pool_band(&params->pool, o0, o1, &band->pool, rows);
}

mcu_status_t mcu_window_band(const mcu_window_t *window, int32_t o0, int32_t o1,
                             mcu_window_band_t *band, int32_t rows[2])
{
    band->pad_top = window->pad_top;
    band->in_h = window->in_h;
    return window_band(o0, o1, window->out_h, window->stride, window->dilation, window->taps,
                       &band->pad_top, &band->in_h, &band->out_h, rows);
}

mcu_status_t mcu_add_s8_band(const mcu_add_params_t *params, int32_t row_size, int32_t o0,
                             int32_t o1, mcu_add_params_t *band, int32_t rows[2])
{
    rows[0] = o0;
    rows[1] = o1;
    band->size = (o1 - o0) * row_size;
    band->in1.period = band->size;
    band->in2.period = band->size;
    if (row_size < 1 || params->size % row_size != 0 || o0 < 0 || o0 >= o1 ||
        o1 > params->size / row_size || params->in1.inner != 1 || params->in2.inner != 1 ||
        params->in1.period != params->size || params->in2.period != params->size) {
        return MCU_ERR_ARG;
    }
    return MCU_OK;
}

int8_t *mcu_ring_push(mcu_ring_t *ring, int32_t keep)
{
    return mcu_ring_push_rows(ring, keep, 1);
}

void mcu_move_up_s8(int8_t *data, int32_t size, int32_t by)
{
    if (data == NULL || size <= 0 || by <= 0) {
        return;
    }
    const int8_t *src = data + size; /* both from the end down: no byte is read after its overwrite */
    int8_t *dst = data + size + by;
    if ((((uintptr_t)data | (uint32_t)size | (uint32_t)by) & 3u) == 0u) {
#if defined(__arm__) && defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2
        for (; size >= 16; size -= 16) { /* Thumb-2: four words a load and a store (LDMDB, STMDB) */
            __asm__ volatile("ldmdb %0!, {r4, r5, r6, r8}\n\tstmdb %1!, {r4, r5, r6, r8}"
                             : "+r"(src), "+r"(dst)
                             :
                             : "r4", "r5", "r6", "r8", "memory");
        }
#endif
        for (; size >= 16; size -= 16) { /* four words read before any is written */
            uint32_t w[4];
            src -= 16;
            dst -= 16;
            memcpy(w, src, sizeof w);
            memcpy(dst, w, sizeof w);
        }
        for (; size > 0; size -= 4) {
            src -= 4;
            dst -= 4;
            memmove(dst, src, 4);
        }
        return;
    }
    while (size-- > 0) {
        *--dst = *--src;
    }
}

void mcu_move_down_s8(int8_t *data, int32_t size, int32_t by)
{
    if (data == NULL || size <= 0 || by <= 0) {
        return;
    }
    const int8_t *src = data; /* both from the start up: no byte is read after its overwrite */
    int8_t *dst = data - by;
    if ((((uintptr_t)data | (uint32_t)size | (uint32_t)by) & 3u) == 0u) {
#if defined(__arm__) && defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2
        for (; size >= 16; size -= 16) { /* Thumb-2: four words a load and a store (LDMIA, STMIA) */
            __asm__ volatile("ldmia %0!, {r4, r5, r6, r8}\n\tstmia %1!, {r4, r5, r6, r8}"
                             : "+r"(src), "+r"(dst)
                             :
                             : "r4", "r5", "r6", "r8", "memory");
        }
#endif
        for (; size >= 16; size -= 16, src += 16, dst += 16) { /* four words read before any is written */
            uint32_t w[4];
            memcpy(w, src, sizeof w);
            memcpy(dst, w, sizeof w);
        }
        for (; size > 0; size -= 4, src += 4, dst += 4) {
            memmove(dst, src, 4);
        }
        return;
    }
    while (size-- > 0) {
        *dst++ = *src++;
    }
}
