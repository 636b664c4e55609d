"""mcu_batch_matmul_s8: host C kernel == numpy golden (emitter/kernels/mcu_batch_matmul_s8.py), bit
for bit, over shapes, batch broadcast, either operand transposed, zero points and both roundings;
the golden within 1 quantum of float; the twin's path() and buffer_size() == the C queries;
invalid parameters -> MCU_ERR_ARG with the output untouched. (The DSP and MVE paths run in QEMU:
tests/test_batch_matmul.py.)"""
from __future__ import annotations

import ctypes
import dataclasses
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_batch_matmul_s8 import (
    BatchMatMulParams,
    Strides,
    buffer_size,
    dense,
    mcu_batch_matmul_s8,
    path,
)
from emitter.quant import ROUND_NEAREST_EVEN, ROUND_NEAREST_NO_TIE, ROUND_TFLITE, quantize_multiplier
from tests.harness.ckernels import MCU_ERR_ARG, MCU_OK, call_raw, scratch_context

ISAS = {"c": 0, "dsp": 1, "mve": 2}


class Case(NamedTuple):
    lhs: tuple[int, int, int, int] = (1, 1, 4, 8)  # n, h, M, K
    rhs: tuple[int, int, int, int] = (1, 1, 8, 5)  # n, h, K, N
    lhs_t: int = 0
    rhs_t: int = 0
    zp_a: int = 3
    zp_b: int = -7
    zp_out: int = 2
    scale: float = 0.003  # lhs_scale * rhs_scale / out_scale
    act: tuple[int, int] = (-128, 127)
    rounding: int = ROUND_TFLITE
    heads: bool = False  # each operand [1, H, R, C] stored [R, H, C] (a multi-head split's view)


CASES = {
    "2d": Case(),
    "odd": Case((1, 1, 7, 13), (1, 1, 13, 11)),
    "k1": Case((1, 1, 6, 1), (1, 1, 1, 4)),
    "m1": Case((1, 1, 1, 16), (1, 1, 16, 9)),
    "batch": Case((2, 3, 5, 8), (2, 3, 8, 6)),
    "bcast_rhs": Case((2, 3, 5, 8), (1, 3, 8, 6)),
    "bcast_lhs": Case((1, 1, 4, 8), (2, 3, 8, 5)),
    "bcast_cross": Case((2, 1, 5, 8), (1, 3, 8, 6)),
    "rhs_t": Case((1, 2, 5, 8), (1, 2, 8, 6), rhs_t=1),
    "lhs_t": Case((1, 2, 5, 8), (1, 2, 8, 6), lhs_t=1),
    "both_t": Case((2, 1, 7, 9), (2, 1, 9, 5), lhs_t=1, rhs_t=1),
    "zp_extremes": Case(zp_a=-128, zp_b=127, zp_out=-128),
    "zp_extremes_2": Case(zp_a=127, zp_b=-128, zp_out=127),
    "zero_zps": Case(zp_a=0, zp_b=0, zp_out=0),
    "big_scale": Case(scale=1.7),  # shift > 0
    "tiny_scale": Case(scale=1e-6),
    "relu": Case(zp_out=-20, act=(-20, 127)),
    "rne": Case((1, 2, 5, 8), (1, 2, 8, 6), rhs_t=1, rounding=ROUND_NEAREST_EVEN),
    "no_tie": Case((1, 2, 5, 8), (1, 2, 8, 6), rhs_t=1, rounding=ROUND_NEAREST_NO_TIE),
    "long_k": Case((1, 1, 3, 1000), (1, 1, 1000, 4), rhs_t=1, scale=1e-5),
    "heads": Case((1, 3, 5, 8), (1, 3, 8, 6), heads=True),
    "heads_rhs_t": Case((1, 3, 5, 20), (1, 3, 20, 7), rhs_t=1, heads=True),
    "heads_both_t_bcast": Case((1, 1, 5, 8), (1, 3, 8, 6), lhs_t=1, rhs_t=1, heads=True),
}


def strides(d: Dims, transposed: int, heads: bool) -> Strides:
    """Dense, or with `heads` the [n = 1, H, R, C] operand (stored rows R, C; transposed: C, R)
    stored as [R, H, C]: rows H * C apart, heads C apart."""
    if not heads:
        return dense(d, transposed)
    rows, cols = (d.c, d.w) if transposed else (d.w, d.c)
    return Strides(d.h * rows * cols, cols, d.h * cols)


def params(c: Case) -> BatchMatMulParams:
    mult, shift = quantize_multiplier(c.scale)
    out = (max(c.lhs[0], c.rhs[0]), max(c.lhs[1], c.rhs[1]), c.lhs[2], c.rhs[3])
    la, lb = Dims(*c.lhs), Dims(*c.rhs)
    return BatchMatMulParams(la, lb, Dims(*out), c.lhs_t, c.rhs_t, -c.zp_b,
                             QuantIO(-c.zp_a, c.zp_out, *c.act, c.rounding), mult, shift,
                             strides(la, c.lhs_t, c.heads), strides(lb, c.rhs_t, c.heads))


def operands(c: Case, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    a = rng.integers(-128, 128, int(np.prod(c.lhs)), dtype=np.int8)
    b = rng.integers(-128, 128, int(np.prod(c.rhs)), dtype=np.int8)
    return a, b


def run_c(p: BatchMatMulParams, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ctx, _keep = scratch_context(buffer_size(p, None, "c"))
    out = np.empty(p.output.n * p.output.h * p.output.w * p.output.c, np.int8)
    out[...] = 0x5A
    status = call_raw("mcu_batch_matmul_s8", ctypes.byref(ctx), p, a, b, out)
    assert status == MCU_OK, f"mcu_batch_matmul_s8 returned {status}"
    return out


def logical(data: np.ndarray, d: Dims, transposed: int, heads: bool) -> np.ndarray:
    """The logical [n, h, R, C] operand from its stored bytes (numpy reshapes, not the twin's strides)."""
    rows, cols = (d.c, d.w) if transposed else (d.w, d.c)
    v = data.reshape(rows, d.h, cols).transpose(1, 0, 2)[None] if heads else data.reshape(d.n, d.h, rows, cols)
    return v.swapaxes(2, 3) if transposed else v


def float_reference(c: Case, p: BatchMatMulParams, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x = logical(a, p.lhs, c.lhs_t, c.heads)
    y = logical(b, p.rhs, c.rhs_t, c.heads)
    real = (x.astype(np.float64) - c.zp_a) @ (y.astype(np.float64) - c.zp_b) * c.scale
    return np.clip(np.round(real) + c.zp_out, *c.act).ravel()


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    c = CASES[name]
    p = params(c)
    a, b = operands(c, np.random.default_rng(sum(map(ord, name))))
    want = mcu_batch_matmul_s8(p, a, b).ravel()
    np.testing.assert_array_equal(run_c(p, a, b), want)
    assert np.abs(want.astype(np.int64) - float_reference(c, p, a, b)).max() <= 1


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 9), k=st.integers(1, 40), n=st.integers(1, 9),
       b0=st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 2)]), b1=st.sampled_from([(1, 1), (3, 1), (1, 3), (3, 3)]),
       lhs_t=st.integers(0, 1), rhs_t=st.integers(0, 1),
       zps=st.tuples(st.integers(-128, 127), st.integers(-128, 127), st.integers(-128, 127)),
       log_scale=st.floats(-14, 1), rne=st.booleans(), seed=st.integers(0, 2**16))
def test_property_golden_equals_c(m, k, n, b0, b1, lhs_t, rhs_t, zps, log_scale, rne, seed) -> None:
    c = Case((b0[0], b1[0], m, k), (b0[1], b1[1], k, n), lhs_t, rhs_t, *zps, scale=2.0 ** log_scale,
             rounding=ROUND_NEAREST_EVEN if rne else ROUND_TFLITE)
    p = params(c)
    a, b = operands(c, np.random.default_rng(seed))
    np.testing.assert_array_equal(run_c(p, a, b), mcu_batch_matmul_s8(p, a, b).ravel())


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("isa", list(ISAS))
def test_path_and_scratch_match_c(name: str, isa: str) -> None:
    p = params(CASES[name])
    want = {"generic": 0, "dsp": 1, "mve": 2}[path(p, None, isa)]
    assert call_raw("mcu_batch_matmul_s8_path", p, ISAS[isa]) == want
    assert call_raw("mcu_batch_matmul_s8_get_buffer_size", p, ISAS[isa]) == buffer_size(p, None, isa)


INVALID = {
    "k_mismatch": lambda p: dataclasses.replace(p, rhs=dataclasses.replace(p.rhs, w=p.rhs.w + 1)),
    "out_n_mismatch": lambda p: dataclasses.replace(p, output=dataclasses.replace(p.output, c=p.output.c + 1)),
    "batch_no_bcast": lambda p: dataclasses.replace(p, lhs=dataclasses.replace(p.lhs, n=2),
                                                    output=dataclasses.replace(p.output, n=3)),
    "k_zero": lambda p: dataclasses.replace(p, lhs=dataclasses.replace(p.lhs, c=0),
                                            rhs=dataclasses.replace(p.rhs, w=0)),
    "k_too_long": lambda p: dataclasses.replace(p, lhs=dataclasses.replace(p.lhs, c=16385),
                                                rhs=dataclasses.replace(p.rhs, w=16385)),
    "flag_2": lambda p: dataclasses.replace(p, rhs_transposed=2),
    "rhs_offset": lambda p: dataclasses.replace(p, rhs_offset=129),
    "row_stride": lambda p: dataclasses.replace(p, lhs_strides=dataclasses.replace(p.lhs_strides, row=p.lhs.c - 1)),
    "batch_stride": lambda p: dataclasses.replace(p, rhs_strides=dataclasses.replace(p.rhs_strides, n=-1)),
    "shift": lambda p: dataclasses.replace(p, shift=31),
    "act_range": lambda p: dataclasses.replace(p, q=dataclasses.replace(p.q, act_min=5, act_max=4)),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p = INVALID[name](params(Case()))
    a = np.zeros(64, np.int8)
    out = np.full(64, 0x5A, np.int8)
    ctx, _keep = scratch_context(4096)
    assert call_raw("mcu_batch_matmul_s8", ctypes.byref(ctx), p, a, a, out) == MCU_ERR_ARG
    assert (out == 0x5A).all()
    with pytest.raises(ValueError):
        mcu_batch_matmul_s8(p, a, a)
