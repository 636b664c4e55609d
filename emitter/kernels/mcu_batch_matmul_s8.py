"""Twin of mcu_batch_matmul_s8: TFLite BATCH_MATMUL int8 of two activations, batch broadcast.

  out[b, m, n] = clamp(requant(sum_k (lhs[b, m, k] + input_offset) * (rhs[b, k, n] + rhs_offset),
                       multiplier, shift) + output_offset, act_min, act_max)

over batch dims (B0, B1) where each operand's dim equals the output's or is 1. An operand stored
with its last two axes swapped (lhs [.., K, M], rhs [.., N, K]: a Transpose folded at build
time) says so in lhs_transposed / rhs_transposed; its strides (elements between batches n, h and
stored rows; a row's elements contiguous) let it be a view, e.g. the heads of a multi-head split
stored [T, H, d]. The golden reads the bytes as stored.

CMSIS-NN: arm_batch_matmul_s8 takes rhs as [.., N, K] (rows of K bytes) and lhs as [.., M, K]: it
runs a layer exactly when lhs is not transposed and rhs is, both dense, with TFLite rounding (its batch loop
handles the same (n, h) broadcast). On MVE it keeps the rhs column sums in its context: N int32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.calls import Prepared, StructArg
from emitter.kernels.base import Kernel, Rounded
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import Dims, QuantIO, check_range, output_stage
from emitter.quant import ROUND_NEAREST_NO_TIE, ROUND_TFLITE

MAX_DEPTH = 16384  # |acc| <= K * 255 * 255 < 2^30 (the DSP path's mcu_requant2), as the C checks
INLINE_COLS = 2  # MCU_BMM_INLINE_COLS (mcu_batch_matmul_s8_internal.h)


@dataclass(frozen=True)
class Strides:
    """Elements between batches n, h and stored rows of an operand (a row's elements contiguous)."""
    CTYPE: ClassVar[str] = "mcu_bmm_strides_t"
    n: int
    h: int
    row: int


@dataclass(frozen=True)
class BatchMatMulParams(Rounded):
    CTYPE: ClassVar[str] = "mcu_batch_matmul_params_t"
    lhs: Dims  # logical [B0, B1, M, K]
    rhs: Dims  # logical [B0, B1, K, N]
    output: Dims  # [B0, B1, M, N]
    lhs_transposed: int
    rhs_transposed: int
    rhs_offset: int
    q: QuantIO  # input_offset: -lhs zero point
    multiplier: int
    shift: int
    lhs_strides: Strides
    rhs_strides: Strides

    def rounding_mode(self) -> int:
        return self.q.rounding


def dense(d: Dims, transposed: int) -> Strides:
    """The strides of an operand stored contiguously: rows of d.c (d.w when transposed)."""
    return Strides(d.h * d.w * d.c, d.w * d.c, d.w if transposed else d.c)


def is_dense(p: BatchMatMulParams) -> bool:
    return p.lhs_strides == dense(p.lhs, p.lhs_transposed) and p.rhs_strides == dense(p.rhs, p.rhs_transposed)


def check(p: BatchMatMulParams) -> None:
    """The C dispatcher's parameter checks (ValueError where it returns MCU_ERR_ARG)."""
    lo, r, o = p.lhs, p.rhs, p.output
    if min(lo.n, lo.h, lo.w, lo.c, r.n, r.h, r.w, r.c) < 1 or r.w != lo.c or o.w != lo.w or o.c != r.c:
        raise ValueError(f"batch matmul dims disagree: lhs {lo}, rhs {r}, output {o}")
    for a, b, out in ((lo.n, r.n, o.n), (lo.h, r.h, o.h)):
        if a not in (1, out) or b not in (1, out):
            raise ValueError(f"batch dims {a} and {b} do not broadcast to {out}")
    check_range("K", lo.c, 1, MAX_DEPTH)
    check_range("rhs_offset", p.rhs_offset, -127, 128)
    check_range("input_offset", p.q.input_offset, -127, 128)
    check_range("shift", p.shift, -31, 30)
    check_range("output_offset", p.q.output_offset, -128, 127)
    check_range("act_min", p.q.act_min, -128, p.q.act_max)
    check_range("act_max", p.q.act_max, p.q.act_min, 127)
    for what, st, row in (("lhs", p.lhs_strides, lo.w if p.lhs_transposed else lo.c),
                          ("rhs", p.rhs_strides, r.w if p.rhs_transposed else r.c)):
        if min(st.n, st.h) < 0 or st.row < row:
            raise ValueError(f"{what} strides {st}: negative, or rows closer than their {row} elements")


def stored(data: np.ndarray, d: Dims, transposed: int, strides: Strides) -> np.ndarray:
    """The logical [n, h, R, C] operand d read from its bytes as stored (flat)."""
    flat = np.ascontiguousarray(data).ravel()
    rows, cols = (d.c, d.w) if transposed else (d.w, d.c)
    shape = (d.n, d.h, rows, cols)
    steps = (strides.n, strides.h, strides.row, 1)
    last = sum((s - 1) * st for s, st in zip(shape, steps, strict=True))
    if last >= flat.size:
        raise ValueError(f"operand {d} with strides {strides} reads element {last} of {flat.size}")
    view = np.lib.stride_tricks.as_strided(flat, shape, tuple(st * flat.itemsize for st in steps), writeable=False)
    return view.swapaxes(2, 3) if transposed else view


def mcu_batch_matmul_s8(p: BatchMatMulParams, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """int8 lhs and rhs as stored (flat or shaped) -> int8 [B0, B1, M, N]."""
    check(p)
    a = stored(lhs, p.lhs, p.lhs_transposed, p.lhs_strides)
    b = stored(rhs, p.rhs, p.rhs_transposed, p.rhs_strides)
    acc = (a.astype(np.int64) + p.q.input_offset) @ (b.astype(np.int64) + p.rhs_offset)  # broadcasts B0, B1
    return output_stage(acc, None, p.q, np.array([p.multiplier]), np.array([p.shift]))


# -- the C dispatcher's path choice and scratch size (mcu_batch_matmul_s8_path / _get_buffer_size) --
def path(p: BatchMatMulParams, bias: object, isa: str) -> str:
    """The row-by-row paths need lhs [.., M, K] and rhs as rows of K bytes (stored so, or copied
    into the scratch when M >= 2); DSP also TFLite rounding or ROUND_NEAREST_NO_TIE, shift in
    [-20, -1], multiplier >= 0."""
    if p.lhs_transposed or (not p.rhs_transposed and p.lhs.w < 2):
        return "generic"
    if isa == "mve":
        return "mve"
    if isa == "dsp" and p.q.rounding in (ROUND_TFLITE, ROUND_NEAREST_NO_TIE) and -20 <= p.shift <= -1 \
            and p.multiplier >= 0:
        return "dsp"
    return "generic"


def buffer_size(p: BatchMatMulParams, bias: object, isa: str) -> int:
    """K * N bytes (rounded up to 4) for the rhs rows when rhs is stored [K, N], + 4 N on MVE for
    the column terms of M > INLINE_COLS rows (fewer rows sum them in the main pass)."""
    kind = path(p, bias, isa)
    if kind == "generic":
        return 0
    copy = 0 if p.rhs_transposed else (p.rhs.w * p.rhs.c + 3) // 4 * 4
    return copy + (4 * p.rhs.c if kind == "mve" and p.lhs.w > INLINE_COLS else 0)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, BatchMatMulParams)
    if c.lhs_transposed or not c.rhs_transposed or not is_dense(c):
        conv.refusal = ("arm_batch_matmul_s8 reads lhs as [.., M, K] and rhs as [.., N, K] (rows of K), "
                        "contiguous; this layer stores " + ("lhs transposed" if c.lhs_transposed else
                                                            "rhs as [.., K, N]" if not c.rhs_transposed else
                                                            "an operand as a strided view"))
        return None
    if c.q.rounding != ROUND_TFLITE:
        return None
    ops = p.operands
    lo, r, o = c.lhs, c.rhs, c.output
    fc = {"input_offset": c.q.input_offset, "filter_offset": c.rhs_offset, "output_offset": c.q.output_offset,
          "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    values = {
        "bmm_params": StructArg("cmsis_nn_bmm_params", "bmm", {"adj_x": 0, "adj_y": 0, "fc_params": fc}),
        "quant_params": StructArg("cmsis_nn_per_tensor_quant_params", "quant",
                                  {"multiplier": c.multiplier, "shift": c.shift}),
        "input_lhs_dims": StructArg("cmsis_nn_dims", "lhs_dims", {"n": lo.n, "h": lo.h, "w": lo.w, "c": lo.c}),
        "input_lhs": ops["lhs"],
        "input_rhs_dims": StructArg("cmsis_nn_dims", "rhs_dims", {"n": r.n, "h": r.h, "w": r.c, "c": r.w}),
        "input_rhs": ops["rhs"],
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", {"n": o.n, "h": o.h, "w": o.w, "c": o.c}),
        "output": ops["output"]}
    return conv.call(p, "arm_batch_matmul_s8", values)


KERNEL = Kernel("mcu_batch_matmul_s8", buffer_size=buffer_size, path=path, to_cmsis=to_cmsis)
