/*
 * mcu_band.h - row bands and row rings: what streamed and overlapped layers need (mcu_band.c).
 *
 * A band is output rows [o0, o1) of a layer. `mcu_<kernel>_band()` turns a layer's parameters
 * into the parameters of that band: the kernel then reads input rows [rows[0], rows[1]) from a
 * pointer to input row rows[0] and writes the band's rows from a pointer to output row o0.
 * *band holds a copy of the layer's parameters (the generated code makes it once, before its
 * loop): the call sets only the fields a band changes (a window's pad_top, input and output
 * heights; an element-wise kernel's sizes), not copying the whole struct on every band.
 * Taps above the band's first input row are the layer's own top padding; taps below its last
 * are the bottom padding, as in the whole layer, so a band computes exactly the layer's rows.
 * mcugen's Python twins (emitter/kernels/mcu_<kernel>.py, band()) state the same rule; a test
 * compares the two over random geometries.
 *
 * A ring holds the last rows a streamed layer produced for the next one: rows [base, base +
 * count) of a tensor, contiguous, at most `cap` of them, so every window of the consumer is one
 * pointer. Pushing into a full ring first drops the rows below `keep` (the consumer's lowest row
 * still to be read) by moving the others down.
 * Internal to mcu_runtime (the generated code calls it; not part of the public API in mcu_nn.h).
 */
#ifndef MCU_BAND_H
#define MCU_BAND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu_nn.h"

typedef struct {
    int8_t *buf;       /* cap * row_bytes bytes in the arena */
    int32_t row_bytes; /* bytes of one row */
    int32_t cap;       /* rows it can hold */
    int32_t base;      /* tensor row of buf[0] */
    int32_t count;     /* rows held */
} mcu_ring_t;

/* Output rows [o0, o1) of a window (filter_h taps `dilation` apart, `stride`, `pad_top`) over
 * `in_h` input rows read rows [rows[0], rows[1]); returns the band's pad_top. */
int32_t mcu_window_rows(int32_t o0, int32_t o1, int32_t stride, int32_t dilation,
                        int32_t filter_h, int32_t pad_top, int32_t in_h, int32_t rows[2]);

mcu_status_t mcu_conv2d_s8_band(const mcu_conv_params_t *params, int32_t o0, int32_t o1,
                                mcu_conv_params_t *band, int32_t rows[2]);
mcu_status_t mcu_depthwise_conv2d_s8_band(const mcu_depthwise_conv_params_t *params, int32_t o0,
                                          int32_t o1, mcu_depthwise_conv_params_t *band,
                                          int32_t rows[2]);
/* mcu_maxpool_s8, mcu_avgpool_s8 */
mcu_status_t mcu_pool_band(const mcu_pool_params_t *params, int32_t o0, int32_t o1,
                           mcu_pool_params_t *band, int32_t rows[2]);
mcu_status_t mcu_avgpool_requant_s8_band(const mcu_avgpool_requant_params_t *params, int32_t o0,
                                         int32_t o1, mcu_avgpool_requant_params_t *band,
                                         int32_t rows[2]);
/* The rows of a window layer whose band is computed by another library's kernel (the cmsis-nn
 * backend calls CMSIS-NN's convolution, depthwise convolution and pools on each band). */
typedef struct {
    int32_t out_h;    /* the layer's output rows */
    int32_t in_h;     /* its input rows */
    int32_t stride;   /* vertical */
    int32_t dilation; /* vertical */
    int32_t taps;     /* filter rows */
    int32_t pad_top;  /* the layer's top padding */
} mcu_window_t;

/* One band of it: the input dims' h, output dims' h and top padding of that band's call. */
typedef struct {
    int32_t in_h;
    int32_t out_h;
    int32_t pad_top;
} mcu_window_band_t;

/* Rows [o0, o1) of a window layer: the band's call reads input rows [rows[0], rows[1]) (in_h of
 * them, from a pointer to row rows[0]) with pad_top rows of padding above; the window's taps
 * below its last input row are padding, as for the whole layer. */
mcu_status_t mcu_window_band(const mcu_window_t *window, int32_t o0, int32_t o1,
                             mcu_window_band_t *band, int32_t rows[2]);
/* Element-wise add of two whole same-size operands viewed as rows of `row_size` elements. */
mcu_status_t mcu_add_s8_band(const mcu_add_params_t *params, int32_t row_size, int32_t o0,
                             int32_t o1, mcu_add_params_t *band, int32_t rows[2]);

/* Moves `size` bytes at `data` up by `by` bytes (onto data + by; they may overlap), from the end
 * down, four words a pass where data, size and by are multiples of 4: a layer planned to write its
 * output `by` bytes below its input (its path's order of writes) puts it back onto the input, so a
 * chain of such layers stays in one place (mcugen's homing calls). */
void mcu_move_up_s8(int8_t *data, int32_t size, int32_t by);

/* Moves `size` bytes at `data` down by `by` bytes (onto data - by; they may overlap), from the
 * start up, four words a pass where data, size and by are multiples of 4 (a ring's held rows to
 * its start: mcu_ring_push_rows). */
void mcu_move_down_s8(int8_t *data, int32_t size, int32_t by);

/* Room for tensor row ring->base + ring->count (mcu_ring_push_rows of one row); returns where to
 * write it, or NULL when the ring is full and no row below `keep` can be dropped (a planning
 * error). */
int8_t *mcu_ring_push(mcu_ring_t *ring, int32_t keep);

/* Room for the `n` tensor rows from ring->base + ring->count on (a band of n rows, made by one
 * call): when they do not fit, the rows below `keep` are dropped first, as mcu_ring_push() does
 * for one row. Returns where to write them, or NULL when they still do not fit (a planning error).
 * Inline: only streamed plans with bands of several rows call it. */
static inline int8_t *mcu_ring_push_rows(mcu_ring_t *ring, int32_t keep, int32_t n)
{
    int8_t *at;

    if (n < 1) {
        return NULL;
    }
    if (ring->count + n > ring->cap) {
        const int32_t drop = keep - ring->base;
        if (drop <= 0) {
            return NULL;
        }
        if (drop < ring->count) {
            mcu_move_down_s8(ring->buf + drop * ring->row_bytes,
                             (ring->count - drop) * ring->row_bytes, drop * ring->row_bytes);
            ring->count -= drop;
            ring->base = keep;
        } else { /* nothing held is needed: the ring restarts at the first row pushed now */
            ring->base += ring->count;
            ring->count = 0;
        }
        if (ring->count + n > ring->cap) {
            return NULL;
        }
    }
    at = ring->buf + ring->count * ring->row_bytes;
    ring->count += n;
    return at;
}

/* Tensor row `row` (held by the ring). */
static inline const int8_t *mcu_ring_row(const mcu_ring_t *ring, int32_t row)
{
    return ring->buf + (row - ring->base) * ring->row_bytes;
}

#endif /* MCU_BAND_H */
