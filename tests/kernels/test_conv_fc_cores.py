"""mcu_conv2d_s8 and mcu_fully_connected_s8 on every core in QEMU, optimized (-O2: the inline
assembly) and unoptimized (-O0: every asm's C fallback), bit-exact with the numpy golden.

One firmware per (core, opt) runs a table of cases chosen to reach every code path of the C
dispatchers: on the DSP cores P = 4, 2, 1 positions per pass with windows read directly, tap by
tap and gathered; on MVE the four-position and the one-position loops; everywhere the generic path
(gathered patch, runs for large filters, unrealistic requantization). Each case also reports the
path and scratch size the C chose for its own instruction set (MCU_ISA_NATIVE), which must equal
the Python twin's for the core, and is run once with one scratch byte too few (MCU_ERR_SCRATCH).
Every case runs again in onnxruntime numerics (exact float32 scales, rounding half to even: on the
fast paths where proven tie-free, else the generic loops), and one case is forced generic.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import isa_of
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels import mcu_fully_connected_s8 as fc_twin
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_conv2d_s8 import ConvParams, mcu_conv2d_s8
from emitter.kernels.mcu_fully_connected_s8 import FCParams, mcu_fully_connected_s8
from emitter.quant import ROUND_NEAREST_EVEN, ROUND_NEAREST_NO_TIE, acc_bound, exact_multipliers, fast_round_ok
from tests.harness.ckernels import conv_out_size, realistic_multipliers, run_bundle_on_qemu, wide_multipliers

# rv32imac: the generic paths with the RV32 dot products and position pairs (mcu_dot_s8.c)
CORES = ("cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "rv32imac")
PATHS = {"generic": 0, "dsp": 1, "mve": 2}


class Conv(NamedTuple):
    h: int
    w: int
    c_in: int
    c_out: int
    k: tuple[int, int]
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, bottom, left, right
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    n: int = 1
    wide: bool = False
    big_bias: bool = False


CONVS = {
    "p4_tap_by_tap": Conv(6, 6, 4, 8, (3, 3), (1, 1, 1, 1)),          # DSP P=4, C_in % 4 == 0
    "gather_k27": Conv(5, 5, 3, 5, (3, 3), (1, 1, 1, 1)),             # DSP gathered; K % 4, % 16 tails
    "contiguous_1x1": Conv(4, 4, 16, 8, (1, 1)),                      # windows read straight
    "one_position": Conv(3, 3, 5, 3, (3, 3)),                         # DSP P=1, odd C_out
    "p2_k180": Conv(4, 4, 20, 6, (3, 3), (1, 1, 1, 1)),               # DSP P=2
    "p1_k360": Conv(4, 3, 40, 5, (3, 3), (1, 1, 1, 1)),               # DSP P=1, MVE one position
    "runs_k800": Conv(4, 4, 32, 5, (5, 5), (2, 2, 2, 2)),             # generic, run by run
    "wide_shifts": Conv(5, 5, 4, 8, (3, 3), (1, 1, 1, 1), wide=True), # generic everywhere
    "big_bias": Conv(5, 5, 4, 6, (3, 3), (1, 1, 1, 1), big_bias=True),
    "s2_d2_batch2": Conv(7, 7, 2, 4, (3, 3), (2, 2, 2, 2), (2, 2), (2, 2), n=2),
    "one_by_five": Conv(1, 9, 3, 4, (1, 5), (0, 0, 2, 2)),
    # DSP row by row (C_in % 4 != 0, KW * C_in % 4 == 0): rows inside, padding rows, rows across
    # either edge (micro_speech's first layer is one)
    "rows_c1_s2": Conv(9, 8, 1, 5, (5, 4), (2, 2, 1, 2), (2, 1)),
    "rows_c2": Conv(6, 7, 2, 4, (3, 4), (1, 1, 2, 1)),
    # DSP gathered with runs longer than the inline short-run copy
    "gather_long_runs": Conv(5, 5, 6, 4, (3, 3), (1, 1, 1, 1)),
    # RV32 position pairs read row by row: rows dilation_h apart, a pair across output rows, a
    # C_out % 4 tail, batch 2
    "pairs_dil_h2": Conv(7, 5, 3, 6, (3, 2), (0, 0, 1, 0), (1, 1), (2, 1), n=2),
}


class FC(NamedTuple):
    batches: int
    k: int
    n: int
    per_channel: bool = True
    wide: bool = False
    big_bias: bool = False  # |acc| >= 2^30 on some output: the DSP path's exact fallback


FCS = {"k33_n5_b2": FC(2, 33, 5), "k300_n6_tensor": FC(1, 300, 6, False), "k1_n4": FC(3, 1, 4),
       "k64_n10": FC(1, 64, 10), "k8_n16_tensor": FC(1, 8, 16, False), "k20_n9_b2": FC(2, 20, 9),
       "k48_n8_wide": FC(1, 48, 8, wide=True), "k16_n4_big_bias": FC(1, 16, 4, False, big_bias=True),
       # the MVE assembly: tiny K (tail only), N % 4 of 1..3 alone or after blocks, K % 16 tails,
       # batches, per-tensor with shift > 0 (the intrinsics)
       "k1_n16_tensor": FC(1, 1, 16, False), "k2_n7_b3": FC(3, 2, 7), "k16_n1_tensor": FC(2, 16, 1, False),
       "k47_n3_b2": FC(2, 47, 3), "k17_n6_tensor_b2": FC(2, 17, 6, False), "k32_n2": FC(1, 32, 2),
       "k20_n5_wide_tensor": FC(2, 20, 5, False, wide=True)}


def conv_case(spec: Conv, rng: np.random.Generator) -> tuple[ConvParams, list[Any]]:
    top, bottom, left, right = spec.pads
    out_h = conv_out_size(spec.h, spec.k[0], spec.stride[0], spec.dilation[0], top, bottom)
    out_w = conv_out_size(spec.w, spec.k[1], spec.stride[1], spec.dilation[1], left, right)
    taps = spec.k[0] * spec.k[1] * spec.c_in
    mult, shift = wide_multipliers(rng, spec.c_out) if spec.wide else realistic_multipliers(rng, spec.c_out, taps)
    p = ConvParams(Dims(spec.n, spec.h, spec.w, spec.c_in), Dims(spec.c_out, *spec.k, spec.c_in),
                   Dims(spec.n, out_h, out_w, spec.c_out), *spec.stride, *spec.dilation, top, left,
                   QuantIO(int(rng.integers(-127, 129)), int(rng.integers(-128, 128)), -100, 120), mult, shift)
    x = rng.integers(-128, 128, (spec.n, spec.h, spec.w, spec.c_in), dtype=np.int8)
    w = rng.integers(-128, 128, (spec.c_out, *spec.k, spec.c_in), dtype=np.int8)
    b = rng.integers(-(1 << 13), 1 << 13, spec.c_out).astype(np.int32)
    if spec.big_bias:
        b[0] = 1 << 29
    return p, [x, w, b]


def fc_case(spec: FC, rng: np.random.Generator) -> tuple[FCParams, list[Any]]:
    channels = spec.n if spec.per_channel else 1
    mult, shift = wide_multipliers(rng, channels) if spec.wide else realistic_multipliers(rng, channels, spec.k)
    p = FCParams(spec.batches, spec.k, spec.n, QuantIO(int(rng.integers(-127, 129)), 3, -128, 127),
                 int(spec.per_channel), mult, shift)
    x = rng.integers(-128, 128, (spec.batches, spec.k), dtype=np.int8)
    w = rng.integers(-128, 128, (spec.n, spec.k), dtype=np.int8)
    b = rng.integers(-(1 << 13), 1 << 13, spec.n).astype(np.int32)
    if spec.big_bias:
        b[1:3] = (1 << 30) + (1 << 20), -(1 << 30) - (1 << 20)
    return p, [x, w, b]


def arr(ctype: str, name: str, a: np.ndarray) -> str:
    return f"static const {ctype} {name}[{a.size}] = {{{', '.join(str(int(v)) for v in a.ravel())}}};\n"


def dims(d: Dims) -> str:
    return f"{{.n = {d.n}, .h = {d.h}, .w = {d.w}, .c = {d.c}}}"


def quant(q: QuantIO) -> str:
    return (f"{{.input_offset = {q.input_offset}, .output_offset = {q.output_offset}, "
            f".act_min = {q.act_min}, .act_max = {q.act_max}, .rounding = {q.rounding}}}")


def ort_variant(p: Any, w: np.ndarray, b: np.ndarray, force_generic: bool = False) -> Any:
    """The same case in onnxruntime numerics: each channel's scale rounded to float32 and held
    exactly, rounding MCU_ROUND_NEAREST_NO_TIE where fast_round_ok() proves it (the fast DSP/MVE
    paths with mcu_requant2_lift; fully connected: its exact lanes), else (or when forced)
    MCU_ROUND_NEAREST_EVEN (generic loops)."""
    real = np.asarray(p.multiplier, np.float64) * np.exp2(np.asarray(p.shift, np.float64) - 31)
    mult, shift = exact_multipliers(real.astype(np.float32))
    c_out = mult.size
    rounding = ROUND_NEAREST_EVEN
    rows = w.shape[0]
    bound = acc_bound(w.reshape(rows, -1), b, rows)  # per output channel
    if c_out == 1:  # per-tensor: every output's
        bound = bound.max(keepdims=True)
    if not force_generic and fast_round_ok(mult, shift, bound):
        rounding = ROUND_NEAREST_NO_TIE
    return replace(p, q=replace(p.q, rounding=rounding), multiplier=mult, shift=shift)


def net_c(cases: list[tuple[str, Any, list[Any]]]) -> str:
    """One C file: every case's constants, and net_run_multi running them in turn; output 0 holds
    every case's output, output 1 per case its path (1 byte) and scratch need (int32, LE)."""
    decls, calls, off = [], [], 0
    for k, (kind, p, (x, w, b)) in enumerate(cases):
        if kind == "fc":  # the C takes the block layout and the kernel sums
            w, b = fc_twin.pack_weights(w), fc_twin.kernel_sums(p, w, b)
        decls += [arr("int8_t", f"x{k}", x), arr("int8_t", f"w{k}", w), arr("int32_t", f"b{k}", b),
                  arr("int32_t", f"m{k}", p.multiplier), arr("int32_t", f"s{k}", p.shift)]
        if kind == "conv":
            consts = ""
            if p.kernel_sums is not None:  # a streamed layer's build-time constants (band_constants)
                decls.append(arr("int32_t", f"ks{k}", p.kernel_sums))
                consts = f", .kernel_sums = ks{k}, .channels_fast = {p.channels_fast}"
            decls.append(f"static const mcu_conv_params_t p{k} = {{.input = {dims(p.input)}, "
                         f".filter = {dims(p.filter)}, .output = {dims(p.output)}, .stride_h = {p.stride_h}, "
                         f".stride_w = {p.stride_w}, .dilation_h = {p.dilation_h}, .dilation_w = {p.dilation_w}, "
                         f".pad_top = {p.pad_top}, .pad_left = {p.pad_left}, .q = {quant(p.q)}, "
                         f".multiplier = m{k}, .shift = s{k}{consts}}};\n")
            size = p.output.n * p.output.h * p.output.w * p.output.c
        else:
            decls.append(f"static const mcu_fc_params_t p{k} = {{.batches = {p.batches}, "
                         f".in_features = {p.in_features}, .out_features = {p.out_features}, "
                         f".q = {quant(p.q)}, .per_channel = {p.per_channel}, .multiplier = m{k}, "
                         f".shift = s{k}}};\n")
            size = p.batches * p.out_features
        calls.append(f"    if (run_{'conv' if kind == 'conv' else 'fc'}(&p{k}, x{k}, w{k}, b{k}, "
                     f"outputs[0] + {off}, outputs[1] + {5 * k}) != 0) {{\n        return {k + 1};\n    }}\n")
        off += size
    runner = """
static int32_t scratch[1024];

static void put_meta(int8_t *meta, int32_t path, int32_t need)
{
    meta[0] = (int8_t)path;
    for (int i = 0; i < 4; ++i) {
        meta[1 + i] = (int8_t)(uint8_t)((uint32_t)need >> (8 * i));
    }
}

static int run_conv(const mcu_conv_params_t *p, const int8_t *x, const int8_t *w, const int32_t *b,
                    int8_t *out, int8_t *meta)
{
    const int32_t need = mcu_conv2d_s8_get_buffer_size(p, b, MCU_ISA_NATIVE);
    put_meta(meta, mcu_conv2d_s8_path(p, b, MCU_ISA_NATIVE), need);
    mcu_context_t ctx = {scratch, need - 1};
    if (need > (int32_t)sizeof scratch || (need > 0 && mcu_conv2d_s8(&ctx, p, x, w, b, out) != MCU_ERR_SCRATCH)) {
        return 1;
    }
    ctx.size = need;
    return mcu_conv2d_s8(&ctx, p, x, w, b, out) != MCU_OK;
}

static int run_fc(const mcu_fc_params_t *p, const int8_t *x, const int8_t *w, const int32_t *b,
                  int8_t *out, int8_t *meta)
{
    const int32_t need = mcu_fully_connected_s8_get_buffer_size(p, b, MCU_ISA_NATIVE);
    put_meta(meta, mcu_fully_connected_s8_path(p, b, MCU_ISA_NATIVE), need);
    const mcu_context_t ctx = {need > 0 ? scratch : NULL, need};
    return mcu_fully_connected_s8(&ctx, p, x, w, b, out) != MCU_OK;
}

int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);

int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)
{
    (void)inputs;
"""
    return ("#include <stdint.h>\n#include <stddef.h>\n#include \"mcu_runtime/include/mcu_nn.h\"\n\n"
            + "".join(decls) + runner + "".join(calls) + "    return 0;\n}\n")


@pytest.fixture(scope="module")
def cases() -> list[tuple[str, Any, list[Any]]]:
    rng = np.random.default_rng(10)
    out: list[tuple[str, Any, list[Any]]] = [("conv", *conv_case(s, rng)) for s in CONVS.values()]
    out += [("fc", *fc_case(s, rng)) for s in FCS.values()]
    ort = [(kind, ort_variant(p, inputs[1], inputs[2]), inputs) for kind, p, inputs in out]
    assert sum(p.q.rounding == ROUND_NEAREST_NO_TIE for _, p, _ in ort) >= 8  # fast paths covered
    kind, p, inputs = out[0]
    out = out + ort + [(kind, ort_variant(p, inputs[1], inputs[2], force_generic=True), inputs)]
    # every conv again with the build-time constants mcugen writes for a layer it calls band by band
    return out + [(kind, conv_twin.band_constants(p, inputs[1], inputs[2]), inputs)
                  for kind, p, inputs in out if kind == "conv"]


def case_names() -> list[str]:
    """The cases fixture's names, in its order."""
    names = [*CONVS, *FCS]
    names += [f"{n} (onnxruntime numerics)" for n in names] + [f"{[*CONVS][0]} (onnxruntime, generic)"]
    convs = [n for n in names if n.split(" ")[0] in CONVS]
    return names + [f"{n} (band constants)" for n in convs]


@pytest.mark.qemu
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("core", CORES)
def test_every_path_bit_exact_on_every_core(core: str, opt: str, cases, tmp_path: Path) -> None:
    golden, metas = [], []
    isa = isa_of(load_board(core))
    for kind, p, inputs in cases:
        fn, twin = (mcu_conv2d_s8, conv_twin) if kind == "conv" else (mcu_fully_connected_s8, fc_twin)
        golden.append(np.asarray(fn(p, *inputs), np.int8).ravel())
        metas.append((PATHS[twin.path(p, inputs[2], isa)], twin.buffer_size(p, inputs[2], isa)))
    want = np.concatenate(golden)
    raw = run_bundle_on_qemu(core, ["mcu_conv2d_s8", "mcu_fully_connected_s8"], net_c(cases), [1],
                             [want.size, 5 * len(cases)], b"\0", tmp_path, opt)
    got = np.frombuffer(raw[:want.size], np.int8)
    names = case_names()
    assert len(names) == len(cases)
    starts = np.cumsum([0] + [g.size for g in golden])
    bad = [names[k] for k, g in enumerate(golden) if not np.array_equal(got[starts[k]:starts[k] + g.size], g)]
    assert not bad, f"{bad} differ from the golden on {core} {opt}"
    meta = raw[want.size:]
    got_meta = [(meta[5 * k], int.from_bytes(meta[5 * k + 1:5 * k + 5], "little", signed=True))
                for k in range(len(cases))]
    assert got_meta == metas, dict(zip(names, zip(got_meta, metas, strict=False), strict=False))


BAD_SHIFTS_C = """#include <stdint.h>
#include <stddef.h>
#include "mcu_runtime/include/mcu_nn.h"

int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);

/* Per N in 1..12, per channel i and value v: the status of a per-channel layer whose shift[i]
 * is v (others -5), one byte each; per-tensor too (N = 1 column). */
int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)
{
    static const int32_t values[4] = {-32, 31, -31, 30};
    static int32_t mult[12], shift[12], sums[12];
    static int8_t x[5], w[60], out[12];
    int8_t *res = outputs[0];
    (void)inputs;
    for (int32_t n = 1; n <= 12; ++n) {
        for (int32_t i = 0; i < n; ++i) {
            for (int v = 0; v < 4; ++v) {
                for (int32_t j = 0; j < 12; ++j) {
                    mult[j] = 1 << 30;
                    shift[j] = -5;
                }
                shift[i] = values[v];
                const mcu_fc_params_t p = {.batches = 1, .in_features = 5, .out_features = n,
                    .q = {.input_offset = 0, .output_offset = 0, .act_min = -128, .act_max = 127,
                          .rounding = 0},
                    .per_channel = n > 1 || i > 0 ? 1 : (v & 1), .multiplier = mult, .shift = shift};
                const mcu_context_t ctx = {NULL, 0};
                *res++ = (int8_t)mcu_fully_connected_s8(&ctx, &p, x, w, sums, out);
            }
        }
    }
    return 0;
}
"""


@pytest.mark.qemu
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_fc_shift_range_checked_on_mve(opt: str, tmp_path: Path) -> None:
    """MCU_ERR_ARG for a shift outside [-31, 30] on any channel (the MVE dispatcher checks the
    shifts four at a time), MCU_OK for the limits themselves."""
    count = 4 * sum(range(1, 13))
    raw = run_bundle_on_qemu("cortex-m55", ["mcu_fully_connected_s8"], BAD_SHIFTS_C, [1], [count],
                             b"\0", tmp_path, opt)
    want = [1, 1, 0, 0] * (count // 4)
    assert list(raw[:count]) == want
