"""Speed and target bit-exactness of the hot int8 kernels (conv2d, depthwise, fully connected).

    python benchmarks/kernels.py                  # everything below -> docs/kernel_perf.md
    python benchmarks/kernels.py --check-only     # only the QEMU case-table check (3)
    python benchmarks/kernels.py --baseline REV   # the "before" kernels come from git REV

1. Models: executed instructions per inference (QEMU + the instruction-count plugin, -O2, median
   over the 8 reference samples) of mlperf_kws_dscnn, mlperf_ic_resnet8, mlperf_ad_fc_autoencoder
   and tflm_micro_speech on cortex-m0plus/m4/m7/m55, through emitter.verify.run.run_verify (which also
   checks host gcc and QEMU bit-exact against the golden model). "before" = the same bundle with
   the three kernel files replaced by their text at git revision --baseline (the last commit with
   the reference loops), "after" = the working tree.
2. Kernels alone: one kernel call on the geometries of the CMSIS-NN reference figures in
   ../shared/docs/target-notes.md, on every QEMU core, before and after.
3. Case table: ~90 random and hand-picked geometries of the three kernels (odd channel counts,
   padding, strides, dilation, depth multipliers, batches, 1x1, c_in = 1, zero-point extremes,
   wide shifts, unaligned tensor and weight addresses) in one firmware per core, compared bit for
   bit with the numpy golden (emitter/kernels/), on the host and on every QEMU core. This is what
   exercises the __ARM_FEATURE_DSP (M4, M7, M33) and __ARM_FEATURE_MVE (M55) paths, which the
   repository's host tests never compile.

The case-table firmware is built like a bundle (SConstruct + mcu_runtime/harness/harness_main.c):
a generated cases.c holds parameters, weights and biases as const data, and glue_run() calls every
case on one input buffer, writing one output buffer.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emitter.boards import load_board
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_conv2d_s8 import ConvParams, mcu_conv2d_s8
from emitter.kernels.mcu_depthwise_conv2d_s8 import DepthwiseConvParams, mcu_depthwise_conv2d_s8
from emitter.kernels.mcu_fully_connected_s8 import FCParams, kernel_sums, mcu_fully_connected_s8, pack_weights
from tests.harness.ckernels import conv_out_size, realistic_multipliers, wide_multipliers

MODELS_DIR = ROOT.parent / "shared" / "models"
MODELS = ("mlperf_kws_dscnn", "mlperf_ic_resnet8", "mlperf_ad_fc_autoencoder", "tflm_micro_speech")
BOARDS = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")
ALL_CORES = ("cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")
KERNELS = ("mcu_conv2d_s8", "mcu_depthwise_conv2d_s8", "mcu_fully_connected_s8")
# The last commit whose kernels are the plain reference loops.
DEFAULT_BASELINE = "50e03eb"
OUT = ROOT / "docs" / "kernel_perf.md"
OUT_GUARD = 32  # bytes between two cases' outputs that no kernel may write

# CMSIS-NN v7.0.0 at -Ofast, executed instructions: copied from target-notes.md (not measured here).
CMSIS_NN = {
    "conv": (2_556_741, 1_128_311, 846_673, 851_230, 843_968, 183_704),
    "fc": (53_555, 30_034, 17_077, 17_084, 17_081, 4_396),
    "dw": (1_400_281, 371_773, 336_357, 332_099, 331_598, 127_812),
}


# ---------------------------------------------------------------------------------------------
# kernel sources

def kernel_files() -> list[str]:
    """The files of the three kernels in the working tree (dispatchers, path files, private
    headers, support/), relative to the repository."""
    from emitter.render.runtime_files import runtime_files

    return [f"mcu_runtime/{rel}" for rel in runtime_files(list(KERNELS)) if not rel.startswith("include/")]


def baseline_sources(rev: str) -> dict[str, bytes]:
    """The three kernels' files as they were at git revision `rev` (a revision with the scratch
    context API of mcu_nn.h: the headers come from the working tree)."""
    out = {}
    for rel in kernel_files():
        res = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{rel}"], capture_output=True, check=False)
        if res.returncode == 0:
            out[rel] = res.stdout
    return out


def tree_sources() -> dict[str, bytes]:
    return {rel: (ROOT / rel).read_bytes() for rel in kernel_files()}


# ---------------------------------------------------------------------------------------------
# 1. models

@dataclass
class Figure:
    """Instructions per inference (median, min, max over the samples), bit-exactness of every
    check run_verify made, inference stack and the model's flash (code + weights) in bytes."""
    median: int
    lo: int
    hi: int
    ok: bool
    stack: int
    flash: int
    lines: list[str] = field(default_factory=list)


def model_figure(model: str, board_name: str, kernels: dict[str, bytes]) -> Figure:
    """Instructions per inference of a model bundle whose three hot kernels are `kernels`."""
    from emitter.compiler import compile_model
    from emitter.render.bundle import render_bundle
    from emitter.render.write import write_bundle
    from emitter.verify.run import run_verify

    board = load_board(board_name)
    onnx = MODELS_DIR / model / f"{model}.onnx"
    npz = MODELS_DIR / model / f"{model}_ref.npz"
    c = compile_model(onnx)
    files = render_bundle(c, " ".join(board.cflags), board.name)
    files.update({rel: src for rel, src in kernels.items() if rel in files})
    with tempfile.TemporaryDirectory(prefix="mcugen-bench-") as tmp:
        bundle = Path(tmp) / "bundle"
        write_bundle(files, bundle)
        rep = run_verify(c, bundle, board, onnx, str(npz), 8, work=Path(tmp) / "work")
    fig = rep.figures
    counts = fig["instructions"]
    return Figure(int(statistics.median(counts)), min(counts), max(counts), rep.ok,
                  fig["stack_bytes"] or 0, fig["flash_model"], rep.lines)


# ---------------------------------------------------------------------------------------------
# 3. (and 2.) case-table firmware

@dataclass
class KCase:
    """One kernel call: which kernel, its params, its operands and the golden output."""
    name: str
    kernel: str
    params: Any
    x: np.ndarray
    w: np.ndarray
    bias: np.ndarray | None
    misalign: int = 0  # byte offset of input, weights and output from a 4-byte boundary

    def golden(self) -> np.ndarray:
        if self.kernel == "mcu_conv2d_s8":
            return mcu_conv2d_s8(self.params, self.x, self.w, self.bias)
        if self.kernel == "mcu_depthwise_conv2d_s8":
            return mcu_depthwise_conv2d_s8(self.params, self.x, self.w, self.bias)
        return mcu_fully_connected_s8(self.params, self.x, self.w, self.bias)

    def c_operands(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(weights, bias) as the C kernel takes them: for the fully connected kernel the block
        layout and the kernel sums (its twin's pack_weights / kernel_sums)."""
        if self.kernel == "mcu_fully_connected_s8":
            return pack_weights(self.w), kernel_sums(self.params, self.w, self.bias)
        return self.w, self.bias


def _quant(rng: np.random.Generator, channels: int, taps: int, wide: bool, zp_in: int, zp_out: int,
           act: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, QuantIO]:
    if wide:
        mult, shift = wide_multipliers(rng, channels)
    else:
        mult, shift = realistic_multipliers(rng, channels, taps)
    return mult, shift, QuantIO(-zp_in, zp_out, *act)


def conv_case(rng: np.random.Generator, name: str, n: int = 1, h: int = 6, w: int = 6,
              c_in: int = 3, c_out: int = 4, kh: int = 3, kw: int = 3,
              stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1),
              pads: tuple[int, int, int, int] = (0, 0, 0, 0),
              zp_in: int = 0, zp_out: int = 0, act: tuple[int, int] = (-128, 127),
              bias: bool = True, wide: bool = False, misalign: int = 0,
              depthwise: bool = False, dm: int = 1) -> KCase:
    top, bottom, left, right = pads
    oh = conv_out_size(h, kh, stride[0], dilation[0], top, bottom)
    ow = conv_out_size(w, kw, stride[1], dilation[1], left, right)
    co = c_in * dm if depthwise else c_out
    taps = kh * kw * (1 if depthwise else c_in)
    mult, shift, q = _quant(rng, co, taps, wide, zp_in, zp_out, act)
    geo: dict[str, Any] = {
        "input": Dims(n, h, w, c_in), "output": Dims(n, oh, ow, co), "stride_h": stride[0],
        "stride_w": stride[1], "dilation_h": dilation[0], "dilation_w": dilation[1],
        "pad_top": top, "pad_left": left, "q": q, "multiplier": mult, "shift": shift}
    if depthwise:
        params: Any = DepthwiseConvParams(filter=Dims(1, kh, kw, co), depth_multiplier=dm, **geo)
        wt = rng.integers(-128, 128, (1, kh, kw, co), dtype=np.int8)
    else:
        params = ConvParams(filter=Dims(co, kh, kw, c_in), **geo)
        wt = rng.integers(-128, 128, (co, kh, kw, c_in), dtype=np.int8)
    x = rng.integers(-128, 128, (n, h, w, c_in), dtype=np.int8)
    b = rng.integers(-(1 << 13), 1 << 13, co).astype(np.int32) if bias else None
    kernel = "mcu_depthwise_conv2d_s8" if depthwise else "mcu_conv2d_s8"
    return KCase(name, kernel, params, x, wt, b, misalign)


def fc_case(rng: np.random.Generator, name: str, batches: int = 1, k: int = 16, n: int = 8,
            per_channel: bool = True, zp_in: int = 0, zp_out: int = 0,
            act: tuple[int, int] = (-128, 127), bias: bool = True, wide: bool = False,
            misalign: int = 0) -> KCase:
    mult, shift, q = _quant(rng, n if per_channel else 1, k, wide, zp_in, zp_out, act)
    p = FCParams(batches=batches, in_features=k, out_features=n, q=q, per_channel=int(per_channel),
                 multiplier=mult, shift=shift)
    x = rng.integers(-128, 128, (batches, k), dtype=np.int8)
    wt = rng.integers(-128, 128, (n, k), dtype=np.int8)
    b = rng.integers(-(1 << 13), 1 << 13, n).astype(np.int32) if bias else None
    return KCase(name, "mcu_fully_connected_s8", p, x, wt, b, misalign)


def check_cases(seed: int = 2024) -> list[KCase]:
    """Hand-picked geometries (model-like and edge cases) plus random ones."""
    r = np.random.default_rng(seed)
    cases = [
        # conv: model-like
        conv_case(r, "conv kws first 10x4 s2 c_in1", h=49, w=10, c_in=1, c_out=8, kh=10, kw=4,
                  stride=(2, 2), pads=(4, 5, 1, 1), zp_in=-3, zp_out=-128, act=(-128, 127)),
        conv_case(r, "conv micro_speech 10x8 s2 c_in1", h=49, w=40, c_in=1, c_out=8, kh=10, kw=8,
                  stride=(2, 2), pads=(4, 5, 3, 3), zp_in=-128, zp_out=-128, misalign=1),
        conv_case(r, "conv 1x1 c_in16 c_out8", h=5, w=5, c_in=16, c_out=8, kh=1, kw=1, zp_in=7),
        conv_case(r, "conv 1x1 c_in64 c_out6", h=3, w=4, c_in=64, c_out=6, kh=1, kw=1, zp_in=-128,
                  misalign=2),
        conv_case(r, "conv 1x1 s2 c_in9 c_out7", h=7, w=7, c_in=9, c_out=7, kh=1, kw=1,
                  stride=(2, 2), zp_in=128 - 1, misalign=3),
        conv_case(r, "conv 1x1 c_in3 c_out5 pad", h=4, w=4, c_in=3, c_out=5, kh=1, kw=1,
                  pads=(1, 2, 2, 1), zp_in=-50),
        conv_case(r, "conv 3x3 pad1 c_in16 c_out16", h=8, w=8, c_in=16, c_out=16, pads=(1, 1, 1, 1),
                  zp_in=-128, zp_out=-128, act=(-128, 127)),
        conv_case(r, "conv 3x3 s2 pad c_in17 c_out5", h=9, w=8, c_in=17, c_out=5, stride=(2, 2),
                  pads=(1, 1, 0, 1), zp_in=33, misalign=1),
        conv_case(r, "conv 3x3 dil2 c_in5 c_out3", h=10, w=9, c_in=5, c_out=3, dilation=(2, 2),
                  pads=(2, 2, 2, 2), zp_in=-1, misalign=2),
        conv_case(r, "conv 10x4 asym pad c_in2", h=12, w=9, c_in=2, c_out=3, kh=10, kw=4,
                  pads=(4, 5, 1, 2), zp_in=90),
        conv_case(r, "conv kernel = input", h=3, w=3, c_in=7, c_out=9, zp_in=-128, zp_out=127),
        conv_case(r, "conv all padding rows", h=2, w=2, c_in=3, c_out=3, kh=1, kw=1,
                  pads=(3, 3, 3, 3), zp_in=12),
        conv_case(r, "conv batch2 s2 wide shifts", n=2, h=7, w=6, c_in=6, c_out=5, stride=(2, 2),
                  pads=(1, 1, 1, 1), wide=True, zp_in=-128, misalign=3),
        conv_case(r, "conv extremes 1x5 c_in4 zp127", h=4, w=9, c_in=4, c_out=4, kh=1, kw=5,
                  pads=(0, 0, 2, 2), zp_in=127, zp_out=-128, act=(-20, 50), bias=False),
        # conv: filters larger than the patch buffer (576 bytes; read run by run)
        conv_case(r, "conv 3x3 pad1 c_in80 c_out6 (K 720)", h=5, w=6, c_in=80, c_out=6,
                  pads=(1, 1, 1, 1), zp_in=-128, misalign=1),
        conv_case(r, "conv 3x3 dil2 s2 c_in70 (K 630)", h=8, w=7, c_in=70, c_out=5,
                  stride=(2, 2), dilation=(2, 2), pads=(2, 1, 2, 2), zp_in=77, misalign=2),
        conv_case(r, "conv 1x1 c_in600 padded (K 600)", h=2, w=2, c_in=600, c_out=7, kh=1, kw=1,
                  pads=(1, 0, 1, 1), zp_in=-9, misalign=3),
        conv_case(r, "conv 5x5 dil1x2 s2 c_in25 (K 625)", h=9, w=11, c_in=25, c_out=9,
                  kh=5, kw=5, stride=(2, 2), dilation=(1, 2), pads=(2, 1, 3, 2), zp_in=128 - 1,
                  wide=True),
        conv_case(r, "conv 1x9 c_in70 pad (K 630)", h=2, w=11, c_in=70, c_out=4, kh=1, kw=9,
                  pads=(0, 0, 4, 4), zp_in=-128, zp_out=5, bias=False),
        # conv: large filters that still fit the patch buffer
        conv_case(r, "conv 3x3 pad1 c_in32 c_out6 (K 288)", h=6, w=7, c_in=32, c_out=6,
                  pads=(1, 1, 1, 1), zp_in=-128, misalign=1),
        conv_case(r, "conv 3x3 dil2 s2 c_in40 (K 360)", h=9, w=8, c_in=40, c_out=5, stride=(2, 2),
                  dilation=(2, 2), pads=(2, 1, 2, 2), zp_in=77, misalign=2),
        conv_case(r, "conv 1x1 c_in300 padded (K 300)", h=2, w=3, c_in=300, c_out=5, kh=1, kw=1,
                  pads=(1, 1, 1, 0), zp_in=-9, misalign=3),
        conv_case(r, "conv 5x5 dil1x2 s2 c_in11 (K 275)", h=9, w=11, c_in=11, c_out=9,
                  kh=5, kw=5, stride=(2, 2), dilation=(1, 2), pads=(2, 1, 3, 2), zp_in=128 - 1,
                  wide=True),
        conv_case(r, "conv 1x7 c_in40 pad (K 280)", h=3, w=9, c_in=40, c_out=4, kh=1, kw=7,
                  pads=(0, 0, 3, 3), zp_in=-128, zp_out=5, bias=False),
        # depthwise
        conv_case(r, "dw 3x3 pad1 c16", h=8, w=8, c_in=16, pads=(1, 1, 1, 1), zp_in=-128,
                  depthwise=True),
        conv_case(r, "dw 3x3 pad1 c64 kws", h=25, w=5, c_in=64, pads=(1, 1, 1, 1), zp_in=-128,
                  zp_out=-128, depthwise=True, misalign=1),
        conv_case(r, "dw 3x3 s2 c7", h=9, w=7, c_in=7, stride=(2, 2), pads=(1, 1, 1, 1), zp_in=5,
                  depthwise=True, misalign=2),
        conv_case(r, "dw 3x3 c_in3 dm2", h=6, w=6, c_in=3, dm=2, pads=(1, 1, 1, 1), zp_in=-7,
                  depthwise=True, misalign=3),
        conv_case(r, "dw c_in1 dm8", h=6, w=5, c_in=1, dm=8, pads=(1, 1, 1, 1), zp_in=127,
                  depthwise=True),
        conv_case(r, "dw c_in5 dm3 dil 3x1", h=11, w=7, c_in=5, dm=3, dilation=(3, 1), zp_in=-90,
                  depthwise=True),
        conv_case(r, "dw 10x4 asym pad c2", h=12, w=9, c_in=2, kh=10, kw=4, pads=(4, 5, 1, 2),
                  zp_in=44, depthwise=True, misalign=1),
        conv_case(r, "dw 5x5 c33 s1x2 wide", h=7, w=9, c_in=33, kh=5, kw=5, stride=(1, 2),
                  pads=(2, 2, 2, 2), wide=True, zp_in=-128, depthwise=True, bias=False),
        conv_case(r, "dw batch2 c9", n=2, h=5, w=5, c_in=9, stride=(2, 2), pads=(1, 1, 1, 1),
                  zp_in=1, zp_out=3, act=(-10, 20), depthwise=True),
        conv_case(r, "dw all padding rows", h=2, w=2, c_in=5, kh=1, kw=1, pads=(3, 3, 3, 3),
                  depthwise=True, zp_in=-100),
        # fully connected
        fc_case(r, "fc 256->32", k=256, n=32, zp_in=-128),
        fc_case(r, "fc 640->128", k=640, n=12, zp_in=-5, misalign=1),
        fc_case(r, "fc k1", k=1, n=5, zp_in=3),
        fc_case(r, "fc k3 n1", k=3, n=1, zp_in=-128, misalign=2),
        fc_case(r, "fc k17 n7 batches3", batches=3, k=17, n=7, zp_in=100, misalign=3),
        fc_case(r, "fc k33 per-tensor", batches=2, k=33, n=9, per_channel=False, zp_in=-128),
        fc_case(r, "fc k1000 n3", k=1000, n=3, zp_in=127, zp_out=-128, misalign=1),
        fc_case(r, "fc wide shifts", batches=4, k=31, n=8, wide=True, zp_in=-77),
        fc_case(r, "fc no bias narrow act", batches=2, k=15, n=6, bias=False, act=(-10, 20)),
    ]
    for i in range(12):  # random conv
        cases.append(conv_case(
            r, f"conv random {i}", n=int(r.integers(1, 3)), h=int(r.integers(1, 10)),
            w=int(r.integers(1, 10)), c_in=int(r.choice([1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31])),
            c_out=int(r.integers(1, 10)), kh=int(r.integers(1, 5)), kw=int(r.integers(1, 5)),
            stride=(int(r.integers(1, 4)), int(r.integers(1, 4))),
            dilation=(int(r.integers(1, 3)), int(r.integers(1, 3))),
            pads=tuple(int(v) for v in r.integers(0, 3, 4)),  # type: ignore[arg-type]
            zp_in=int(r.integers(-128, 128)), zp_out=int(r.integers(-128, 128)),
            bias=bool(r.integers(0, 2)), wide=bool(r.integers(0, 2)),
            misalign=int(r.integers(0, 4))))
    for i in range(10):  # random depthwise
        cases.append(conv_case(
            r, f"dw random {i}", n=int(r.integers(1, 3)), h=int(r.integers(1, 10)),
            w=int(r.integers(1, 10)), c_in=int(r.choice([1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31])),
            dm=int(r.choice([1, 1, 2, 3])), kh=int(r.integers(1, 5)), kw=int(r.integers(1, 5)),
            stride=(int(r.integers(1, 4)), int(r.integers(1, 4))),
            dilation=(int(r.integers(1, 3)), int(r.integers(1, 3))),
            pads=tuple(int(v) for v in r.integers(0, 3, 4)),  # type: ignore[arg-type]
            zp_in=int(r.integers(-128, 128)), zp_out=int(r.integers(-128, 128)),
            bias=bool(r.integers(0, 2)), wide=bool(r.integers(0, 2)),
            misalign=int(r.integers(0, 4)),
            depthwise=True))
    for i in range(8):  # random fully connected
        cases.append(fc_case(
            r, f"fc random {i}", batches=int(r.integers(1, 4)), k=int(r.integers(1, 70)),
            n=int(r.integers(1, 10)), per_channel=bool(r.integers(0, 2)),
            zp_in=int(r.integers(-128, 128)), zp_out=int(r.integers(-128, 128)),
            bias=bool(r.integers(0, 2)), wide=bool(r.integers(0, 2)),
            misalign=int(r.integers(0, 4))))
    # the branches of the DSP and MVE fast paths (3x3 row pairs with padding rows, overlapping
    # last pair, shifted border windows, narrow inputs, clamped outputs, partial channel groups;
    # conv with 4, 2 and 1 positions per pass, partial value groups, few positions)
    cases += [
        conv_case(r, "dw 3x3 pad1 c12 h7 w3 clamp", h=7, w=3, c_in=12, pads=(1, 1, 1, 1),
                  zp_in=33, zp_out=-5, act=(-50, 60), depthwise=True, misalign=1),
        conv_case(r, "dw 3x3 pad (0,1,2,0) w2 c8", h=6, w=2, c_in=8, pads=(0, 1, 2, 0),
                  zp_in=-128, depthwise=True),
        conv_case(r, "dw 3x3 s1x2 d1x2 c8", h=8, w=11, c_in=8, stride=(1, 2), dilation=(1, 2),
                  pads=(1, 1, 2, 2), zp_in=-77, depthwise=True, misalign=3),
        conv_case(r, "dw 3x3 s2 c20 no bias", h=9, w=10, c_in=20, stride=(2, 2),
                  pads=(1, 1, 1, 1), zp_in=128 - 1, bias=False, depthwise=True, misalign=2),
        conv_case(r, "dw 5x5 pad2 c16", h=7, w=6, c_in=16, kh=5, kw=5, pads=(2, 2, 2, 2),
                  zp_in=-128, zp_out=-128, depthwise=True),
        conv_case(r, "dw 3x3 h2 pad1 c4", h=2, w=5, c_in=4, pads=(1, 1, 1, 1), zp_in=9,
                  depthwise=True),
        conv_case(r, "conv 3x3 c_in16 c_out9 (K 144)", h=6, w=5, c_in=16, c_out=9,
                  pads=(1, 1, 1, 1), zp_in=-128, misalign=1),
        conv_case(r, "conv 3x3 c_in32 c_out5 (K 288)", h=5, w=5, c_in=32, c_out=5,
                  pads=(1, 1, 1, 1), zp_in=21, misalign=2),
        conv_case(r, "conv 3x3 c_in64 c_out7 (K 576)", h=4, w=4, c_in=64, c_out=7,
                  pads=(1, 0, 1, 1), zp_in=-128, zp_out=-128),
        conv_case(r, "conv 3x3 c_in3 (K 27)", h=7, w=6, c_in=3, c_out=6, pads=(1, 1, 1, 1),
                  zp_in=-60, act=(-20, 90), misalign=3),
        conv_case(r, "conv 1x1 c_in256 3 positions", h=1, w=3, c_in=256, c_out=10, kh=1, kw=1,
                  zp_in=-128, misalign=1),
        conv_case(r, "conv 1x3 c_in5 (K 15) 5 positions", h=1, w=7, c_in=5, c_out=4, kh=1, kw=3,
                  zp_in=44, bias=False),
        # padding wider than the output
        conv_case(r, "dw w1 3x3 pad_left 2", h=4, w=1, c_in=8, pads=(1, 1, 2, 0), zp_in=5,
                  depthwise=True),
        conv_case(r, "dw h1 3x3 pad_top 2 s1x2", h=1, w=6, c_in=8, stride=(1, 2),
                  pads=(2, 0, 1, 1), zp_in=7, depthwise=True),
        conv_case(r, "conv w1 3x3 pad_left 2", h=3, w=1, c_in=4, c_out=5, pads=(0, 0, 2, 0),
                  zp_in=3),
    ]
    return cases


def cmsis_cases() -> dict[str, KCase]:
    """The geometries of target-notes' CMSIS-NN reference figures."""
    r = np.random.default_rng(7)
    return {
        "conv": conv_case(r, "conv 16x16x8, 3x3 -> 16, pad 1", h=16, w=16, c_in=8, c_out=16,
                          pads=(1, 1, 1, 1), zp_in=-128, zp_out=-128),
        "fc": fc_case(r, "FC 256 -> 32", k=256, n=32, zp_in=-128),
        "dw": conv_case(r, "depthwise 3x3, 16x16x16", h=16, w=16, c_in=16, pads=(1, 1, 1, 1),
                        zp_in=-128, zp_out=-128, depthwise=True),
    }


def _c_array(ctype: str, name: str, values: np.ndarray, align: bool = False) -> str:
    vals = [str(int(v)) for v in values.ravel()]
    if ctype == "int32_t":
        vals = [f"{v}" if int(v) != -(1 << 31) else "INT32_MIN" for v in vals]
    body = ",\n".join("    " + ", ".join(vals[i:i + 24]) for i in range(0, len(vals), 24))
    attr = " __attribute__((aligned(4)))" if align else ""
    return f"static const {ctype} {name}[{max(len(vals), 1)}]{attr} = {{\n{body or '    0'}\n}};\n"


def _dims(d: Dims) -> str:
    return f"{{.n = {d.n}, .h = {d.h}, .w = {d.w}, .c = {d.c}}}"


def _params_c(i: int, c: KCase) -> str:
    p = c.params
    q = (f"{{.input_offset = {p.q.input_offset}, .output_offset = {p.q.output_offset}, "
         f".act_min = {p.q.act_min}, .act_max = {p.q.act_max}}}")
    common = f"    .q = {q},\n    .multiplier = c{i}_mult,\n    .shift = c{i}_shift,\n"
    if c.kernel == "mcu_fully_connected_s8":
        return (f"static const mcu_fc_params_t c{i}_p = {{\n    .batches = {p.batches},\n"
                f"    .in_features = {p.in_features},\n    .out_features = {p.out_features},\n"
                f"    .per_channel = {p.per_channel},\n{common}}};\n")
    geo = (f"    .input = {_dims(p.input)},\n    .filter = {_dims(p.filter)},\n"
           f"    .output = {_dims(p.output)},\n    .stride_h = {p.stride_h},\n"
           f"    .stride_w = {p.stride_w},\n    .dilation_h = {p.dilation_h},\n"
           f"    .dilation_w = {p.dilation_w},\n    .pad_top = {p.pad_top},\n"
           f"    .pad_left = {p.pad_left},\n")
    if c.kernel == "mcu_conv2d_s8":
        return f"static const mcu_conv_params_t c{i}_p = {{\n{geo}{common}}};\n"
    return (f"static const mcu_depthwise_conv_params_t c{i}_p = {{\n{geo}"
            f"    .depth_multiplier = {p.depth_multiplier},\n{common}}};\n")


@dataclass
class Table:
    """Where each case's operands live: input/output offsets in the harness buffers (each
    `misalign` bytes past a 4-byte boundary) and weights in one const array."""
    cases: list[KCase]
    in_off: list[int]
    out_off: list[int]
    in_bytes: int
    out_bytes: int

    @staticmethod
    def lay_out(cases: list[KCase]) -> Table:
        in_off, out_off, ip, op = [], [], 0, 0
        for c in cases:
            ip = (ip + 15) // 16 * 16 + c.misalign
            # OUT_GUARD untouched bytes after every output (the harness buffer starts zeroed):
            # a kernel writing past its output shows there (outside_writes)
            op = (op + OUT_GUARD + 15) // 16 * 16 + c.misalign
            in_off.append(ip)
            out_off.append(op)
            ip += c.x.size
            op += c.golden().size
        return Table(cases, in_off, out_off, ip, op)

    def pack_input(self) -> bytes:
        buf = np.zeros(self.in_bytes, dtype=np.int8)
        for c, off in zip(self.cases, self.in_off):
            buf[off:off + c.x.size] = c.x.ravel()
        return buf.tobytes()

    def expected(self) -> list[np.ndarray]:
        return [c.golden() for c in self.cases]

    def outside_writes(self, raw: bytes) -> int:
        """Bytes of the output buffer outside every case's output that are not zero."""
        arr = np.frombuffer(raw, dtype=np.int8).copy()
        for off, g in zip(self.out_off, self.expected()):
            arr[off:off + g.size] = 0
        return int(np.count_nonzero(arr))

    def outputs(self, raw: bytes) -> list[np.ndarray]:
        arr = np.frombuffer(raw, dtype=np.int8)
        return [arr[off:off + g.size].reshape(g.shape)
                for off, g in zip(self.out_off, self.expected())]

    def sources(self) -> tuple[str, str]:
        """(cases.c, model_glue.h)."""
        parts = ["/* cases.c - generated by benchmarks/kernels.py: kernel case table. */\n",
                 "#include <stdint.h>\n\n#include \"cases.h\"\n#include \"mcu_nn.h\"\n\n"]
        weights: list[int] = []
        w_off: list[int] = []
        for c in self.cases:
            pad = (-len(weights) + c.misalign) % 4
            weights += [0] * pad
            w_off.append(len(weights))
            weights += [int(v) for v in c.c_operands()[0].ravel()]
        parts.append(_c_array("int8_t", "weights", np.array(weights), align=True))
        calls = []
        for i, c in enumerate(self.cases):
            parts.append(_c_array("int32_t", f"c{i}_mult", c.params.multiplier))
            parts.append(_c_array("int32_t", f"c{i}_shift", c.params.shift))
            c_bias = c.c_operands()[1]
            if c_bias is not None:
                parts.append(_c_array("int32_t", f"c{i}_bias", c_bias))
            parts.append(_params_c(i, c))
            bias = f"c{i}_bias" if c_bias is not None else "NULL"
            ctx = ""
            if c.kernel in KERNELS:  # scratch context first
                calls.append(f"    ctx.size = {c.kernel}_get_buffer_size(&c{i}_p, {bias}, MCU_ISA_NATIVE);\n")
                ctx = "&ctx, "
            calls.append(f"    /* {c.name} */\n"
                         f"    if ({c.kernel}({ctx}&c{i}_p, input + {self.in_off[i]}, "
                         f"weights + {w_off[i]}, "
                         f"{bias}, output + {self.out_off[i]}) != MCU_OK) {{\n"
                         f"        failed = {i + 1};\n    }}\n")
        parts.append(f"\nstatic int32_t scratch[{scratch_words(self.cases)}];\n")
        parts.append("\nint cases_run(const int8_t *input, int8_t *output)\n{\n"
                     "    int failed = 0;\n"
                     "    mcu_context_t ctx = {scratch, 0};\n"
                     + "".join(calls) + "    return failed;\n}\n")
        glue = (
            "/* model_glue.h - generated by benchmarks/kernels.py for the kernel case table. */\n"
            "#ifndef MODEL_GLUE_H\n#define MODEL_GLUE_H\n\n#include <stdint.h>\n\n"
            "#include \"cases.h\"\n\n"
            "#define GLUE_NUM_INPUTS 1\n#define GLUE_NUM_OUTPUTS 1\n"
            f"#define GLUE_INPUT_BYTES {self.in_bytes}\n"
            f"#define GLUE_OUTPUT_BYTES {self.out_bytes}\n"
            "static const unsigned long glue_input_sizes[1] = { GLUE_INPUT_BYTES };\n"
            "static const unsigned long glue_output_sizes[1] = { GLUE_OUTPUT_BYTES };\n\n"
            "static int glue_run(const int8_t *const *inputs, int8_t *const *outputs)\n{\n"
            "    return cases_run(inputs[0], outputs[0]);\n}\n\n#endif\n")
        return "".join(parts), glue


def scratch_words(cases: list[KCase]) -> int:
    """int32 words of scratch every conv/FC case fits in, on any instruction set."""
    from emitter.kernels import ISAS
    from emitter.kernels import mcu_conv2d_s8 as conv_twin
    from emitter.kernels import mcu_depthwise_conv2d_s8 as dw_twin

    twins = {"mcu_conv2d_s8": conv_twin, "mcu_depthwise_conv2d_s8": dw_twin}
    need = [twins[c.kernel].buffer_size(c.params, c.bias, isa) for c in cases if c.kernel in twins
            for isa in ISAS]
    return max(need + [4]) // 4 + 1


CASES_H = ("#ifndef CASES_H\n#define CASES_H\n#include <stdint.h>\n"
           "/* Runs every case; 0, or 1 + the index of the last case whose kernel failed. */\n"
           "int cases_run(const int8_t *input, int8_t *output);\n#endif\n")


@dataclass
class TableRun:
    ok: bool
    instructions: int
    mismatches: list[str]


def run_table(cases: list[KCase], board_name: str, kernels: dict[str, bytes],
              work: Path) -> TableRun:
    """Build the case table for `board_name` (or `host`) with `kernels`, run it, compare."""
    from emitter.target.firmware import build_firmware, build_host
    from emitter.target.qemu import run_qemu

    table = Table.lay_out(cases)
    cases_c, glue_h = table.sources()
    bundle, glue = work / "bundle", work / "glue"
    (bundle / "mcu_runtime" / "kernels").mkdir(parents=True, exist_ok=True)
    (bundle / "mcu_runtime" / "include").mkdir(parents=True, exist_ok=True)
    glue.mkdir(parents=True, exist_ok=True)
    from emitter.render.runtime_files import RUNTIME_HEADERS

    for h in RUNTIME_HEADERS:
        (bundle / "mcu_runtime" / "include" / h).write_bytes(
            (ROOT / "mcu_runtime" / "include" / h).read_bytes())
    for rel, src in kernels.items():
        (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
        (bundle / rel).write_bytes(src)
    (bundle / "cases.c").write_text(cases_c)
    (bundle / "cases.h").write_text(CASES_H)
    (glue / "model_glue.h").write_text(glue_h)
    run_dir = work / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "input.bin").write_bytes(table.pack_input())
    count = 0
    if board_name == "host":
        exe = build_host(bundle, glue, work / "build", werror=True)
        res = subprocess.run([str(exe)], cwd=run_dir, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise RuntimeError(f"host case table exited {res.returncode}: {res.stdout}{res.stderr}")
    else:
        board = load_board(board_name)
        fw = build_firmware(bundle, glue, board, work / "build", werror=True)
        run = run_qemu(fw.elf, board, run_dir, timeout=600)
        count = run.instructions[0]
    raw = (run_dir / "output.bin").read_bytes()
    got = table.outputs(raw)
    bad = [f"{c.name}: {int((g != e).sum())}/{e.size} differ"
           for c, g, e in zip(cases, got, table.expected()) if not np.array_equal(g, e)]
    if table.outside_writes(raw):
        bad.append(f"{table.outside_writes(raw)} bytes written outside the cases' outputs")
    return TableRun(not bad, count, bad)


# ---------------------------------------------------------------------------------------------
# report

PATHS = {"host": "pure C99", "cortex-m0plus": "pure C99", "cortex-m3": "pure C99",
         "cortex-m4": "DSP (SMLAD)", "cortex-m7": "DSP (SMLAD)", "cortex-m33": "DSP (SMLAD)",
         "cortex-m55": "MVE (Helium)"}


def fmt(n: int) -> str:
    return f"{n:,}"


def report(rev: str, cases: list[KCase], checks: dict[str, TableRun],
           models: dict[tuple[str, str, str], Figure],
           micro: dict[tuple[str, str, str], TableRun]) -> str:
    lines = [
        "# Kernel performance: conv2d, depthwise_conv2d, fully_connected",
        "",
        ("Generated by `python benchmarks/kernels.py`; do not edit by hand. Executed instructions "
         "counted in QEMU 7.2 by the instruction-count plugin (mcu_runtime/qemu_plugin), firmware "
         "built with arm-none-eabi-gcc 12 at **-O2** (the `mcugen --verify` flags). Instruction "
         "counts are not cycles (an SMLAD or an MVE instruction counts 1, like an ADD): compare "
         "before and after on one core, not cores with each other."),
        "",
        (f"- **before**: the reference loops (the three kernel files at git `{rev}`), everything "
         "else as in this tree;"),
        ("- **after**: the kernels in this tree: pure C99 on M0+/M3 (and the host), the "
         "`__ARM_FEATURE_DSP` path (SXTB16/SMLAD) on M4/M7/M33, the `__ARM_FEATURE_MVE` path "
         "(Helium) on M55."),
        "",
        "## Models: instructions per inference",
        "",
        ("Median over the 8 reference inputs of each model (`<model>_ref.npz`). Each run is "
         "`emitter.verify.run.run_verify`: host gcc and QEMU bit-exact against the golden model and "
         "against the TFLM reference outputs. Stack = deepest inference stack; flash = the model's "
         "code + weights (`flash_model`)."),
        "",
        ("| model | core | before | after | speed-up | stack before / after | "
         "flash before / after | bit-exact |"),
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for m in MODELS:
        for b in BOARDS:
            bf, af = models[(m, b, "before")], models[(m, b, "after")]
            lines.append(
                f"| {m} | {b} | {fmt(bf.median)} | {fmt(af.median)} | "
                f"{bf.median / af.median:.1f}x | {fmt(bf.stack)} / {fmt(af.stack)} | "
                f"{fmt(bf.flash)} / {fmt(af.flash)} | {'yes' if bf.ok and af.ok else 'NO'} |")
    lines += [
        "",
        "## Kernels alone, on the geometries of the CMSIS-NN reference figures",
        "",
        ("One kernel call (random data, input zero point -128, per-channel requantization), "
         "instructions between the markers. The last column is **copied from "
         "../shared/docs/target-notes.md, not measured here**: CMSIS-NN v7.0.0, different "
         "kernels (im2col and scratch buffers, its own loop structure), built at -Ofast while "
         "ours are at -O2. Context, not a like-for-like race."),
        "",
        "| kernel | core | before | after | speed-up | CMSIS-NN v7.0.0 -Ofast (target-notes) |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for k, c in cmsis_cases().items():
        for j, b in enumerate(ALL_CORES):
            mb, ma = micro[(k, b, "before")], micro[(k, b, "after")]
            lines.append(f"| {c.name} | {b} | {fmt(mb.instructions)} | {fmt(ma.instructions)} | "
                         f"{mb.instructions / ma.instructions:.1f}x | {fmt(CMSIS_NN[k][j])} |")
    kinds = {k: sum(c.kernel == k for c in cases) for k in KERNELS}
    lines += [
        "",
        "## Bit-exactness of every code path on its target (case table)",
        "",
        (f"{len(cases)} kernel calls ({kinds['mcu_conv2d_s8']} conv, "
         f"{kinds['mcu_depthwise_conv2d_s8']} depthwise, "
         f"{kinds['mcu_fully_connected_s8']} fully connected) in one firmware per core: "
         "model-like layers, odd channel counts, asymmetric padding, strides, dilation, depth "
         "multipliers, batches, 1x1 and C_in = 1 convolutions, filters larger than the conv patch "
         "buffer, zero-point extremes, wide shifts, no bias, and inputs, weights and outputs 0-3 "
         "bytes past a word boundary; outputs compared bit for bit with the numpy golden "
         "(emitter/kernels/). The host and QEMU tests of the repository never compile the DSP and "
         "MVE paths; this table does."),
        "",
        "| target | path | result |",
        "| --- | --- | --- |",
    ]
    for b, res in checks.items():
        result = "bit-exact" if res.ok else "MISMATCH: " + "; ".join(res.mismatches)
        lines.append(f"| {b} | {PATHS[b]} | {result} |")
    lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--baseline", default=DEFAULT_BASELINE,
                    help="git revision of the 'before' kernels (default: %(default)s)")
    ap.add_argument("--check-only", action="store_true", help="only the case-table check")
    ap.add_argument("--jobs", type=int, default=2, help="parallel builds/runs (default 2)")
    ap.add_argument("-o", "--output", default=str(OUT), help="report file (default: %(default)s)")
    args = ap.parse_args()

    after_src = tree_sources()
    pool = ThreadPoolExecutor(args.jobs)

    def in_tmp(fn: Any, *a: Any) -> Any:
        with tempfile.TemporaryDirectory(prefix="mcugen-kbench-") as tmp:
            return fn(*a, Path(tmp))

    cases = check_cases()
    check_jobs = {b: pool.submit(in_tmp, run_table, cases, b, after_src)
                  for b in ("host", *ALL_CORES)}
    checks = {b: f.result() for b, f in check_jobs.items()}
    all_ok = all(res.ok for res in checks.values())
    for b, res in checks.items():
        print(f"case table ({len(cases)} cases) on {b}: {'bit-exact' if res.ok else 'MISMATCH'}"
              + "".join(f"\n    {m}" for m in res.mismatches))
    if args.check_only:
        return 0 if all_ok else 1

    before_src = baseline_sources(args.baseline)
    variants = (("before", before_src), ("after", after_src))
    micro_jobs = {(k, b, which): pool.submit(in_tmp, run_table, [c], b, src)
                  for k, c in cmsis_cases().items() for b in ALL_CORES for which, src in variants}
    model_jobs = {(m, b, which): pool.submit(model_figure, m, b, src)
                  for m in MODELS for b in BOARDS for which, src in variants}
    micro = {k: f.result() for k, f in micro_jobs.items()}
    models = {k: f.result() for k, f in model_jobs.items()}
    for key, fig in models.items():
        all_ok &= fig.ok
        print(f"{key}: {fmt(fig.median)} ({'bit-exact' if fig.ok else 'MISMATCH'})")
    for key, res in micro.items():
        all_ok &= res.ok
        print(f"{key}: {fmt(res.instructions)} ({'bit-exact' if res.ok else 'MISMATCH'})")

    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline],
                         capture_output=True, text=True, check=True).stdout.strip()
    Path(args.output).write_text(report(rev, cases, checks, models, micro))
    print(f"wrote {args.output}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
