"""4-bit weights, convolutions (issue 24): mcu_conv2d_s4, mcu_depthwise_conv2d_s4 and
mcu_transpose_conv_s4 against their goldens (the int8 kernels' twins on the unpacked weights) on
the host over random shapes, their layouts, scratch formulas and refusals; and small int4 models
(tests/harness/int4_models.py: conv, depthwise, transposed, 1-D) bit-exact with the golden on the
host and in QEMU (portable backend) on cortex-m0plus, -m4, -m7 and -m55, where the DSP and MVE
paths run."""
from __future__ import annotations

import ctypes
import re
from typing import Any

import numpy as np
import pytest

from emitter.kernels import mcu_conv2d_s4 as conv4
from emitter.kernels import mcu_depthwise_conv2d_s4 as dw4
from emitter.kernels import mcu_transpose_conv_s4 as tc4
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_conv2d_s8 import ConvParams
from emitter.kernels.mcu_depthwise_conv2d_s8 import DepthwiseConvParams
from emitter.kernels.mcu_transpose_conv_s8 import TransposeConvParams
from tests.harness.ckernels import (
    MCU_ERR_ARG,
    MCU_ERR_SCRATCH,
    MCU_OK,
    call_raw,
    conv_out_size,
    realistic_multipliers,
    scratch_context,
)

ISA = {"c": 0, "dsp": 1, "mve": 2}


def _q(rng: np.random.Generator, relu: bool = False) -> QuantIO:
    zp_in, zp_out = int(rng.integers(-128, 128)), int(rng.integers(-20, 20))
    return QuantIO(-zp_in, zp_out, zp_out if relu else -128, 127, int(rng.integers(0, 2)))


def _mults(rng: np.random.Generator, c: int, taps: int, per_channel: bool) -> tuple[np.ndarray, np.ndarray]:
    m, s = realistic_multipliers(rng, c if per_channel else 1, taps)
    return (m, s) if per_channel else (np.repeat(m, c), np.repeat(s, c))


# -- layouts ----------------------------------------------------------------------------------
def test_depthwise_layout() -> None:
    """Per tap, groups of 8 channels: byte j = channel j | channel 4 + j << 4; the last C % 8
    channels: h = ceil(r / 2), byte j = channel j | channel h + j << 4."""
    w = np.arange(-8, 3, dtype=np.int8).reshape(1, 1, 1, 11)  # channels 0..10: -8..2
    b = [int(v) for v in dw4.pack_filter(w)]
    assert len(b) == 6
    assert b[0] == (-8 & 15) | ((-4 & 15) << 4) and b[3] == (-5 & 15) | ((-1 & 15) << 4)
    assert b[4] == (0 & 15) | ((2 & 15) << 4) and b[5] == (1 & 15)


@pytest.mark.parametrize("k", [1, 2, 3, 17, 31, 32, 33, 63, 64, 65, 100])
def test_conv_layout_round_trip(k: int) -> None:
    w = np.random.default_rng(k).integers(-8, 8, (5, k)).astype(np.int8)
    packed = conv4.pack_rows(w)
    assert packed.shape == (5, (k + 1) // 2) and packed.dtype == np.uint8
    np.testing.assert_array_equal(conv4.unpack_rows(packed, k), w)
    if k >= 32:  # byte j of a whole block: weight j low, weight 16 + j high
        assert int(packed[0, 0]) == (int(w[0, 0]) & 15) | ((int(w[0, 16]) & 15) << 4)


def test_pairs_layout_and_range() -> None:
    w = np.array([[-8, 7, 1]], np.int8)
    assert list(tc4.pack_pairs(w)[0]) == [0x78, 0x01]
    with pytest.raises(ValueError, match=r"\[-8, 7\]"):
        conv4.pack_rows(np.array([[8]], np.int8))


# -- mcu_conv2d_s4 ----------------------------------------------------------------------------
def conv_case(rng: np.random.Generator, *, n: int = 1, h: int, w: int, c_in: int, c_out: int, kh: int, kw: int,
              stride: tuple[int, int] = (1, 1), dil: tuple[int, int] = (1, 1),
              pad: tuple[int, int, int, int] = (0, 0, 0, 0),
              per_channel: bool = True) -> tuple[ConvParams, np.ndarray, np.ndarray, np.ndarray | None]:
    oh = conv_out_size(h, kh, stride[0], dil[0], pad[0], pad[2])
    ow = conv_out_size(w, kw, stride[1], dil[1], pad[1], pad[3])
    mult, shift = _mults(rng, c_out, kh * kw * c_in, per_channel)
    p = ConvParams(Dims(n, h, w, c_in), Dims(c_out, kh, kw, c_in), Dims(n, oh, ow, c_out), stride[0], stride[1],
                   dil[0], dil[1], pad[0], pad[1], _q(rng, bool(rng.integers(0, 2))), mult, shift)
    x = rng.integers(-128, 128, (n, h, w, c_in), dtype=np.int8)
    f = rng.integers(-8, 8, (c_out, kh, kw, c_in), dtype=np.int8)
    b = rng.integers(-(1 << 12), 1 << 12, c_out).astype(np.int32) if rng.integers(0, 4) else None
    return p, x, f, b


def run_conv(p: ConvParams, x: np.ndarray, f: np.ndarray, b: np.ndarray | None, fn: str = "mcu_conv2d_s4",
             scratch: int | None = None) -> tuple[int, np.ndarray]:
    size = conv4.buffer_size(p, b, "c") if scratch is None else scratch
    ctx, _keep = scratch_context(size)
    out = np.full((p.output.n, p.output.h, p.output.w, p.output.c), 0x5A, np.int8)
    sums = conv4.kernel_sums(f, b, p.q.input_offset)
    status = call_raw(fn, ctypes.byref(ctx), p, x, conv4.pack_filter(f), sums, out)
    return status, out


def random_conv(seed: int) -> tuple[ConvParams, np.ndarray, np.ndarray, np.ndarray | None]:
    rng = np.random.default_rng(seed)
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 6))
    if rng.integers(0, 4) == 0:
        kh = 1  # a 1-D (1xN) layer
    h = int(rng.integers(kh, 9)) if kh > 1 else 1
    w = int(rng.integers(kw + 2, 14))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    dil = (int(rng.integers(1, 3)) if kh > 1 and h >= 2 * kh else 1, int(rng.integers(1, 3)) if w >= 2 * kw + 1 else 1)
    pt, pl, pb, pr = (int(v) for v in rng.integers(0, 2 if kh > 1 else 3, 4))
    pad = (pt, pl, pb, pr) if kh > 1 else (0, pl, 0, pr)
    return conv_case(rng, n=int(rng.integers(1, 3)), h=h, w=w, c_in=int(rng.integers(1, 40)),
                     c_out=int(rng.integers(1, 20)), kh=kh, kw=kw, stride=stride, dil=dil, pad=pad,
                     per_channel=bool(rng.integers(0, 2)))


@pytest.mark.parametrize("seed", range(24))
def test_conv_equals_golden(seed: int) -> None:
    p, x, f, b = random_conv(seed)
    status, out = run_conv(p, x, f, b)
    assert status == MCU_OK
    np.testing.assert_array_equal(out, conv4.mcu_conv2d_s4(p, x, f, b))


@pytest.mark.parametrize("c_in,kw,pad", [(64, 1, 0), (33, 1, 0), (7, 5, 2), (100, 3, 1)])
def test_conv_one_run_windows_and_lean(c_in: int, kw: int, pad: int) -> None:
    """1x1 / 1xN windows read straight from the input (no scratch) and gathered ones; the lean call."""
    rng = np.random.default_rng(c_in)
    p, x, f, b = conv_case(rng, h=1, w=11, c_in=c_in, c_out=5, kh=1, kw=kw, pad=(0, pad, 0, pad))
    assert conv4.gathers(p) == (pad > 0)
    for fn in ("mcu_conv2d_s4", "mcu_conv2d_s4_lean"):
        status, out = run_conv(p, x, f, b, fn)
        assert status == MCU_OK
        np.testing.assert_array_equal(out, conv4.mcu_conv2d_s4(p, x, f, b))


def test_conv_extremes() -> None:
    """Every weight -8 or 7, inputs at the int8 ends, K = 65535 taps within reach of int32."""
    rng = np.random.default_rng(5)
    p, x, f, b = conv_case(rng, h=3, w=3, c_in=300, c_out=3, kh=3, kw=3, pad=(1, 1, 1, 1))
    f = np.where(rng.integers(0, 2, f.shape) == 1, 7, -8).astype(np.int8)
    x = np.where(rng.integers(0, 2, x.shape) == 1, 127, -128).astype(np.int8)
    status, out = run_conv(p, x, f, b)
    assert status == MCU_OK
    np.testing.assert_array_equal(out, conv4.mcu_conv2d_s4(p, x, f, b))


def test_conv_scratch_formula_and_refusals() -> None:
    for seed in range(12):
        p, x, f, b = random_conv(seed)
        for isa, code in ISA.items():
            assert call_raw("mcu_conv2d_s4_get_buffer_size", p, code) == conv4.buffer_size(p, b, isa)
            assert call_raw("mcu_conv2d_s4_path", p, code) == ("generic", "dsp", "mve").index(conv4.path(p, b, isa))
    p, x, f, b = conv_case(np.random.default_rng(1), h=5, w=5, c_in=3, c_out=4, kh=3, kw=3, pad=(1, 1, 1, 1))
    # the blocked generic path: 4 corrections, 4 channels of 27 unpacked weights, the 27-byte patch
    assert conv4.buffer_size(p, b, "c") == 4 * 4 + 4 * 27 + 27
    assert run_conv(p, x, f, b, scratch=4 * 4 + 4 * 27 + 26)[0] == MCU_ERR_SCRATCH
    lean = conv4.lean_buffer_size(p, b)
    assert lean == call_raw("mcu_conv2d_s4_lean_get_buffer_size", p) == 4 * 4 + 4 * 27 + 27
    assert run_conv(p, x, f, b, "mcu_conv2d_s4_lean", scratch=lean - 1)[0] == MCU_ERR_SCRATCH
    assert run_conv(p, x, f, b, "mcu_conv2d_s4_lean", scratch=lean)[0] == MCU_OK
    bad = ConvParams(p.input, p.filter, p.output, 0, 1, 1, 1, 1, 1, p.q, p.multiplier, p.shift)
    assert run_conv(bad, x, f, b)[0] == MCU_ERR_ARG


# -- mcu_depthwise_conv2d_s4 ------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(16))
def test_depthwise_equals_golden(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    c, mult = int(rng.integers(1, 20)), int(rng.choice([1, 1, 2, 3]))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    h, w = int(rng.integers(kh, 9)), int(rng.integers(kw, 9))
    sh, sw, dh, dw = (int(v) for v in rng.integers(1, 3, 4))
    pt, pl, pb, pr = (int(v) for v in rng.integers(0, 2, 4))
    oh, ow = conv_out_size(h, kh, sh, dh, pt, pb), conv_out_size(w, kw, sw, dw, pl, pr)
    if oh < 1 or ow < 1:
        pytest.skip("empty output")
    c_out = c * mult
    mult_q, shift = _mults(rng, c_out, kh * kw, bool(rng.integers(0, 2)))
    n = int(rng.integers(1, 3))
    p = DepthwiseConvParams(Dims(n, h, w, c), Dims(1, kh, kw, c_out), Dims(n, oh, ow, c_out), mult, sh, sw, dh, dw,
                            pt, pl, _q(rng), mult_q, shift)
    x = rng.integers(-128, 128, (n, h, w, c), dtype=np.int8)
    f = rng.integers(-8, 8, (1, kh, kw, c_out), dtype=np.int8)
    b = rng.integers(-(1 << 10), 1 << 10, c_out).astype(np.int32) if seed % 3 else None
    out = np.full((n, oh, ow, c_out), 0x5A, np.int8)
    need = dw4.buffer_size(p, b, "c")
    ctx, _keep = scratch_context(need)
    if need:  # the unpacked filter (and mcu_depthwise_conv2d_s8's scratch) in ctx, exactly
        short, _keep2 = scratch_context(need - 1)
        assert call_raw("mcu_depthwise_conv2d_s4", ctypes.byref(short), p, x, dw4.pack_filter(f), b, out) \
            == MCU_ERR_SCRATCH
    assert call_raw("mcu_depthwise_conv2d_s4", ctypes.byref(ctx), p, x, dw4.pack_filter(f), b, out) == MCU_OK
    np.testing.assert_array_equal(out, dw4.mcu_depthwise_conv2d_s4(p, x, f, b))
    for isa, code in ISA.items():
        assert call_raw("mcu_depthwise_conv2d_s4_get_buffer_size", p, code) == dw4.buffer_size(p, b, isa)
        assert call_raw("mcu_depthwise_conv2d_s4_path", p, code) == ("generic", "dsp", "mve").index(dw4.path(p, b, isa))


# -- mcu_transpose_conv_s4 --------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(12))
def test_transpose_conv_equals_golden(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    c_in, c_out = int(rng.integers(1, 12)), int(rng.integers(1, 9))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    h, w = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    sh, sw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    pt, pl = int(rng.integers(0, kh)), int(rng.integers(0, kw))
    oh, ow = (h - 1) * sh + (kh - 1) * dh + 1 - pt, (w - 1) * sw + (kw - 1) * dw + 1 - pl
    mult, shift = _mults(rng, c_out, kh * kw * c_in, bool(rng.integers(0, 2)))
    p = TransposeConvParams(Dims(1, h, w, c_in), Dims(c_out, kh, kw, c_in), Dims(1, oh, ow, c_out), sh, sw, dh, dw,
                            pt, pl, _q(rng), mult, shift)
    x = rng.integers(-128, 128, (1, h, w, c_in), dtype=np.int8)
    f = rng.integers(-8, 8, (c_out, kh, kw, c_in), dtype=np.int8)
    b = rng.integers(-(1 << 10), 1 << 10, c_out).astype(np.int32) if seed % 2 else None
    out = np.full((1, oh, ow, c_out), 0x5A, np.int8)
    assert call_raw("mcu_transpose_conv_s4", p, x, tc4.pack_filter(f), b, out) == MCU_OK
    np.testing.assert_array_equal(out, tc4.mcu_transpose_conv_s4(p, x, f, b))


# -- models: int4 conv / depthwise / transposed / 1-D, host and QEMU -----------------------------
KINDS = ("conv", "depthwise", "conv_transpose", "conv_transpose_wide", "conv1d")
KERNELS = {"conv": {"mcu_conv2d_s4"}, "depthwise": {"mcu_conv2d_s4", "mcu_depthwise_conv2d_s4"},
           "conv_transpose": {"mcu_conv2d_s4", "mcu_transpose_conv_s4"},
           "conv_transpose_wide": {"mcu_conv2d_s4", "mcu_transpose_conv_s4"},  # C_in 45: the DSP/MVE dot
           "conv1d": {"mcu_conv2d_s4", "mcu_depthwise_conv2d_s4"}}
CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")


@pytest.fixture(scope="module")
def conv_models(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Per kind: the int4 model (tests/harness/int4_models.py) and two int8 samples."""
    from tests.harness import int4_models

    root = tmp_path_factory.mktemp("int4_conv")
    return {k: (int4_models.model(k, root, "int4"), int4_models.feeds(k, 2, seed=9)) for k in KINDS}


def _compiled(path: Any, name: str, board: Any = None) -> Any:
    from emitter.compiler import compile_model

    return compile_model(path, name=name, board=board, backend="portable")


@pytest.mark.parametrize("kind", KINDS)
def test_model_runs_the_s4_kernels_bit_exact_on_host(kind: str, conv_models: Any, tmp_path: Any) -> None:
    """Every Conv / ConvTranspose of the int4 model takes a 4-bit kernel, its weights packed (half
    the int8 bytes, rounded up per row), and the host build equals the golden model."""
    from emitter.compiler import golden_run
    from tests.harness.bundles import build_library, emit, int8_inputs, run_c

    path, feeds = conv_models[kind]
    c = _compiled(path, f"m_{kind}")
    kernels = {p.kernel for p in c.prepared if "conv" in p.kernel}
    assert kernels == KERNELS[kind], kernels
    for node, p in zip(c.graph.nodes, c.prepared, strict=True):
        if p.kernel.endswith("_s4"):
            w = c.graph.t(node.inputs[1]).data
            assert w is not None and -8 <= int(w.min()) and int(w.max()) <= 7
            assert p.operands["filter"].data.dtype == np.uint8
            assert p.operands["filter"].data.size < w.size  # type: ignore[union-attr]
            assert "4-bit weights" in p.summary
    lib = build_library([emit(c, tmp_path / "b")], tmp_path / "lib.so")
    for f in feeds:
        xs = int8_inputs(c, [f["x"]])
        for got, want in zip(run_c(lib, c, xs), golden_run(c, xs), strict=True):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("core", CORES)
def test_models_bit_exact_in_qemu(core: str, conv_models: Any, tmp_path: Any) -> None:
    """The four int4 models in one firmware per core (generic path on M0+, DSP on M4/M7, MVE on
    M55), bit-exact with the golden model."""
    from emitter.boards import load_board
    from emitter.compiler import golden_run
    from emitter.target.toolchain import missing_tools
    from tests.harness.bundles import int8_inputs
    from tests.harness.qemu import MergedCase, run_merged

    board = load_board(core)
    if missing_tools():
        pytest.skip(f"no toolchain/QEMU for {core}: {missing_tools()}")
    cases = []
    for k, kind in enumerate(KINDS):
        path, feeds = conv_models[kind]
        c = _compiled(path, f"c{k}", board)
        cases.append(MergedCase(kind, c, int8_inputs(c, [feeds[0]["x"]])))
    result = run_merged(cases, board, tmp_path, werror=True)
    assert result.run.exit_code == 0 and not result.failures, result.failures
    for k, m in enumerate(cases):
        got = result.outputs[k]
        assert got is not None
        for j, (q, g) in enumerate(zip(got, golden_run(m.compiled, m.inputs), strict=True)):
            d = q.astype(np.int32) - g.astype(np.int32)
            assert not d.any(), f"{m.label} on {core}: output {j} differs in {int((d != 0).sum())} elements"


# -- kernels in QEMU: every path of mcu_conv2d_s4 / mcu_depthwise_conv2d_s4 -----------------------
QEMU_CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")
CONV_SHAPES = {  # (h, w, c_in, c_out, (kh, kw), pads t/b/l/r, stride, dilation, n)
    "p4_k108_gather": (6, 6, 12, 7, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1), 1),  # 3 blocks + tail 12
    "p4_k27": (5, 5, 3, 5, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1), 1),            # tail block only
    "p2_k225": (4, 4, 25, 6, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1), 1),          # DSP P = 2
    "p1_k400": (3, 4, 16, 5, (5, 5), (2, 2, 2, 2), (1, 1), (1, 1), 1),          # DSP P = 1
    "generic_k700": (3, 3, 28, 3, (5, 5), (2, 2, 2, 2), (1, 1), (1, 1), 1),     # DSP: generic
    "pointwise_64": (3, 5, 64, 9, (1, 1), (0, 0, 0, 0), (1, 1), (1, 1), 1),    # read in place
    "one_by_five": (1, 11, 7, 4, (1, 5), (0, 0, 2, 2), (1, 2), (1, 1), 2),      # 1-D, batch 2
    "dilated": (7, 7, 5, 6, (3, 2), (1, 0, 0, 1), (2, 1), (2, 2), 1),
    # blocked paths, several blocks of unpacked weights: 6 + 6 + 1 (DSP, MVE), 4 + 4 + 4 + 1 (generic)
    "blocks_k288": (5, 5, 32, 13, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1), 1),
    # K = 33 (odd, K % 32 = 1): 62 + 8 (DSP, MVE), 32 + 32 + 6 (generic)
    "pointwise_k33_c70": (2, 3, 33, 70, (1, 1), (0, 0, 0, 0), (1, 1), (1, 1), 1),
}
DW_SHAPES = {  # (h, w, c, mult, (kh, kw), pads, stride, dilation)
    "c16": (6, 5, 16, 1, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),
    "c13_tail": (5, 6, 13, 1, (3, 3), (1, 1, 1, 1), (2, 1), (1, 1)),
    "c3_dilated": (7, 7, 3, 1, (3, 3), (2, 2, 2, 2), (1, 1), (2, 2)),
    "mult2_generic": (4, 4, 5, 2, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),
    "c24_1x5": (1, 12, 24, 1, (1, 5), (0, 0, 2, 2), (1, 1), (1, 1)),
    "c232_packed": (3, 4, 232, 1, (3, 3), (1, 1, 1, 1), (1, 1), (1, 1)),  # 2088 weights: the s4 paths
}


def _variants(p: Any, channels_w: np.ndarray, b: np.ndarray | None) -> list[Any]:
    """The case in TFLite numerics and in onnxruntime's (float32 scales; rounding half to even
    proven tie-free where fast_round_ok says so: the fast paths; else the generic loops)."""
    from dataclasses import replace

    from emitter.quant import ROUND_NEAREST_EVEN, ROUND_NEAREST_NO_TIE, acc_bound, exact_multipliers, fast_round_ok

    tfl = replace(p, q=replace(p.q, rounding=0))
    real = np.asarray(p.multiplier, np.float64) * np.exp2(np.asarray(p.shift, np.float64) - 31)
    mult, shift = exact_multipliers(real.astype(np.float32))
    c = channels_w.shape[0]
    tie_free = fast_round_ok(mult, shift, acc_bound(channels_w, b, c))
    ort = replace(p, q=replace(p.q, rounding=ROUND_NEAREST_NO_TIE if tie_free else ROUND_NEAREST_EVEN),
                  multiplier=mult, shift=shift)
    return [tfl, ort]


def qemu_cases() -> list[tuple[str, str, Any, list[Any]]]:
    rng = np.random.default_rng(44)
    out: list[tuple[str, str, Any, list[Any]]] = []
    for name, (h, w, ci, co, k, pads, st, dl, n) in CONV_SHAPES.items():
        p, x, f, b = conv_case(rng, n=n, h=h, w=w, c_in=ci, c_out=co, kh=k[0], kw=k[1], stride=st, dil=dl,
                               pad=(pads[0], pads[2], pads[1], pads[3]))
        b = b if b is not None else np.zeros(co, np.int32)
        out += [(name, "conv", v, [x, f, b]) for v in _variants(p, f.reshape(co, -1), b)]
    for name, (h, w, c, mult, k, pads, st, dl) in DW_SHAPES.items():
        oh = conv_out_size(h, k[0], st[0], dl[0], pads[0], pads[1])
        ow = conv_out_size(w, k[1], st[1], dl[1], pads[2], pads[3])
        m, s = _mults(rng, c * mult, k[0] * k[1], True)
        p = DepthwiseConvParams(Dims(1, h, w, c), Dims(1, *k, c * mult), Dims(1, oh, ow, c * mult), mult, *st, *dl,
                                pads[0], pads[2], _q(rng), m, s)
        x = rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)
        f = rng.integers(-8, 8, (1, *k, c * mult), dtype=np.int8)
        b = rng.integers(-(1 << 12), 1 << 12, c * mult).astype(np.int32)
        out += [(name, "dw", v, [x, f, b]) for v in _variants(p, f.reshape(-1, c * mult).T, b)]
    return out


def _arr(ctype: str, name: str, a: np.ndarray) -> str:
    return f"static const {ctype} {name}[{a.size}] = {{{', '.join(str(int(v)) for v in a.ravel())}}};\n"


def _dims(d: Dims) -> str:
    return f"{{.n = {d.n}, .h = {d.h}, .w = {d.w}, .c = {d.c}}}"


RUN_C = """
static int run_{kind}(const {ptype} *p, const int8_t *x, const uint8_t *w, const int32_t *b, int8_t *out,
                      int8_t *meta)
{{
    const int32_t need = {k}_get_buffer_size(p, MCU_ISA_NATIVE);
    put_meta(meta, {k}_path(p, MCU_ISA_NATIVE), need);
    mcu_context_t ctx = {{scratch, need - 1}};
    if (need > (int32_t)sizeof scratch || (need > 0 && {k}(&ctx, p, x, w, b, out) != MCU_ERR_SCRATCH)) {{
        return 1;
    }}
    ctx.size = need;
    return {k}(&ctx, p, x, w, b, out) != MCU_OK;
}}
"""


def qemu_net_c(cases: list[tuple[str, str, Any, list[Any]]]) -> str:
    """Every case's constants and one run of each (after a call with one scratch byte too few must
    return MCU_ERR_SCRATCH); output 0: the outputs, output 1: per case its path and scratch need."""
    decls, calls, off = [], [], 0
    for k, (_, kind, p, (x, f, b)) in enumerate(cases):
        packed, bias = (conv4.pack_filter(f), conv4.kernel_sums(f, b, p.q.input_offset)) if kind == "conv" \
            else (dw4.pack_filter(f), b)
        q = p.q
        decls += [_arr("int8_t", f"x{k}", x), _arr("uint8_t", f"w{k}", packed), _arr("int32_t", f"b{k}", bias),
                  _arr("int32_t", f"m{k}", p.multiplier), _arr("int32_t", f"s{k}", p.shift)]
        common = (f".input = {_dims(p.input)}, .filter = {_dims(p.filter)}, .output = {_dims(p.output)}, "
                  f".stride_h = {p.stride_h}, .stride_w = {p.stride_w}, .dilation_h = {p.dilation_h}, "
                  f".dilation_w = {p.dilation_w}, .pad_top = {p.pad_top}, .pad_left = {p.pad_left}, "
                  f".q = {{.input_offset = {q.input_offset}, .output_offset = {q.output_offset}, "
                  f".act_min = {q.act_min}, .act_max = {q.act_max}, .rounding = {q.rounding}}}, "
                  f".multiplier = m{k}, .shift = s{k}")
        if kind == "conv":
            decls.append(f"static const mcu_conv_params_t p{k} = {{{common}}};\n")
        else:
            decls.append(f"static const mcu_depthwise_conv_params_t p{k} = {{{common}, "
                         f".depth_multiplier = {p.depth_multiplier}}};\n")
        calls.append(f"    if (run_{kind}(&p{k}, x{k}, w{k}, b{k}, outputs[0] + {off}, outputs[1] + {5 * k}) != 0) {{\n"
                     f"        return {k + 1};\n    }}\n")
        off += p.output.n * p.output.h * p.output.w * p.output.c
    runner = """
static int32_t scratch[4096];

static void put_meta(int8_t *meta, int32_t path, int32_t need)
{
    meta[0] = (int8_t)path;
    for (int i = 0; i < 4; ++i) {
        meta[1 + i] = (int8_t)(uint8_t)((uint32_t)need >> (8 * i));
    }
}

"""
    for kind, kern, ptype in (("conv", "mcu_conv2d_s4", "mcu_conv_params_t"),
                              ("dw", "mcu_depthwise_conv2d_s4", "mcu_depthwise_conv_params_t")):
        runner += RUN_C.format(kind=kind, k=kern, ptype=ptype)
    runner += """
int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);

int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs)
{
    (void)inputs;
"""
    return ("#include <stdint.h>\n#include <stddef.h>\n#include \"mcu_runtime/include/mcu_nn.h\"\n"
            "#include \"mcu_runtime/include/mcu_nn_s4.h\"\n\n" + "".join(decls) + runner + "".join(calls)
            + "    return 0;\n}\n")


@pytest.mark.qemu
@pytest.mark.parametrize("opt", ["-O2", pytest.param("-O0", marks=pytest.mark.slow)])
@pytest.mark.parametrize("core", QEMU_CORES)
def test_kernels_every_path_in_qemu(core: str, opt: str, tmp_path: Any) -> None:
    """mcu_conv2d_s4 (DSP P = 4, 2, 1, its assembly block loop, MVE, generic; windows gathered or
    read in place) and mcu_depthwise_conv2d_s4 (DSP, MVE, whole groups and the C_out % 8 tail,
    depth multiplier 2 on the generic loop), TFLite and onnxruntime numerics: bit-exact with the
    golden, and the C's path and scratch on the core equal the twins'."""
    from emitter.boards import load_board
    from emitter.compiler import isa_of
    from tests.harness.ckernels import run_bundle_on_qemu

    cases = qemu_cases()
    isa = isa_of(load_board(core))
    golden, metas = [], []
    for _, kind, p, (x, f, b) in cases:
        twin: Any = conv4 if kind == "conv" else dw4
        fn = conv4.mcu_conv2d_s4 if kind == "conv" else dw4.mcu_depthwise_conv2d_s4
        golden.append(np.asarray(fn(p, x, f, b), np.int8).ravel())
        metas.append((("generic", "dsp", "mve").index(twin.path(p, b, isa)), twin.buffer_size(p, b, isa)))
    want = np.concatenate(golden)
    raw = run_bundle_on_qemu(core, ["mcu_conv2d_s4", "mcu_depthwise_conv2d_s4", *conv4.RUNTIME_DEPS,
                                    *dw4.RUNTIME_DEPS], qemu_net_c(cases), [1],
                             [want.size, 5 * len(cases)], b"\0", tmp_path, opt)
    starts = np.cumsum([0] + [g.size for g in golden])
    got = np.frombuffer(raw[:want.size], np.int8)
    bad = [f"{cases[k][0]} rounding {cases[k][2].q.rounding}" for k, g in enumerate(golden)
           if not np.array_equal(got[starts[k]:starts[k] + g.size], g)]
    assert not bad, f"{bad} differ from the golden on {core} {opt}"
    meta = raw[want.size:]
    got_meta = [(meta[5 * k], int.from_bytes(meta[5 * k + 1:5 * k + 5], "little", signed=True))
                for k in range(len(cases))]
    assert got_meta == metas


@pytest.mark.parametrize("kind", ["conv", "depthwise"])
def test_s4_layers_run_by_rows(kind: str, conv_models: Any, tmp_path: Any) -> None:
    """A streamed plan runs the s4 conv / depthwise layers band by band (the s8 params' band
    functions), bit-exact with the golden on the host."""
    from emitter.compiler import compile_model, golden_run
    from tests.harness.bundles import build_library, emit, int8_inputs, run_c

    path, feeds = conv_models[kind]
    c = compile_model(path, name=f"r_{kind}", backend="portable", memory="stream")
    out = emit(c, tmp_path / "b")
    text = (out / f"r_{kind}.c").read_text()
    assert re.search(r"mcu_(conv2d|depthwise_conv2d)_s8_band\(", text)
    assert re.search(r"mcu_(conv2d|depthwise_conv2d)_s4(_lean)?\(", text)
    lib = build_library([out], tmp_path / "lib.so")
    xs = int8_inputs(c, [feeds[1]["x"]])
    for got, want in zip(run_c(lib, c, xs), golden_run(c, xs), strict=True):
        np.testing.assert_array_equal(got, want)
