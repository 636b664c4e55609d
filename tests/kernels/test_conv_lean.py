"""mcu_conv2d_s8_lean on the cores in QEMU, optimized (-O2: the inline assembly) and unoptimized
(-O0: its C fallbacks), bit-exact with the numpy golden.

The lean call (a layer run by rows in a tight memory plan) takes a lean variant of the fast path
where its scratch is at most MCU_CONV_LEAN_EXTRA bytes beyond the generic path's: on DSP at most
two positions a pass with channel pairs (dot_p2x2; an odd last channel alone), on MVE blocks of
MCU_CONV_MVE_LEAN_BLOCK channels with the patch in the sums' bytes; else the generic path. The
cases reach the pairs with border windows read row by row (micro_speech's first layer is one),
tap by tap and gathered, K % 4 tails, odd channel counts, one position (P = 1), several MVE
channel blocks, a patch longer than the sums, and a filter whose variant is too large (generic).
Each case runs with exactly the twin's lean_buffer_size() bytes of scratch, canary bytes after
them (a path that writes past its scratch fails), reports the lean path the C took (it must be
the twin's lean_path() for the core), and runs once with no scratch (MCU_ERR_SCRATCH); then
mcu_conv2d_s8 itself, with its exact scratch and the canaries (the DSP path's one-row patch, the
MVE path's patch in the sums' bytes). Every case runs again in onnxruntime numerics (the DSP
pairs' mcu_requant2_lift constants), and again with the build-time constants mcugen gives every lean
call (band_constants: kernel_sums, requant_bases, channels_fast), with which the MVE variant takes
every channel a pass in groups of MCU_CONV_MVE_LEAN_GROUP and needs the least scratch: where every
window is one run of the input and its ctx has no room to copy them, the groups read the windows where
they lie (MCU_CONV_MVE_LEAN_DIRECT: only the sums in scratch). Each case runs with twice its least
scratch too (the direct groups of MCU_CONV_MVE_LEAN_WIDE where they are the least).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import isa_of
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels.mcu_conv2d_s8 import ConvParams, mcu_conv2d_s8
from emitter.quant import ROUND_NEAREST_NO_TIE
from tests.harness.ckernels import run_bundle_on_qemu
from tests.kernels.test_conv_fc_cores import Conv, arr, conv_case, dims, ort_variant, quant

CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")
PATHS = {"generic": 0, "dsp": 1, "mve": 2}
CANARY = 64  # bytes after the scratch that must stay as they were

LEAN = {
    # micro_speech's first layer in small: C_in 1, rows of 8 bytes, stride 2, borders on all sides
    "rows_c1_s2": Conv(11, 12, 1, 8, (5, 8), (2, 2, 3, 3), (2, 2)),
    "rows_c2_odd": Conv(6, 7, 2, 5, (3, 4), (1, 1, 2, 1)),            # row by row, a lone channel
    "taps_c4": Conv(6, 6, 4, 7, (3, 3), (1, 1, 1, 1)),                # DSP tap by tap, odd C_out
    "gather_k27": Conv(5, 5, 3, 6, (3, 3), (1, 1, 1, 1)),             # gathered, K % 4 == 3
    "one_run_1x1": Conv(3, 5, 6, 9, (1, 1)),                          # windows read straight, K % 4
    "one_position": Conv(3, 3, 5, 3, (3, 3)),                         # P = 1
    "blocks_c20": Conv(5, 4, 12, 20, (3, 3), (1, 1, 1, 1), (1, 2)),   # MVE: three blocks, K 108 > sums
    "s2_d2_batch2": Conv(7, 7, 2, 4, (3, 3), (2, 2, 2, 2), (2, 2), (2, 2), n=2),
    "too_large_k288": Conv(4, 4, 32, 6, (3, 3), (1, 1, 1, 1)),        # variants too large: generic
    "patch_over_sums": Conv(5, 5, 16, 3, (3, 3), (1, 1, 1, 1)),       # MVE: a K-byte patch beyond the sums
    # MVE direct groups (windows read where they lie): groups of 8, 8 and 3 (an odd last pair) two
    # positions a pass (the generic path's 76 bytes hold no more); K 48 in three chunks
    "direct_1x1_c19": Conv(4, 5, 48, 19, (1, 1)),
    # three positions a pass across rows and batches, a last of two (K 5, one predicated chunk), its
    # wide groups' sums in twice the least
    "direct_1x1_s2_n2": Conv(7, 7, 5, 35, (1, 1), stride=(2, 2), n=2),
    # gathered windows, K bytes each: three a pass (K 12, 33 channels), two (K 40, as KWS's first layer)
    "direct_gathered_k12": Conv(7, 6, 3, 33, (2, 2), (1, 1, 1, 0), (2, 1)),
    "direct_gathered_two_k40": Conv(12, 6, 1, 36, (10, 4), (4, 5, 1, 2), (2, 2)),
}


def net_c(cases: list[tuple[ConvParams, list[Any], int]]) -> str:
    """Every case's constants and net_run_multi running them in turn: output 0 every case's lean
    output, then every case's mcu_conv2d_s8 output, then every case's lean output with the scratch of
    its wide variant (lean_wide_buffer_size), then with a byte less (the MVE groups of 8), then with
    twice its least; output 1
    per case its lean path (1 byte) and a status byte (0: fine; else what failed)."""
    decls, calls, off = [], [], 0
    total = sum(p.output.n * p.output.h * p.output.w * p.output.c for p, _, _ in cases)
    for k, (p, (x, w, b), need) in enumerate(cases):
        decls += [arr("int8_t", f"x{k}", x), arr("int8_t", f"w{k}", w), arr("int32_t", f"b{k}", b),
                  arr("int32_t", f"m{k}", p.multiplier), arr("int32_t", f"s{k}", p.shift)]
        sums = bases = "NULL"
        if p.kernel_sums is not None:
            decls.append(arr("int32_t", f"ks{k}", p.kernel_sums))
            sums = f"ks{k}"
        if p.requant_bases is not None:
            decls.append(arr("int32_t", f"rb{k}", p.requant_bases))
            bases = f"rb{k}"
        decls.append(f"static const mcu_conv_params_t p{k} = {{.input = {dims(p.input)}, "
                     f".filter = {dims(p.filter)}, .output = {dims(p.output)}, .stride_h = {p.stride_h}, "
                     f".stride_w = {p.stride_w}, .dilation_h = {p.dilation_h}, .dilation_w = {p.dilation_w}, "
                     f".pad_top = {p.pad_top}, .pad_left = {p.pad_left}, .q = {quant(p.q)}, "
                     f".multiplier = m{k}, .shift = s{k}, .kernel_sums = {sums}, .requant_bases = {bases}, "
                     f".channels_fast = {p.channels_fast}}};\n")
        wide = conv_twin.lean_wide_buffer_size(p, b, "any")
        calls.append(f"    run_case(&p{k}, x{k}, w{k}, b{k}, {need}, {wide}, outputs[0] + {off}, "
                     f"outputs[0] + {total + off}, outputs[0] + {2 * total + off}, "
                     f"outputs[0] + {3 * total + off}, outputs[0] + {4 * total + off}, outputs[1] + {2 * k});\n")
        off += p.output.n * p.output.h * p.output.w * p.output.c
    runner = f"""
static int32_t scratch[1024];

/* conv (lean: mcu_conv2d_s8_lean) with `need` bytes of scratch, CANARY bytes after them checked:
 * 0 fine, 1 a wrong status, 3 a byte past the scratch written */
static int8_t run(int lean, const mcu_conv_params_t *p, const int8_t *x, const int8_t *w,
                  const int32_t *b, int32_t need, int8_t *out)
{{
    int8_t *const bytes = (int8_t *)scratch;
    int8_t status = 0;
    for (int32_t i = need; i < need + {CANARY}; ++i) {{
        bytes[i] = (int8_t)0x5A;
    }}
    const mcu_context_t ctx = {{scratch, need}};
    if ((lean ? mcu_conv2d_s8_lean(&ctx, p, x, w, b, out) : mcu_conv2d_s8(&ctx, p, x, w, b, out)) != MCU_OK) {{
        status = 1;
    }}
    for (int32_t i = need; i < need + {CANARY}; ++i) {{
        if (bytes[i] != (int8_t)0x5A) {{
            status = 3;
        }}
    }}
    return status;
}}

/* the lean call with `need` bytes (the twin's lean_buffer_size), then mcu_conv2d_s8 with its own,
 * then the lean call with `wide` bytes, with a byte less, and with twice `need`; meta: the lean path,
 * then a status (run(); 2: the lean call accepted no scratch; + 4: that of mcu_conv2d_s8; + 8: that
 * of the wide lean call; + 12: that of the one a byte short of it; + 16: that of twice the least) */
static void run_case(const mcu_conv_params_t *p, const int8_t *x, const int8_t *w, const int32_t *b,
                     int32_t need, int32_t wide, int8_t *out_lean, int8_t *out, int8_t *out_wide,
                     int8_t *out_short, int8_t *out_twice, int8_t *meta)
{{
    meta[0] = (int8_t)mcu_conv2d_s8_lean_path(p, b, MCU_ISA_NATIVE);
    const mcu_context_t none = {{NULL, 0}};
    meta[1] = run(1, p, x, w, b, need, out_lean);
    if (need > 0 && mcu_conv2d_s8_lean(&none, p, x, w, b, out_lean) != MCU_ERR_SCRATCH) {{
        meta[1] = 2;
    }}
    const int8_t fast = run(0, p, x, w, b, mcu_conv2d_s8_get_buffer_size(p, b, MCU_ISA_NATIVE), out);
    if (fast != 0) {{
        meta[1] = (int8_t)(4 + fast);
    }}
    const int8_t wide_status = run(1, p, x, w, b, wide, out_wide);
    if (wide_status != 0) {{
        meta[1] = (int8_t)(8 + wide_status);
    }}
    const int8_t short_status = run(1, p, x, w, b, wide > need ? wide - 1 : need, out_short);
    if (short_status != 0) {{
        meta[1] = (int8_t)(12 + short_status);
    }}
    const int8_t twice_status = run(1, p, x, w, b, 2 * need, out_twice);
    if (twice_status != 0) {{
        meta[1] = (int8_t)(16 + twice_status);
    }}
}}

int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);

int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)
{{
    (void)inputs;
"""
    return ("#include <stdint.h>\n#include <stddef.h>\n#include \"mcu_runtime/include/mcu_nn.h\"\n"
            "#include \"mcu_runtime/kernels/mcu_conv2d_s8_internal.h\"\n\n"
            + "".join(decls) + runner + "".join(calls) + "    return 0;\n}\n")


@pytest.fixture(scope="module")
def cases() -> list[tuple[ConvParams, list[Any], int]]:
    rng = np.random.default_rng(23)
    out = [conv_case(s, rng) for s in LEAN.values()]
    out += [(ort_variant(p, inputs[1], inputs[2]), inputs) for p, inputs in out]
    assert sum(p.q.rounding == ROUND_NEAREST_NO_TIE for p, _ in out) >= 6  # the lifted constants covered
    out += [(conv_twin.band_constants(p, inputs[1], inputs[2]), inputs) for p, inputs in list(out)]
    return [(p, inputs, conv_twin.lean_buffer_size(p, inputs[2], "any")) for p, inputs in out]


def test_lean_paths_reached(cases) -> None:
    """The table reaches every lean variant and the generic fallback (the twin's answers)."""
    dsp = [conv_twin.lean_path(p, inputs[2], "dsp") for p, inputs, _ in cases]
    mve = [conv_twin.lean_path(p, inputs[2], "mve") for p, inputs, _ in cases]
    assert {"dsp", "generic"} <= set(dsp) and {"mve", "generic"} <= set(mve)
    assert {conv_twin.lean_path(p, inputs[2], "c") for p, inputs, _ in cases} == {"generic"}
    names = [*LEAN, *LEAN, *LEAN, *LEAN]
    assert dsp[names.index("too_large_k288")] == "generic" and dsp[names.index("rows_c1_s2")] == "dsp"
    # with the constants the MVE variant takes every channel a pass in groups and keeps no constants
    # in scratch: on MVE wherever the fast path is, given the room of its wide groups; its least
    # scratch never more than without them (the generic path's where that is less)
    plain, constant = cases[:2 * len(LEAN)], cases[2 * len(LEAN):]
    for (p, i, _), (q, _, _) in zip(plain, constant, strict=True):
        wide = conv_twin.lean_wide_buffer_size(q, i[2], "mve")
        if conv_twin.path(p, i[2], "mve") == "mve":
            assert conv_twin.lean_path_with(q, i[2], "mve", wide) == "mve"
            assert conv_twin.lean_path_with(q, i[2], "mve", wide - 1) in ("mve", "generic")
        assert conv_twin.lean_buffer_size(q, i[2], "mve") <= conv_twin.lean_buffer_size(p, i[2], "mve") <= wide + 256
    # direct: three (or two) rows of 8 channels' sums, after the gathered windows where there are some
    # (not one_run_1x1's 9 channels: the generic path's 36 bytes are fewer)
    for n, size in (("direct_1x1_c19", 64), ("direct_1x1_s2_n2", 96),
                    ("direct_gathered_k12", 3 * 12 + 96), ("direct_gathered_two_k40", 2 * 40 + 64)):
        q, i, _ = constant[list(LEAN).index(n)]
        assert conv_twin.lean_path(q, i[2], "mve") == "mve" and conv_twin.lean_buffer_size(q, i[2], "mve") == size, n
    for p, inputs, need in cases:  # one figure for every target: at least each target's fast variant
        assert need >= conv_twin.buffer_size(p, inputs[2], "c")


@pytest.mark.qemu
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
@pytest.mark.parametrize("core", CORES)
def test_lean_bit_exact_on_every_core(core: str, opt: str, cases, tmp_path: Path) -> None:
    isa = isa_of(load_board(core))
    golden = [np.asarray(mcu_conv2d_s8(p, *inputs), np.int8).ravel() for p, inputs, _ in cases]
    golden += golden + golden + golden + golden  # the lean call's, mcu_conv2d_s8's, the wide, a byte short, twice
    want = np.concatenate(golden)
    raw = run_bundle_on_qemu(core, ["mcu_conv2d_s8"], net_c(cases), [1], [want.size, 2 * len(cases)],
                             b"\0", tmp_path, opt)
    got = np.frombuffer(raw[:want.size], np.int8)
    names = [*LEAN, *(f"{n} (onnxruntime numerics)" for n in LEAN)]
    names += [f"{n} (constants)" for n in names]
    names += ([f"{n}: mcu_conv2d_s8" for n in names] + [f"{n}: wide" for n in names]
              + [f"{n}: short" for n in names] + [f"{n}: twice" for n in names])
    starts = np.cumsum([0] + [g.size for g in golden])
    bad = [names[k] for k, g in enumerate(golden) if not np.array_equal(got[starts[k]:starts[k] + g.size], g)]
    assert not bad, f"{bad} differ from the golden on {core} {opt}"
    meta = raw[want.size:]
    status = {names[k]: meta[2 * k + 1] for k in range(len(cases)) if meta[2 * k + 1] != 0}
    assert not status, (f"calls failed on {core} {opt} (1 status, 2 no scratch accepted, 3 overrun; "
                        f"+ 4: mcu_conv2d_s8's, + 8: the wide lean call's, + 12: a byte short, + 16: twice): {status}")
    paths = [meta[2 * k] for k in range(len(cases))]
    want_paths = [PATHS[conv_twin.lean_path(p, inputs[2], isa)] for p, inputs, _ in cases]
    assert paths == want_paths, dict(zip(names, zip(paths, want_paths, strict=True), strict=True))
