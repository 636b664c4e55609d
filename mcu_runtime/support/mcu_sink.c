/*
 * mcu_sink.c - the accumulating ends of streamed segments (see mcu_sink.h).
 */
#include "mcu_sink.h"

#include "mcu_dot_s8.h"
#include "mcu_math.h"

#if MCU_ISA_NATIVE == MCU_ISA_MVE
#include <arm_mve.h>
#endif

void mcu_fully_connected_s8_acc(const mcu_fc_params_t *params, const int8_t *x, int32_t k0,
                                int32_t len, const int8_t *weights, int32_t *acc)
{
    const int32_t k_in = params->in_features;
    const int32_t blocked = params->out_features - params->out_features % MCU_FC_BLOCK_ROWS;
    const int32_t full = k_in - k_in % MCU_FC_CHUNK;
    const int32_t end = k0 + len;
    const int32_t chunked_end = end < full ? end : full; /* the whole chunks end by here */
    /* a block of four rows at once (mcu_dot4_s8, the whole FC's own dot product): in the chunks the
     * four rows' runs lie MCU_FC_CHUNK bytes apart, in the last K % 16 columns K - full apart */
    for (int32_t n = 0; n < blocked; n += MCU_FC_BLOCK_ROWS) {
        const int8_t *const block = weights + n * k_in;
        for (int32_t k = k0; k < end;) {
            int32_t at, stride, stop;
            if (k % MCU_FC_CHUNK == 0 && k + MCU_FC_CHUNK <= chunked_end) {
                const int32_t chunks = (chunked_end - k) / MCU_FC_CHUNK;
                mcu_dot4_chunks_s8(x + (k - k0), block + k * MCU_FC_BLOCK_ROWS, chunks, acc + n);
                k += chunks * MCU_FC_CHUNK;
                continue;
            }
            if (k < full) {
                const int32_t chunk = k - k % MCU_FC_CHUNK;
                at = chunk * MCU_FC_BLOCK_ROWS + k % MCU_FC_CHUNK;
                stride = MCU_FC_CHUNK;
                stop = chunk + MCU_FC_CHUNK;
            } else {
                at = full * MCU_FC_BLOCK_ROWS + (k - full);
                stride = k_in - full;
                stop = k_in;
            }
            stop = stop < end ? stop : end;
            mcu_dot4_s8(x + (k - k0), block + at, stride, stop - k, acc + n);
            k = stop;
        }
    }
    for (int32_t n = blocked; n < params->out_features; ++n) { /* the last rows: row-major */
        acc[n] += mcu_dot1_s8(x, weights + n * k_in + k0, len);
    }
}

mcu_status_t mcu_fully_connected_s8_finish(const mcu_fc_params_t *params, const int32_t *acc,
                                           const int32_t *kernel_sums, int8_t *output)
{
    if (params->batches != 1) {
        return MCU_ERR_ARG;
    }
    for (int32_t n = 0; n < params->out_features; ++n) {
        const int32_t c = params->per_channel ? n : 0;
        const int32_t out = mcu_requantize_mode(acc[n] + kernel_sums[n], params->multiplier[c],
                                                params->shift[c], params->q.rounding) +
                            params->q.output_offset;
        output[n] = (int8_t)mcu_clamp_s32(out, params->q.act_min, params->q.act_max);
    }
    return MCU_OK;
}

void mcu_pool_sum_s8(const int8_t *x, int32_t pixels, int32_t channels, int32_t *acc)
{
#if MCU_ISA_NATIVE == MCU_ISA_MVE
    /* four channels a vector (the last ones predicated), their sums held over the pixels */
    for (int32_t c = 0; c < channels; c += 4) {
        const mve_pred16_t pr = vctp32q((uint32_t)(channels - c));
        int32x4_t s = vldrwq_z_s32(acc + c, pr);
        const int8_t *xp = x + c;
        for (int32_t i = pixels; i > 0; --i, xp += channels) {
            s = vaddq_s32(s, vldrbq_z_s32(xp, pr));
        }
        vstrwq_p_s32(acc + c, s, pr);
    }
#else
    for (int32_t i = 0; i < pixels; ++i) {
        for (int32_t c = 0; c < channels; ++c) {
            acc[c] += x[i * channels + c];
        }
    }
#endif
}

/* The window covers the whole input, without padding: one output position. */
static int global(const mcu_pool_params_t *p)
{
    return p->input.n == 1 && p->output.h == 1 && p->output.w == 1 && p->filter_h == p->input.h &&
           p->filter_w == p->input.w && p->pad_top == 0 && p->pad_left == 0;
}

mcu_status_t mcu_avgpool_s8_finish(const mcu_pool_params_t *params, const int32_t *acc,
                                   int8_t *output)
{
    if (!global(params)) {
        return MCU_ERR_ARG;
    }
    const int32_t count = params->input.h * params->input.w;
    for (int32_t c = 0; c < params->input.c; ++c) {
        const int32_t avg = params->rounding != MCU_ROUND_TFLITE ? mcu_div_round_even(acc[c], count)
                                                                 : mcu_div_round_away(acc[c], count);
        output[c] = (int8_t)mcu_clamp_s32(avg, params->act_min, params->act_max);
    }
    return MCU_OK;
}

mcu_status_t mcu_avgpool_requant_s8_finish(const mcu_avgpool_requant_params_t *params,
                                           const int32_t *acc, int8_t *output)
{
    const mcu_pool_params_t *p = &params->pool;
    if (!global(p)) {
        return MCU_ERR_ARG;
    }
    const int32_t count = p->input.h * p->input.w;
    for (int32_t c = 0; c < p->input.c; ++c) {
        /* as mcu_avgpool_requant_s8: the offset once per output, the requantized value kept in
         * [-256, 256] before the output offset */
        const int32_t scaled = mcu_clamp_s32(
            mcu_requantize_mode(acc[c] + count * params->input_offset, params->multiplier,
                                params->shift, p->rounding),
            -256, 256);
        output[c] = (int8_t)mcu_clamp_s32(scaled + params->output_offset, p->act_min, p->act_max);
    }
    return MCU_OK;
}
