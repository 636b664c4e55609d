/*
 * mcu_batch_matmul_s8.c - int8 batch matmul of two activations (TFLite BATCH_MATMUL int8,
 * CMSIS-NN's arm_batch_matmul_s8): lhs [B0, B1, M, K] x rhs [B0, B1, K, N] -> [B0, B1, M, N],
 * each batch dim of an operand equal to the output's or 1 (broadcast). The dispatcher: parameter
 * checks, the batch loop, the choice of code path.
 *
 *   out[b, m, n] = clamp(requant(sum_k (lhs[b, m, k] + input_offset) * (rhs[b, k, n] + rhs_offset),
 *                        multiplier, shift) + output_offset, act_min, act_max)
 *
 * Either operand may be stored with its last two axes swapped (a Transpose folded at build time),
 * and with any batch and row strides (a view: the heads of a multi-head split).
 * Paths (each exact: every output's sum has exactly the reference's terms):
 * - MVE (mcu_batch_matmul_s8_mve.c): VMLADAVA.S8 over rows of K bytes, four rhs rows per pass;
 * - DSP (mcu_batch_matmul_s8_dsp.c): SXTAB16 + SMLAD, two lhs rows by two rhs rows per pass;
 * - generic (mcu_batch_matmul_s8_generic.c): pure C99, strided, the spec.
 * The DSP and MVE paths read rhs as rows of K bytes: an rhs stored [K, N] is first copied into the
 * scratch as [N, K], once per distinct rhs batch; MVE also keeps the N column terms there (M > 2).
 */
#include <stdint.h>

#include "mcu_batch_matmul_s8_internal.h"
#include "mcu_kernel_util.h"
#include "mcu_nn.h"

#define MAX_DEPTH 16384 /* |acc| <= K * 255 * 255 < 2^30 (mcu_requant2) */

static int32_t plan(const mcu_batch_matmul_params_t *p, int32_t isa)
{
    if (p->lhs_transposed || (!p->rhs_transposed && p->lhs.w < 2)) {
        return MCU_PATH_GENERIC;
    }
    if (isa == MCU_ISA_MVE) {
        return MCU_PATH_MVE;
    }
    if (isa == MCU_ISA_DSP &&
        (p->q.rounding == MCU_ROUND_TFLITE || p->q.rounding == MCU_ROUND_NEAREST_NO_TIE) &&
        p->shift >= -20 && p->shift <= -1 && p->multiplier >= 0) {
        return MCU_PATH_DSP;
    }
    return MCU_PATH_GENERIC;
}

static int32_t round_up4(int32_t v)
{
    return (v + 3) & ~3;
}

int32_t mcu_batch_matmul_s8_get_buffer_size(const mcu_batch_matmul_params_t *params, int32_t isa)
{
    const int32_t path = plan(params, isa);
    if (path == MCU_PATH_GENERIC) {
        return 0;
    }
    const int32_t copy = params->rhs_transposed ? 0 : round_up4(params->rhs.w * params->rhs.c);
    return copy + (path == MCU_PATH_MVE && params->lhs.w > MCU_BMM_INLINE_COLS ? 4 * params->rhs.c : 0);
}

int32_t mcu_batch_matmul_s8_path(const mcu_batch_matmul_params_t *params, int32_t isa)
{
    return plan(params, isa);
}

/* Batch dim `d` of an operand: equal to the output's `out`, or 1. */
static int batch_ok(int32_t d, int32_t out)
{
    return d == out || d == 1;
}

/* Strides of an operand whose stored rows hold `row` elements each: all >= 0, rows no closer than
 * their length. */
static int strides_ok(const mcu_bmm_strides_t *s, int32_t row)
{
    return s->n >= 0 && s->h >= 0 && s->row >= row;
}

static int params_valid(const mcu_batch_matmul_params_t *p)
{
    const mcu_dims_t *l = &p->lhs, *r = &p->rhs, *o = &p->output;
    if (!strides_ok(&p->lhs_strides, p->lhs_transposed ? l->w : l->c) ||
        !strides_ok(&p->rhs_strides, p->rhs_transposed ? r->w : r->c)) {
        return 0;
    }
    return dims_valid(l) && dims_valid(r) && dims_valid(o) && l->c <= MAX_DEPTH && r->w == l->c &&
           o->w == l->w && o->c == r->c && batch_ok(l->n, o->n) && batch_ok(r->n, o->n) &&
           batch_ok(l->h, o->h) && batch_ok(r->h, o->h) &&
           (p->lhs_transposed == 0 || p->lhs_transposed == 1) &&
           (p->rhs_transposed == 0 || p->rhs_transposed == 1) && p->rhs_offset >= -MCU_INT8_MAX &&
           p->rhs_offset <= -MCU_INT8_MIN && p->shift >= -31 && p->shift <= 30 &&
           quant_io_valid(&p->q);
}

#if MCU_ISA_PLAN != MCU_ISA_C
/* rhs [K, N] (rows `row` elements apart) -> rhs_t [N, K] */
static void transpose_rhs(const int8_t *rhs, int32_t row, int32_t depth, int32_t cols, int8_t *rhs_t)
{
    for (int32_t k = 0; k < depth; ++k) {
        for (int32_t n = 0; n < cols; ++n) {
            rhs_t[n * depth + k] = rhs[k * row + n];
        }
    }
}
#endif

mcu_status_t mcu_batch_matmul_s8(const mcu_context_t *ctx, const mcu_batch_matmul_params_t *params,
                                 const int8_t *lhs, const int8_t *rhs, int8_t *output)
{
    if (params == NULL || lhs == NULL || rhs == NULL || output == NULL || !params_valid(params)) {
        return MCU_ERR_ARG;
    }
    const mcu_batch_matmul_params_t *p = params;
    if (!scratch_ok(ctx, mcu_batch_matmul_s8_get_buffer_size(p, MCU_ISA_PLAN))) {
        return MCU_ERR_SCRATCH;
    }
    const int32_t out_size = p->output.w * p->output.c;
    const mcu_bmm_strides_t *ls = &p->lhs_strides, *rs = &p->rhs_strides;
#if MCU_ISA_PLAN != MCU_ISA_C
    const int32_t path = plan(p, MCU_ISA_PLAN);
    int8_t *copy = path != MCU_PATH_GENERIC && !p->rhs_transposed ? (int8_t *)ctx->buf : NULL;
    const int8_t *ready = NULL; /* the rhs batch whose rows are in `rows` */
    const int8_t *rows = NULL;
    int32_t rows_apart = 0; /* of `rows` */
#endif
#if MCU_ISA_PLAN == MCU_ISA_MVE
    int32_t *col = path == MCU_PATH_MVE && p->lhs.w > MCU_BMM_INLINE_COLS
                       ? (int32_t *)(void *)((int8_t *)ctx->buf + (copy ? round_up4(p->rhs.w * p->rhs.c) : 0))
                       : NULL;
#endif
    for (int32_t b0 = 0; b0 < p->output.n; ++b0) {
        for (int32_t b1 = 0; b1 < p->output.h; ++b1) {
            const int8_t *a =
                lhs + (p->lhs.n == 1 ? 0 : b0 * ls->n) + (p->lhs.h == 1 ? 0 : b1 * ls->h);
            const int8_t *b =
                rhs + (p->rhs.n == 1 ? 0 : b0 * rs->n) + (p->rhs.h == 1 ? 0 : b1 * rs->h);
            int8_t *out = output + (b0 * p->output.h + b1) * out_size;
#if MCU_ISA_PLAN != MCU_ISA_C
            if (path != MCU_PATH_GENERIC) {
                if (b != ready) { /* a new rhs batch: its rows (and MVE's column terms) */
                    ready = b;
                    rows = b;
                    rows_apart = rs->row;
                    if (copy != NULL) {
                        transpose_rhs(b, rs->row, p->rhs.w, p->rhs.c, copy);
                        rows = copy;
                        rows_apart = p->rhs.w;
                    }
#if MCU_ISA_PLAN == MCU_ISA_MVE
                    if (col != NULL) {
                        mcu_batch_matmul_s8_mve_columns(p, rows, rows_apart, col);
                    }
#endif
                }
#if MCU_ISA_PLAN == MCU_ISA_MVE
                mcu_batch_matmul_s8_mve(p, a, ls->row, rows, rows_apart, col, out);
#else
                mcu_batch_matmul_s8_dsp(p, a, ls->row, rows, rows_apart, out);
#endif
                continue;
            }
#endif
            mcu_batch_matmul_s8_generic(p, a, b, out);
        }
    }
    return MCU_OK;
}
