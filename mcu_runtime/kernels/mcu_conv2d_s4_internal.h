/*
 * mcu_conv2d_s4_internal.h - what the dispatcher mcu_conv2d_s4.c and its path files
 * (mcu_conv2d_s4_dsp.c, _mve.c) share. Internal to mcu_runtime.
 *
 * The filter layout (MCU_S4_BLOCK in mcu_nn_s4.h): each output channel's K = KH * KW * C_in
 * weights, in (ky, kx, ic) order, take ceil(K / 2) bytes; channel oc starts at byte oc * ceil(K / 2).
 * The weights go by blocks of 32 (the last block t = K % 32 weights): with h = ceil(t / 2) (16 for
 * a whole block), byte j of the block holds weight j in its low nibble and weight h + j in its high
 * nibble (0 where h + j >= t). So a block's low nibbles are its first half and its high nibbles its
 * second half, in order: the blocked paths unpack 16 bytes into 32 int8 (a word into two words; on
 * MVE one vector into two), the unblocked DSP path a word into two words of int16 pairs.
 */
#ifndef MCU_CONV2D_S4_INTERNAL_H
#define MCU_CONV2D_S4_INTERNAL_H

#include <stdint.h>

#include "mcu_nn.h"
#include "mcu_nn_s4.h"

/* DSP path: bytes of int16 windows (P = 4 positions per pass up to 144 widened taps, 2 up to 288,
 * 1 up to 576: the s8 DSP path's MCU_CONV_DSP_WORDS words); larger filters take the generic path. */
#define MCU_CONV_S4_DSP_BYTES 1152
/* Blocked paths (mcu_conv2d_s4.c): the int8 weights of a block of output channels unpacked into
 * at most this many bytes of scratch (at least one channel's K), then every position through
 * mcu_conv2d_s8's loops. */
#define MCU_CONV_S4_UNPACK_BYTES 2048
/* Blocked DSP path: output channels a block at most. */
#define MCU_CONV_S4_DSP_OC_BLOCK 64
/* Blocked DSP and MVE paths: output channels a block at least (past MCU_CONV_S4_UNPACK_BYTES for
 * K > 128: fewer blocks, fewer passes over the windows). */
#define MCU_CONV_S4_MIN_OC_BLOCK 16
/* mcu_conv2d_s4_lean: output channels a block. */
#define MCU_CONV_S4_LEAN_OC_BLOCK 4

#if defined(__GNUC__)
#define MCU_CONV_S4_INLINE static inline __attribute__((always_inline))
#else
#define MCU_CONV_S4_INLINE static inline
#endif

/* The low and the high nibble of a byte, sign-extended (arithmetic right shift of a negative
 * value: implementation-defined, arithmetic on every compiler mcugen supports). */
MCU_CONV_S4_INLINE int32_t mcu_s4_lo(uint32_t b)
{
    return (int32_t)(b << 28) >> 28;
}

MCU_CONV_S4_INLINE int32_t mcu_s4_hi(uint32_t b)
{
    return (int32_t)(b << 24) >> 28;
}

/* Widened taps of one position's window on the DSP path: per block of t weights (h = ceil(t / 2)),
 * its first h taps then its last t - h, each half padded with zeros to a multiple of 4. */
static inline int32_t mcu_conv2d_s4_widened(int32_t k)
{
    const int32_t t = k % MCU_S4_BLOCK;
    const int32_t h = (t + 1) / 2;
    return k - t + (t > 0 ? 2 * ((h + 3) & ~3) : 0);
}

/* Whether some output position's window is not one run of the input (padding taps, or taps not
 * adjacent in one input row): such windows are gathered (mcu_conv2d_s4_window). */
int mcu_conv2d_s4_gathers(const mcu_conv_params_t *p);

/* The K taps of output position `pos` (in (b, y, x) order) in (ky, kx, ic) order: a pointer into
 * the input when the window is one run of it, else gathered into patch (K bytes) with the input
 * zero point in the padding taps. */
const int8_t *mcu_conv2d_s4_window(const mcu_conv_params_t *p, const int8_t *input, int32_t pos,
                                   int8_t *patch);

/* Whether the DSP and MVE paths may requantize with mcu_requant2 (mcu_requant.h): not onnxruntime's
rounding unproven tie-free, and mcu_requant2_ok(multiplier, shift, sums) for every channel (then
|acc| < 2^29 + 65535 * 1024 < 2^30). */
int mcu_conv2d_s4_requant2(const mcu_conv_params_t *p, const int32_t *sums);

/* The DSP path's positions per pass (4, 2 or 1), 0 when it does not run. */
int32_t mcu_conv2d_s4_dsp_positions(const mcu_conv_params_t *p);

#if defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#include "mcu_requant.h"

/* One channel's constants for mcu_requant2 of a doubled sum 2 * dot: acc2 = 2 dot + s2 (s2 = twice
 * the channel's sums, plus the doubled lift for MCU_ROUND_NEAREST_NO_TIE), base, right = -shift. */
typedef struct {
    int32_t mult;
    int32_t right;
    int32_t base;
    int32_t s2;
} mcu_conv_s4_rq_t;

MCU_CONV_S4_INLINE void mcu_conv_s4_rq(const mcu_conv_params_t *p, const int32_t *sums, int32_t oc,
                                       mcu_conv_s4_rq_t *r)
{
    const int32_t mult = p->multiplier[oc];
    const int32_t sh = p->shift[oc];
    int32_t lift2 = 0;
    r->mult = mult;
    r->right = -sh;
    r->base = p->q.rounding == MCU_ROUND_NEAREST_NO_TIE
                  ? mcu_requant2_no_tie(mult, sh, p->q.output_offset, &lift2)
                  : mcu_requant2_base(sh, p->q.output_offset);
    r->s2 = (int32_t)(2u * (uint32_t)sums[oc] + (uint32_t)lift2);
}

/* The output of a doubled dot product dot2 (mcu_requant2, then the activation clamp). */
MCU_CONV_S4_INLINE int8_t mcu_conv_s4_out(const mcu_conv_s4_rq_t *r, int32_t dot2,
                                          const mcu_quant_io_t *q)
{
    /* 2 acc (+ the lift) fits int32; its two parts may wrap */
    const int32_t acc2 = (int32_t)((uint32_t)dot2 + (uint32_t)r->s2);
    const int32_t v = mcu_requant2(acc2, r->mult, r->base, r->right);
    return (int8_t)mcu_clamp_s32(v, q->act_min, q->act_max);
}
#endif

#if MCU_ISA_NATIVE == MCU_ISA_DSP
void mcu_conv2d_s4_dsp(const mcu_conv_params_t *p, const int8_t *input, const uint8_t *filter,
                       const int32_t *sums, int8_t *output, int32_t per_pass, void *scratch);
#endif


#endif /* MCU_CONV2D_S4_INTERNAL_H */
