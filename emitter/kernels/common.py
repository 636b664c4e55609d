"""C struct twins shared by several kernels (mcu_dims_t, mcu_quant_io_t, mcu_bcast_t,
mcu_pool_params_t, MCU_MAX_RANK) and the golden helpers their kernels share.

Same field names, same order as mcu_runtime/include/mcu_nn.h. A nested dataclass renders as a nested
designated initializer; an np.ndarray field as a `static const` array in flash whose address the
struct holds; a tuple as an inline C array of MCU_MAX_RANK entries; a float field as an exact
float32 literal.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from emitter.kernels.base import Rounded, Window, Windowed
from emitter.quant import ROUND_TFLITE, requantize, requantize_rne, wrap_int32

MAX_RANK = 6  # MCU_MAX_RANK


@dataclass(frozen=True)
class Dims:
    CTYPE: ClassVar[str] = "mcu_dims_t"
    n: int
    h: int
    w: int
    c: int


@dataclass(frozen=True)
class QuantIO:
    """input_offset = -zp_in, output_offset = +zp_out, clamp in output domain; rounding =
    quant.ROUND_TFLITE (double rounding) or quant.ROUND_NEAREST_EVEN (onnxruntime numerics)."""
    CTYPE: ClassVar[str] = "mcu_quant_io_t"
    input_offset: int
    output_offset: int
    act_min: int
    act_max: int
    rounding: int = 0


@dataclass(frozen=True)
class Bcast:
    """Operand index of output element i is (i // inner) % period."""
    CTYPE: ClassVar[str] = "mcu_bcast_t"
    inner: int
    period: int


@dataclass(frozen=True)
class PoolParams(Windowed, Rounded):
    """Shared by mcu_avgpool_s8, mcu_maxpool_s8 and (nested) mcu_avgpool_requant_s8."""
    CTYPE: ClassVar[str] = "mcu_pool_params_t"
    input: Dims
    output: Dims
    filter_h: int
    filter_w: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_left: int
    act_min: int
    act_max: int
    rounding: int = 0  # average pools: quant.ROUND_TFLITE or ROUND_NEAREST_EVEN; maxpool: unused

    def window(self) -> Window:
        return Window(self.input, self.output)

    def rounding_mode(self) -> int:
        return self.rounding


def pad_rank(values: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """Pad a per-axis tuple to MCU_MAX_RANK entries, as the C structs hold them."""
    values = tuple(int(v) for v in values)
    if len(values) > MAX_RANK:
        raise ValueError(f"rank {len(values)} exceeds MCU_MAX_RANK={MAX_RANK}")
    return values + (0,) * (MAX_RANK - len(values))


# ---------------------------------------------------------------------------------------------
# golden helpers: the argument checks (ValueError where C returns MCU_ERR_ARG) and shared steps

def check_range(what: str, value: int, lo: int, hi: int) -> None:
    if not lo <= value <= hi:
        raise ValueError(f"{what}={value} outside [{lo}, {hi}]")


def check_shape(what: str, array: np.ndarray, expected: tuple[int, ...]) -> None:
    if tuple(array.shape) != expected:
        raise ValueError(f"{what}: expected shape {expected}, found {tuple(array.shape)}")


def dims_shape(d: Dims) -> tuple[int, int, int, int]:
    return (d.n, d.h, d.w, d.c)


def broadcast_operand(x: np.ndarray, b: Bcast, size: int, what: str) -> np.ndarray:
    """Flat int8 operand of `b.period` elements -> int64 [size]; element i is
    x[(i // inner) % period]."""
    if b.inner < 1 or b.period < 1:
        raise ValueError(f"{what}: inner={b.inner} and period={b.period} must both be >= 1")
    flat = np.asarray(x).ravel()
    if flat.size != b.period:
        raise ValueError(f"{what}: expected {b.period} elements (the period), found {flat.size}")
    return flat.astype(np.int64)[(np.arange(size, dtype=np.int64) // b.inner) % b.period]


def patches(x: np.ndarray, k_h: int, k_w: int, out_h: int, out_w: int, stride_h: int,
            stride_w: int, dilation_h: int, dilation_w: int, pad_top: int,
            pad_left: int) -> np.ndarray:
    """im2col of an int64 [N,H,W,C] map (input offset already added) -> [N,out_h,out_w,KH,KW,C].

    Taps outside the input read 0, i.e. they contribute nothing to the sum.
    """
    n, h, w, c = x.shape
    span_h = (out_h - 1) * stride_h + (k_h - 1) * dilation_h + 1
    span_w = (out_w - 1) * stride_w + (k_w - 1) * dilation_w + 1
    xp = np.pad(x, ((0, 0), (pad_top, max(0, span_h - pad_top - h)),
                    (pad_left, max(0, span_w - pad_left - w)), (0, 0)))
    taps = [xp[:, ky * dilation_h:ky * dilation_h + (out_h - 1) * stride_h + 1:stride_h,
               kx * dilation_w:kx * dilation_w + (out_w - 1) * stride_w + 1:stride_w, :]
            for ky in range(k_h) for kx in range(k_w)]
    return np.stack(taps, axis=3).reshape(n, out_h, out_w, k_h, k_w, c)


def output_stage(acc: np.ndarray, bias: np.ndarray | None, q: QuantIO, multiplier: np.ndarray,
                 shift: np.ndarray) -> np.ndarray:
    """acc [..., C] int64 -> int8: + bias, requantize per channel, + output_offset, clamp."""
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.int64)
    rq = requantize if q.rounding == ROUND_TFLITE else requantize_rne
    acc = rq(wrap_int32(acc), np.asarray(multiplier, dtype=np.int64), np.asarray(shift, dtype=np.int64))
    return np.clip(acc + q.output_offset, q.act_min, q.act_max).astype(np.int8)


def check_pool(p: PoolParams) -> None:
    """The parameter checks both pooling kernels make (ValueError where C returns MCU_ERR_ARG)."""
    i, o = p.input, p.output
    if min(i.n, i.h, i.w, i.c, o.h, o.w) < 1 or o.n != i.n or o.c != i.c:
        raise ValueError(f"pool dims disagree or are empty: input {i}, output {o}")
    if min(p.filter_h, p.filter_w, p.stride_h, p.stride_w) < 1 or min(p.pad_top, p.pad_left) < 0:
        raise ValueError(f"pool filter {p.filter_h}x{p.filter_w} / stride {p.stride_h}x"
                         f"{p.stride_w} must be >= 1, pads {p.pad_top},{p.pad_left} >= 0")
    if not -128 <= p.act_min <= p.act_max <= 127:
        raise ValueError(f"pool clamp [{p.act_min}, {p.act_max}] is not a sub-range of int8")


def global_pool_sink(p: PoolParams, row_bytes: int) -> int | None:
    """A pool whose window is its whole input (no padding, one output) can end a streamed segment,
    its input added `row_bytes` at a time into one sum per channel (mcu_runtime/support/mcu_sink.c):
    its accumulators, or None."""
    whole = (p.input.n == 1 and p.output.h == p.output.w == 1 and p.filter_h == p.input.h
             and p.filter_w == p.input.w and p.pad_top == p.pad_left == 0)
    return p.input.c if whole and row_bytes % p.input.c == 0 else None


def windows(p: PoolParams) -> list[tuple[int, int, int, int, int, int]]:
    """(out_y, out_x, y0, y1, x0, x1) per output position: the valid input rows [y0, y1) and
    columns [x0, x1) of its window (possibly empty)."""
    out = []
    for oy in range(p.output.h):
        y_origin = oy * p.stride_h - p.pad_top
        y0, y1 = max(0, y_origin), min(p.input.h, y_origin + p.filter_h)
        for ox in range(p.output.w):
            x_origin = ox * p.stride_w - p.pad_left
            x0, x1 = max(0, x_origin), min(p.input.w, x_origin + p.filter_w)
            out.append((oy, ox, y0, y1, x0, x1))
    return out


def rounding_of(params: Any) -> int:
    """The rounding mode a kernel's params carry (quant.ROUND_*): their rounding_mode() (Rounded
    params, kernels/base.py), else ROUND_TFLITE."""
    return params.rounding_mode() if isinstance(params, Rounded) else ROUND_TFLITE


def div_round(acc: np.ndarray, count: np.ndarray | int, rounding: int) -> np.ndarray:
    """acc / count (count > 0): half away from zero (ROUND_TFLITE, C's truncating division of
    acc +- count/2) or half to even."""
    acc = np.asarray(acc, np.int64)
    count = np.asarray(count, np.int64)
    if rounding == ROUND_TFLITE:
        half = count // 2
        return np.where(acc > 0, (acc + half) // count, -((half - acc) // count))
    q, r = acc // count, acc % count  # floor, remainder in [0, count)
    return q + ((2 * r > count) | ((2 * r == count) & (q % 2 == 1)))


# ---------------------------------------------------------------------------------------------
# row bands (mcu_runtime/support/mcu_band.c): the rows a band of a window kernel reads

def window_rows(o0: int, o1: int, stride: int, dilation: int, filter_h: int, pad_top: int,
                in_h: int) -> tuple[int, int, int]:
    """Output rows [o0, o1) of a window over `in_h` input rows read input rows [lo, hi); returns
    (lo, hi, the band's pad_top), as mcu_window_rows() does."""
    first = o0 * stride - pad_top
    past = (o1 - 1) * stride - pad_top + (filter_h - 1) * dilation + 1
    lo = min(max(first, 0), in_h)
    hi = max(min(past, in_h), lo)
    return lo, hi, lo - first


def check_band(o0: int, o1: int, out_h: int, lo: int, hi: int) -> None:
    if not (0 <= o0 < o1 <= out_h and lo < hi):
        raise ValueError(f"band [{o0}, {o1}) of {out_h} output rows (input rows [{lo}, {hi})) is empty "
                         "or out of range")


def window_band(p: Any, o0: int, o1: int) -> tuple[Any, int, int]:
    """The band of a convolution's params (conv2d and depthwise share the geometry fields)."""
    lo, hi, pad = window_rows(o0, o1, p.stride_h, p.dilation_h, p.filter.h, p.pad_top, p.input.h)
    check_band(o0, o1, p.output.h, lo, hi)
    return replace(p, input=replace(p.input, h=hi - lo), output=replace(p.output, h=o1 - o0), pad_top=pad), lo, hi


def pool_band(p: PoolParams, o0: int, o1: int) -> tuple[PoolParams, int, int]:
    """mcu_pool_band(): the pool parameters of output rows [o0, o1), and their input rows [lo, hi)."""
    lo, hi, pad = window_rows(o0, o1, p.stride_h, 1, p.filter_h, p.pad_top, p.input.h)
    check_band(o0, o1, p.output.h, lo, hi)
    return replace(p, input=replace(p.input, h=hi - lo), output=replace(p.output, h=o1 - o0), pad_top=pad), lo, hi
