"""int16 activations (TFLite's int16x8 mode) of the table ops: the Prepare of Sigmoid and Tanh over int16,
called from emitter/ops/lut.py and softmax.py (their A16).

    # lut Sigmoid (int16) -> mcu_sigmoid_s16      # lut Tanh (int16) -> mcu_tanh_s16
    # softmax (int16)     -> mcu_softmax_s16

Input rescale (TFLite Micro's int16 LOGISTIC/TANH Prepare, general scale): m = s_in * 3 * 4096, doubled
while m <= 32767 / 2 (at most 31 times); multiplier = (int)m, the doublings the right shift. TFLite's
power-of-two branch (s_in = 2^-12, and 2^-11 for tanh: multiplier 3 << shift, no shift) gives the same
input for every int16 code, so it is not a separate case here.
Table: 256 uint16 entries, t[i] = round(65536 sigmoid(i/24) + (e[i-1] + e[i]) / 4) with e[k] the sag of
the chord of step k at its midpoint (half the interpolation error moved onto the nodes), t[255] = 65535:
this formula reproduces TFLite's published table entry for entry.
Output: TFLite's rule (mode 0) when the output quantization is exactly TFLite's (scale 2^-15, zero point 0);
any other scale (onnxruntime calibrates Sigmoid/Tanh outputs: 1/33350, 1/32788, ...) requantizes the
kernel's unrounded Q0.25 (sigmoid) / Q0.23 (tanh) value once (mode 1): no float at run time, no second table.
Softmax: TFLite's int16 Prepare: input multiplier of s_in / (10 / 65535) (QuantizeMultiplier), two 513-entry
tables from TFLite's gen_lut (in double precision): exp over [-10, 0] and 1 / (1 + x) over [0, 1], values in
[-1, 1) as Q0.15, each entry lowered by half its midpoint interpolation error. Output: TFLite's (scale 2^-15)
in mode 0; another scale (onnxruntime: 1/32767) requantizes the unrounded product exp * (1 / sum) (mode 1).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import numpy as np

from emitter.calls import ConstArg, Prepared, TensorArg
from emitter.errors import NodeUnsupported
from emitter.ir import Graph, Node
from emitter.kernels.mcu_sigmoid_s16 import TABLE_SIZE, ActivationS16Params, mcu_sigmoid_s16
from emitter.kernels.mcu_softmax_s16 import LUT_SIZE, MAX_ROW, SoftmaxS16Params, mcu_softmax_s16
from emitter.kernels.mcu_tanh_s16 import mcu_tanh_s16
from emitter.quant import quantize_multiplier, round_half_away

TFLITE_OUT_SCALE = 2.0 ** -15
LUT_FUNCTIONS = ("Sigmoid", "Tanh")
# function -> (kernel, golden, fraction bits of the kernel's unrounded output)
KERNELS: dict[str, tuple[str, Callable[..., np.ndarray], int]] = {
    "Sigmoid": ("mcu_sigmoid_s16", mcu_sigmoid_s16, 25), "Tanh": ("mcu_tanh_s16", mcu_tanh_s16, 23)}


@cache
def sigmoid_table() -> np.ndarray:
    def f(i: float) -> float:
        return 65536.0 / (1.0 + math.exp(-i / 24.0))

    def sag(k: int) -> float:  # the sigmoid above the chord of step k, at its midpoint
        return f(k + 0.5) - (f(k) + f(k + 1)) / 2

    t = [min(65535, round_half_away(f(i) + (sag(i - 1) + sag(i)) / 4)) for i in range(TABLE_SIZE)]
    t[TABLE_SIZE - 1] = 65535
    return np.array(t, np.uint16)


def input_rescale(s_in: float) -> tuple[int, int]:
    """TFLite Micro's int16 LOGISTIC/TANH Prepare: (multiplier, right shift) to 1/(3 * 4096) units."""
    m = float(np.float32(s_in)) * 4096.0 * 3.0
    shift = 0
    while m <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        m *= 2.0
    return int(m), shift


def lut_rule(node: Node, g: Graph) -> Prepared:
    fn_name = node.attrs["function"]  # one of LUT_FUNCTIONS (emitter/ops/lut.py refuses the others)
    kernel, fn, frac_bits = KERNELS[fn_name]
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    assert x.quant is not None and y.quant is not None
    multiplier, shift = input_rescale(x.quant.s)
    if multiplier > 32767:
        raise NodeUnsupported(f"int16 {fn_name}: input scale {x.quant.s:.6g} is above TFLite's limit (2.67) for "
                              "its table input; quantize the input with a smaller range")
    s_out = float(np.float32(y.quant.s))
    mode, out_mult, out_shift = 0, 0, 0
    if s_out != TFLITE_OUT_SCALE:
        mode = 1
        out_mult, out_shift = quantize_multiplier(2.0 ** -frac_bits / s_out)
        if out_shift > 0:
            raise NodeUnsupported(f"int16 {fn_name}: output scale {s_out:.6g} is finer than 2^-{frac_bits}, the "
                                  "kernel's own resolution; use an output scale of at least 2^-15")
    p = ActivationS16Params(y.size, multiplier, shift, mode, out_mult, out_shift,
                            int(node.attrs["act_min"]), int(node.attrs["act_max"]))
    table = sigmoid_table()

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return fn(p, table, env[x.name])

    return Prepared(kernel, p, {"table": ConstArg("table", table), "input": TensorArg(x.name),
                                "output": TensorArg(y.name)}, golden,
                    summary=f"{fn_name}, output mode {mode}" + (" (TFLite's 2^-15)" if mode == 0 else " (requantized)"))


def gen_lut(func: Callable[[float], float], lo: float, hi: float) -> np.ndarray:
    """TFLite's gen_lut for int16 in and out over [lo, hi], outputs in [-1, 1): 512 steps and the end point."""
    steps = LUT_SIZE - 1
    step = (hi - lo) / steps
    inv = 65536.0 / 2.0
    out = []
    for i in range(steps):
        val, mid, nxt = func(lo + i * step), func(lo + i * step + step / 2), func(lo + (i + 1) * step)
        sample = round_half_away(val * inv)
        midpoint_err = round_half_away((nxt * inv + sample) / 2) - round_half_away(mid * inv)
        out.append(sample - round_half_away(midpoint_err / 2))
    out.append(round_half_away(func(hi) * inv))
    return np.clip(np.array(out, np.int64), -32768, 32767).astype(np.int16)


@cache
def softmax_tables() -> tuple[np.ndarray, np.ndarray]:
    """(exp over [-10, 0], 1 / (1 + x) over [0, 1]): TFLite's int16 softmax tables."""
    return gen_lut(math.exp, -10.0, 0.0), gen_lut(lambda v: 1.0 / (1.0 + v), 0.0, 1.0)


def softmax_rule(node: Node, g: Graph) -> Prepared:
    x, y = g.t(node.inputs[0]), g.t(node.outputs[0])
    assert x.quant is not None and y.quant is not None
    row_size = node.attrs["row_size"]
    if row_size > MAX_ROW:
        raise NodeUnsupported(f"int16 Softmax over rows of {row_size} elements: at most {MAX_ROW}")
    mult, shift = quantize_multiplier(float(np.float32(x.quant.s)) / (10.0 / 65535.0))
    if shift > 15:
        raise NodeUnsupported(f"int16 Softmax: input scale {x.quant.s:.6g} is too large (the scaled difference to "
                              "the row maximum overflows); quantize the input with a smaller range")
    s_out = float(np.float32(y.quant.s))
    mode, out_mult, out_shift = 0, 0, 0
    if s_out != TFLITE_OUT_SCALE:
        mode = 1
        out_mult, out_shift = quantize_multiplier(2.0 ** -15 / s_out)
        if out_shift > 14:
            raise NodeUnsupported(f"int16 Softmax: output scale {s_out:.6g} is finer than the kernel's 2^-29")
    p = SoftmaxS16Params(x.size // row_size, row_size, mult, shift, mode, out_mult, out_shift)
    exp_lut, recip_lut = softmax_tables()

    def golden(env: dict[str, np.ndarray]) -> np.ndarray:
        return mcu_softmax_s16(p, exp_lut, recip_lut, env[x.name])

    return Prepared("mcu_softmax_s16", p, {"exp_lut": ConstArg("exp_lut", exp_lut),
                                           "recip_lut": ConstArg("recip_lut", recip_lut),
                                           "input": TensorArg(x.name), "output": TensorArg(y.name)}, golden,
                    summary=f"{p.rows} rows of {row_size}, output mode {mode}"
                    + (" (TFLite's 2^-15)" if mode == 0 else " (requantized)"))
