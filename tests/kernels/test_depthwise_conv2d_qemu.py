"""mcu_depthwise_conv2d_s8 in QEMU on every core, at -O2 and at -O0: every path and every C
fallback bit-exact with the golden model.

One firmware per (core, optimization level) runs a table of cases chosen to reach each path of
the dispatcher and each branch inside them: the DSP path's 3x3 row pairs (all rows, padding on top
or bottom, odd heights, windows shifted inward at the borders; its inline assembly at -O2 and its
C fallback at -O0), its single-row sweep (other filters, strides, dilations; the odd last row and
calls of one output row, as row bands make them), its C_out % 4 tail,
its 1-D lines (Kx1, 1xK: borders, strides, dilation, windows taller than the input);
the MVE path's whole-window runs (3x3, one-row/one-column filters two positions at a time,
others), border windows, partial groups and clamping; the generic loops with their DSP/MVE
channel blocks (out-of-range requantization), with depth multipliers > 1 and fewer than four
channels; plus random geometries. Per case the firmware
also reports the path the target takes (must equal the Python twin's path() for the core's ISA)
and checks that one byte less scratch than mcu_depthwise_conv2d_s8_get_buffer_size() gives
MCU_ERR_SCRATCH with the output untouched. Then the lean call (mcu_depthwise_conv2d_s8_lean, a
layer by rows in a tight plan) with exactly its twin's lean_buffer_size(): the DSP path's single
rows and lines from the group and its taps' weights only (3x3 and 1-D filters), else the generic
loops; its path must be the twin's lean_path(), one byte less refused. The cases again as a layer
mcugen calls by bands (band_constants: the per-channel check made at build time, and the DSP lean
variant's and the MVE path's groups prepared at build time, dsp_groups and mve_groups, in both
roundings: the lean call then needs no scratch, and on MVE runs the MVE path). The stack
the cases used is reported by the harness.
Every case runs again in onnxruntime numerics (exact float32 scales, rounding half to even: on the
fast paths where proven tie-free, else the generic loops).
"""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.kernels import mcu_depthwise_conv2d_s8 as twin
from emitter.kernels.mcu_depthwise_conv2d_s8 import DepthwiseConvParams, mcu_depthwise_conv2d_s8
from emitter.quant import ROUND_NEAREST_EVEN, ROUND_NEAREST_NO_TIE, acc_bound, exact_multipliers, fast_round_ok
from emitter.render.runtime_files import runtime_files
from emitter.resources import data_dir
from emitter.target import build_firmware, missing_tools, run_qemu
from tests.kernels.test_depthwise_conv2d import Case, build

KERNEL = "mcu_depthwise_conv2d_s8"
CORES = ("cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55", "rv32imac")
PATH_NAMES = ("generic", "dsp", "mve")  # MCU_PATH_GENERIC, MCU_PATH_DSP, MCU_PATH_MVE
MCU_ERR_SCRATCH = 2
pytestmark = pytest.mark.qemu

P1 = (1, 1, 1, 1)
CASES = {
    "3x3_pairs": Case(h=6, w=7, c_in=8, pads=P1),
    "3x3_odd_rows_c12_no_bias": Case(h=5, w=5, c_in=12, pads=P1, bias=False),
    "3x3_pad_bottom_only": Case(h=7, w=6, c_in=4, pads=(0, 2, 1, 1)),
    "3x3_in_h2": Case(h=2, w=5, c_in=8, pads=P1),
    "3x3_pad2_left": Case(h=6, w=6, c_in=4, pads=(1, 1, 2, 2)),
    "3x3_stride2": Case(h=9, w=9, c_in=4, stride=(2, 2), pads=P1),
    "3x3_stride_1x2": Case(h=7, w=9, c_in=8, stride=(1, 2), pads=P1),
    "3x3_dilation2": Case(h=8, w=8, c_in=4, dilation=(2, 2), pads=(2, 2, 2, 2)),
    "3x3_dilation5_10_borders": Case(h=11, w=11, c_in=8, dilation=(5, 5), pads=(5, 5, 5, 5)),
    "3x3_narrow_act": Case(h=5, w=6, c_in=8, pads=P1, act=(-20, 40), zp_out=-3),
    "3x3_c24_stride2_act": Case(h=7, w=8, c_in=24, stride=(2, 2), pads=P1, act=(-90, 70)),
    "3x3_ring_pad_bottom_c16": Case(h=7, w=6, c_in=16, pads=(0, 2, 1, 1)),
    "3x3_ring_pad2_stride3_c8": Case(h=8, w=9, c_in=8, stride=(3, 3), pads=(2, 2, 2, 2)),
    "3x3_ring_widest_c8": Case(h=3, w=30, c_in=8, pads=P1, act=(-128, 0)),
    "3x3_past_ring_c8": Case(h=4, w=33, c_in=8, pads=P1),
    "3x3_ring8_c40_zp_act": Case(h=4, w=5, c_in=40, pads=P1, act=(-100, 100), zp_in=-128, zp_out=127),
    "3x3_ring8_c20_tail": Case(h=3, w=4, c_in=20, pads=(0, 1, 0, 1), stride=(2, 2)),
    "3x3_ring16_c140_tails": Case(h=3, w=4, c_in=140, pads=P1, act=(-100, 100), zp_in=-128, zp_out=127),
    "3x3_ring16_c128_stride2": Case(h=6, w=6, c_in=128, pads=(0, 1, 0, 1), stride=(2, 2)),
    "3x3_ring8_c128_cols17": Case(h=2, w=15, c_in=128, pads=P1),
    "3x3_batch2": Case(n=2, h=5, w=4, c_in=4, pads=(0, 0, 1, 0)),
    "3x3_c3": Case(h=5, w=5, c_in=3, pads=P1),
    # MVE rows_3x3 (as bands, and on outputs past the ring): edges with dilation 2, a left edge
    # only and a partial group after it
    "3x3_edges_dilation2_c16": Case(h=6, w=7, c_in=16, dilation=(2, 2), pads=(2, 2, 1, 1), zp_in=-128),
    "3x3_left_edge_only_c12": Case(h=4, w=5, c_in=12, pads=(1, 1, 1, 0), act=(-70, 90)),
    # one output row (a row band's call): row_sweep, no pair weights prepared; the window sticks
    # out at the top, at the bottom, at both, or lies inside; an odd last row after pairs
    "3x3_one_row_top_c8": Case(h=2, w=5, c_in=8, pads=(1, 0, 1, 1)),
    "3x3_one_row_bottom_c12": Case(h=2, w=6, c_in=12, pads=(0, 1, 1, 1), zp_in=-128),
    "3x3_one_row_inside_c6": Case(h=3, w=4, c_in=6, pads=(0, 0, 1, 1), bias=False),
    "3x3_one_row_in_h1_c20": Case(h=1, w=7, c_in=20, pads=P1, act=(-60, 90)),
    "3x3_one_row_w9_c4_act": Case(h=3, w=9, c_in=4, act=(-50, 60), zp_out=7),
    "3x3_odd_last_row_bottom_c10": Case(h=6, w=5, c_in=10, pads=(0, 1, 1, 1)),
    "3x3_lone_first_row_pad2_c16": Case(h=3, w=3, c_in=16, pads=(2, 0, 1, 1)),
    "5x5_c6_tail": Case(h=7, w=6, c_in=6, kh=5, kw=5, pads=(2, 2, 2, 2)),
    "1x1_c16": Case(h=4, w=4, c_in=16, kh=1, kw=1),
    "10x4_taps40_generic": Case(h=12, w=9, c_in=4, kh=10, kw=4, pads=(4, 5, 1, 2)),
    "wide_shifts_c8": Case(h=5, w=5, c_in=8, pads=P1, wide_shifts=True),
    "dm2": Case(h=5, w=5, c_in=3, depth_multiplier=2, pads=P1),
    "dm8_c1": Case(h=4, w=4, c_in=1, depth_multiplier=8, pads=P1),
    "zp_extremes": Case(h=5, w=5, c_in=8, pads=P1, zp_in=-128, zp_out=127),
    # the DSP path's lines (_dsp1d.c): Kx1 / 1xK, odd and even K, borders, no interior
    "k7x1_lines_c12": Case(h=13, w=1, c_in=12, kh=7, kw=1, pads=(3, 3, 0, 0)),
    "k4x1_even_c9_tail": Case(h=10, w=1, c_in=9, kh=4, kw=1, pads=(2, 1, 0, 0)),
    "k15x1_stride2_w3": Case(h=20, w=3, c_in=8, kh=15, kw=1, stride=(2, 2), pads=(7, 7, 0, 0)),
    "k5x1_dilation2": Case(h=11, w=2, c_in=4, kh=5, kw=1, dilation=(2, 1), pads=(4, 4, 0, 0)),
    "k9x1_taller_than_input": Case(h=3, w=1, c_in=8, kh=9, kw=1, pads=(6, 6, 0, 0), zp_out=5),
    "k6x1_narrow_act": Case(h=9, w=2, c_in=4, kh=6, kw=1, pads=(3, 2, 0, 0), act=(-30, 50)),
    "k1x9_lines_c16": Case(h=2, w=12, c_in=16, kh=1, kw=9, pads=(0, 0, 4, 4)),
    "k1x8_stride_2x2": Case(h=5, w=15, c_in=5, kh=1, kw=8, stride=(2, 2), pads=(0, 0, 4, 3)),
    "k3x1_pad_left_rows": Case(h=6, w=3, c_in=4, kh=3, kw=1, pads=(1, 1, 1, 0)),
}


def random_cases(count: int, seed: int) -> dict[str, Case]:
    rng = np.random.default_rng(seed)
    out = {}
    for k in range(count):
        kh, kw = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        out[f"random{k}"] = Case(
            n=1, h=int(rng.integers(1, 9)), w=int(rng.integers(1, 9)),
            c_in=int(rng.choice([1, 3, 4, 5, 8, 9, 16])), depth_multiplier=int(rng.choice([1, 1, 1, 2])),
            kh=kh, kw=kw, stride=(int(rng.integers(1, 3)), int(rng.integers(1, 3))),
            dilation=(int(rng.integers(1, 3)), int(rng.integers(1, 3))),
            pads=tuple(int(v) for v in rng.integers(0, 3, 4)),  # type: ignore[arg-type]
            zp_in=int(rng.integers(-128, 128)), zp_out=int(rng.integers(-128, 128)),
            bias=bool(rng.integers(0, 2)))
    return out


ALL_CASES = CASES | random_cases(16, 2024)


def c_array(ctype: str, name: str, values: Any) -> str:
    vals = np.asarray(values).ravel()
    body = ", ".join(str(int(v)) for v in vals) if vals.size else "0"
    return f"static const {ctype} {name}[{max(vals.size, 1)}] = {{{body}}};\n"


def c_params(name: str, p: DepthwiseConvParams) -> str:
    def dims(d: Any) -> str:
        return f"{{.n = {d.n}, .h = {d.h}, .w = {d.w}, .c = {d.c}}}"
    q = p.q
    return (f"static const mcu_depthwise_conv_params_t {name} = {{\n"
            f"    .input = {dims(p.input)}, .filter = {dims(p.filter)}, .output = {dims(p.output)},\n"
            f"    .depth_multiplier = {p.depth_multiplier}, .stride_h = {p.stride_h}, "
            f".stride_w = {p.stride_w}, .dilation_h = {p.dilation_h}, .dilation_w = {p.dilation_w},\n"
            f"    .pad_top = {p.pad_top}, .pad_left = {p.pad_left},\n"
            f"    .q = {{.input_offset = {q.input_offset}, .output_offset = {q.output_offset}, "
            f".act_min = {q.act_min}, .act_max = {q.act_max}, .rounding = {q.rounding}}},\n"
            f"    .multiplier = {name}_mult, .shift = {name}_shift, .channels_fast = {p.channels_fast},\n"
            f"    .dsp_groups = {name + '_groups' if p.dsp_groups is not None else 'NULL'},\n"
            f"    .mve_groups = {name + '_mve_groups' if p.mve_groups is not None else 'NULL'}}};\n")


def net_c(built: list[tuple[str, DepthwiseConvParams, list[Any]]]) -> tuple[str, int]:
    """The test net: per case [status, path, status with one byte too little scratch] then the
    output, then the same of the lean call (mcu_depthwise_conv2d_s8_lean with exactly its
    lean_buffer_size bytes). Returns (C text, output bytes)."""
    decls, calls, off = [], [], 0
    for k, (_, p, (x, w, b)) in enumerate(built):
        n = f"c{k}"
        decls += [c_array("int8_t", f"{n}_in", x), c_array("int8_t", f"{n}_w", w),
                  c_array("int32_t", f"{n}_mult", p.multiplier), c_array("int32_t", f"{n}_shift", p.shift)]
        if b is not None:
            decls.append(c_array("int32_t", f"{n}_b", b))
        if p.dsp_groups is not None:
            decls.append(c_array("int32_t", f"{n}_groups", p.dsp_groups))
        if p.mve_groups is not None:
            decls.append(c_array("int32_t", f"{n}_mve_groups", p.mve_groups))
        decls.append(c_params(n, p))
        bias = f"{n}_b" if b is not None else "NULL"
        calls.append(f"    run_case(&{n}, {n}_in, {n}_w, {bias}, out + {off});\n")
        off += 2 * (3 + p.output.n * p.output.h * p.output.w * p.output.c)
    text = f"""#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mcu_nn.h"

int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);

/* scratch, as the arena would give it: aligned, with room for every path */
static int32_t scratch[512];

{"".join(decls)}
static void run_case(const mcu_depthwise_conv_params_t *p, const int8_t *x, const int8_t *w,
                     const int32_t *b, int8_t *out)
{{
    const int32_t need = mcu_depthwise_conv2d_s8_get_buffer_size(p, b, MCU_ISA_NATIVE);
    const int32_t bytes = p->output.n * p->output.h * p->output.w * p->output.c;
    out[1] = (int8_t)mcu_depthwise_conv2d_s8_path(p, b, MCU_ISA_NATIVE);
    out[2] = 0;
    if (need > 0) {{ /* one byte short: refused, the output untouched */
        const mcu_context_t small = {{scratch, need - 1}};
        memset(out + 3, 0x5A, (size_t)bytes);
        out[2] = (int8_t)mcu_depthwise_conv2d_s8(&small, p, x, w, b, out + 3);
        for (int32_t i = 0; i < bytes; ++i) {{
            if (out[3 + i] != 0x5A) {{
                out[2] = -1;
            }}
        }}
    }}
    const mcu_context_t ctx = {{scratch, (int32_t)sizeof scratch}};
    out[0] = (int8_t)mcu_depthwise_conv2d_s8(need > 0 ? &ctx : NULL, p, x, w, b, out + 3);
    /* the lean call: exactly its scratch; one byte short refused */
    int8_t *const lean = out + 3 + bytes;
    const int32_t lean_need = mcu_depthwise_conv2d_s8_lean_buffer_size(p, b, MCU_ISA_NATIVE);
    lean[1] = (int8_t)mcu_depthwise_conv2d_s8_lean_path(p, b, MCU_ISA_NATIVE);
    lean[2] = 0;
    if (lean_need > 0) {{
        const mcu_context_t small = {{scratch, lean_need - 1}};
        lean[2] = (int8_t)mcu_depthwise_conv2d_s8_lean(&small, p, x, w, b, lean + 3);
    }}
    const mcu_context_t exact = {{scratch, lean_need}};
    lean[0] = (int8_t)mcu_depthwise_conv2d_s8_lean(lean_need > 0 ? &exact : NULL, p, x, w, b, lean + 3);
}}

int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)
{{
    int8_t *const out = outputs[0];
    (void)inputs;
{"".join(calls)}    return 0;
}}
"""
    return text, off


def glue_h(out_bytes: int) -> str:
    return ("#include <stdint.h>\n"
            "int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);\n"
            "#define GLUE_NUM_INPUTS 1\n#define GLUE_NUM_OUTPUTS 1\n"
            f"#define GLUE_INPUT_BYTES 1\n#define GLUE_OUTPUT_BYTES {out_bytes}\n"
            "static const unsigned long glue_input_sizes[1] = {1};\n"
            f"static const unsigned long glue_output_sizes[1] = {{{out_bytes}}};\n"
            "static int glue_run(const int8_t *const *inputs, int8_t *const *outputs)\n"
            "{\n    return net_run_multi(inputs, outputs);\n}\n")


def ort_variant(p: DepthwiseConvParams, w: np.ndarray, b: np.ndarray | None) -> DepthwiseConvParams:
    """The case in onnxruntime numerics: scales rounded to float32 and held exactly, rounding
    MCU_ROUND_NEAREST_NO_TIE (fast paths, mcu_requant2_lift) where fast_round_ok() proves it, else
    MCU_ROUND_NEAREST_EVEN (generic loops)."""
    real = np.asarray(p.multiplier, np.float64) * np.exp2(np.asarray(p.shift, np.float64) - 31)
    mult, shift = exact_multipliers(real.astype(np.float32))
    c_out = mult.size
    ok = fast_round_ok(mult, shift, acc_bound(w.reshape(-1, c_out).T, b, c_out))
    return replace(p, q=replace(p.q, rounding=ROUND_NEAREST_NO_TIE if ok else ROUND_NEAREST_EVEN),
                   multiplier=mult, shift=shift)


Built = list[tuple[str, DepthwiseConvParams, list[Any]]]


def edge_variants(name: str, p: DepthwiseConvParams, inputs: list[Any]) -> Built:
    """mcu_requant2_ok()'s edges on the last channel of a case (the MVE dispatcher checks four
    channels at a time): a bias of 2^29 - 1 keeps the fast path; -2^29 and a shift of -21 or 0
    leave it (negative multipliers: test_depthwise_conv2d_dispatch.py)."""
    k = p.output.c - 1
    x, w, b = inputs
    out = []
    for label, bias_k, shift_k in (("bias 2^29-1", (1 << 29) - 1, None), ("bias -2^29", -(1 << 29), None),
                                   ("shift -21", None, -21), ("shift 0", None, 0)):
        b2 = b.copy()
        shift = p.shift.copy()
        if bias_k is not None:
            b2[k] = bias_k
        if shift_k is not None:
            shift[k] = shift_k
        out.append((f"{name} ({label})", replace(p, shift=shift), [x, w, b2]))
    return out


def shift0_variant(name: str, p: DepthwiseConvParams, inputs: list[Any], seed: int) -> Built:
    """Every channel's effective scale in [0.5, 1) (shift 0, as 4-bit weights' larger scales give),
    then in [1, 4) (shifts 1 and 2), with weights in {-1, 0, 1}, inputs within +-31 of the zero
    point and a small bias so that outputs span the int8 range. In onnxruntime numerics the fast
    paths take shift 0 with a lift of 2^29 alone (mcu_requant2_ok_q) and the generic loops take
    shifts 1 and 2 (on MVE four lanes at a time: mcu_requant4_no_tie); TFLite rounding keeps both
    on the generic loops."""
    rng = np.random.default_rng(seed)
    x, w, b = inputs
    c = p.output.c
    out = []
    for label, lo, hi in (("all shifts 0", 0.5, 1.0), ("shifts 1 and 2", 1.0, 4.0)):
        mult, shift = exact_multipliers(rng.uniform(lo, hi, c).astype(np.float32))
        assert ((shift == 0) if lo < 1 else (shift >= 1) & (shift <= 2)).all()
        lo_x, hi_x = max(-128, -31 - p.q.input_offset), min(127, 31 - p.q.input_offset)
        x2 = np.clip(x.astype(np.int32), lo_x, hi_x).astype(x.dtype)
        b2 = None if b is None else rng.integers(-100, 101, c).astype(np.int32)
        out.append((f"{name} ({label})", replace(p, multiplier=mult, shift=shift),
                    [x2, np.sign(w).astype(w.dtype), b2]))
    return out


@pytest.fixture(scope="module")
def built() -> list[tuple[str, DepthwiseConvParams, list[Any]]]:
    cases = [(name, *build(case, np.random.default_rng(sum(map(ord, name)))))
             for name, case in ALL_CASES.items()]
    cases += [v for name, p, inputs in cases if name in ("3x3_pairs", "3x3_ring8_c20_tail", "3x3_ring16_c140_tails")
              for v in edge_variants(name, p, inputs)]
    cases += [v for k, (name, p, inputs) in enumerate(cases)
              if name in ("3x3_pairs", "3x3_ring16_c140_tails", "3x3_stride2", "k7x1_lines_c12", "5x5_c6_tail",
                          "1x1_c16")
              for v in shift0_variant(name, p, inputs, k)]
    ort = [(f"{name} (onnxruntime numerics)", ort_variant(p, inputs[1], inputs[2]), inputs)
           for name, p, inputs in cases]
    assert sum(p.q.rounding == ROUND_NEAREST_NO_TIE for _, p, _ in ort) >= len(ort) // 2
    # again as a layer mcugen calls band by band: its per-channel check made at build time (the
    # TFLite numerics only: the firmware of every case twice would not fit a core's flash at -O0)
    banded = [(f"{name} (band constants)", twin.band_constants(p, inputs[1], inputs[2]), inputs)
              for name, p, inputs in cases]
    assert 0 < sum(p.channels_fast for _, p, _ in banded) < len(banded)
    # the DSP lean variant's build-time groups (dsp_groups) in onnxruntime's rounding too: the cases
    # whose lean call takes the DSP path there
    ort_banded = [(f"{name} (band constants)", twin.band_constants(p, inputs[1], inputs[2]), inputs)
                  for name, p, inputs in ort if p.q.rounding == ROUND_NEAREST_NO_TIE]
    ort_banded = [c for c in ort_banded if c[1].dsp_groups is not None or c[1].mve_groups is not None]
    # (the smallest ten: every case's firmware must fit the cores' flash at -O0)
    ort_banded = sorted(ort_banded, key=lambda c: sum(np.asarray(a).size for a in c[2] if a is not None)
                        + c[1].output.n * c[1].output.h * c[1].output.w * c[1].output.c)[:10]
    for field in ("dsp_groups", "mve_groups"):
        assert sum(getattr(p, field) is not None for _, p, _ in ort_banded) >= 4, field
        assert sum(getattr(p, field) is not None for _, p, _ in banded) >= 6, field
    return cases + ort + banded + ort_banded


def test_cases_reach_every_path(built) -> None:
    """The table is worth running: on each ISA every path is taken by some case (the lean call's
    too), and the shift-0 cases take the fast path in onnxruntime numerics only."""
    for isa, want in (("dsp", {"dsp", "generic"}), ("mve", {"mve", "generic"})):
        assert {twin.path(p, b, isa) for _, p, (_, _, b) in built} == want
        # the lean call: the DSP path's variant where its weights fit DW_DSP_LEAN_MAX_BYTES (3x3 yes, 5x5 no)
        # or its groups are prepared at build time; the MVE path from build-time groups only
        lean = {twin.lean_path(p, b, isa) for _, p, (_, _, b) in built}
        assert lean == {isa, "generic"}
        if isa == "mve":
            assert all((twin.lean_path(p, b, isa) == "mve") == (p.mve_groups is not None) for _, p, (_, _, b) in built)
        for label, count in (("(all shifts 0)", 12), ("(shifts 1 and 2)", 12)):
            cases = [(p, b) for name, p, (_, _, b) in built if label in name and "(band constants)" not in name]
            assert len(cases) == count
            for p, b in cases:
                proven = p.q.rounding == ROUND_NEAREST_NO_TIE
                assert proven == (p.q.rounding != 0)  # every onnxruntime variant is proven tie-free
                assert (twin.path(p, b, isa) == isa) == (proven and label == "(all shifts 0)"), (isa, p)


@pytest.mark.parametrize("opt", ["-O2", "-O0"])
@pytest.mark.parametrize("core", CORES)
def test_every_path_bit_exact_in_qemu(core: str, opt: str, built, tmp_path: Path) -> None:
    missing = missing_tools()
    if missing:
        pytest.skip("missing tools: " + "; ".join(missing))
    board = load_board(core)
    isa = "mve" if board.has_mve else ("dsp" if board.has_dsp else "c")
    # a bundle keeps the groups of its own path only (render/bundle.py)
    built = [(name, replace(p, **{f"{i}_groups": None for i in ("dsp", "mve") if i != isa}), inputs)
             for name, p, inputs in built]
    bundle, glue, run = tmp_path / "bundle", tmp_path / "glue", tmp_path / "run"
    rt = data_dir("mcu_runtime")
    for rel in runtime_files([KERNEL]):
        (bundle / "mcu_runtime" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(rt / rel, bundle / "mcu_runtime" / rel)
    text, out_bytes = net_c(built)
    (bundle / "net.c").write_text(text)
    glue.mkdir()
    (glue / "model_glue.h").write_text(glue_h(out_bytes))
    run.mkdir()
    (run / "input.bin").write_bytes(b"\0")
    firmware = build_firmware(bundle, glue, board, tmp_path / "build", opt, werror=True,
                              cflags=("-Wvla",))
    result = run_qemu(firmware.elf, board, run, count_instructions=False)
    got = np.frombuffer((run / "output.bin").read_bytes(), dtype=np.int8)
    off = 0
    for name, p, inputs in built:
        o = p.output
        size = o.n * o.h * o.w * o.c
        status, path, short = (int(v) for v in got[off:off + 3])
        want_path = twin.path(p, inputs[2], isa)
        where = f"{name} on {core} {opt}"
        assert status == 0, f"{where}: status {status}"
        assert PATH_NAMES[path] == want_path, f"{where}: path {PATH_NAMES[path]}, twin says {want_path}"
        assert short == (MCU_ERR_SCRATCH if twin.buffer_size(p, inputs[2], isa) else 0), \
            f"{where}: one byte short of scratch gave {short}"
        want = mcu_depthwise_conv2d_s8(p, *inputs)
        np.testing.assert_array_equal(got[off + 3:off + 3 + size].reshape(o.n, o.h, o.w, o.c), want,
                                      err_msg=where)
        off += 3 + size
        status, path, short = (int(v) for v in got[off:off + 3])  # the lean call
        want_path = twin.lean_path(p, inputs[2], isa)
        assert status == 0, f"{where}: lean status {status}"
        assert PATH_NAMES[path] == want_path, f"{where}: lean path {PATH_NAMES[path]}, twin says {want_path}"
        assert short == (MCU_ERR_SCRATCH if twin.lean_buffer_size(p, inputs[2], isa) else 0), \
            f"{where}: the lean call one byte short of scratch gave {short}"
        np.testing.assert_array_equal(got[off + 3:off + 3 + size].reshape(o.n, o.h, o.w, o.c), want,
                                      err_msg=f"{where}, lean")
        off += 3 + size
    assert off == got.size
    print(f"{core} {opt}: stack {result.stack_bytes} bytes")
