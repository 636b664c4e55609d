"""mcu_fully_connected_s8: host C kernel == its C reference (mcu_fully_connected_s8_ref.c) == numpy
golden (emitter/kernels/mcu_fully_connected_s8.py), bit for bit. The C gets the weights in the
block layout and the kernel sums (the twin's pack_weights / kernel_sums), the golden the logical
weights and bias."""
from __future__ import annotations

import ctypes
import dataclasses
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.common import QuantIO
from emitter.kernels.mcu_fully_connected_s8 import (
    FCParams,
    kernel_sums,
    mcu_fully_connected_s8,
    pack_weights,
    unpack_weights,
)
from tests.harness.ckernels import (
    MCU_ERR_ARG,
    MCU_OK,
    call_kernel,
    call_raw,
    realistic_multipliers,
    scratch_context,
    wide_multipliers,
)


class Case(NamedTuple):
    batches: int = 1
    k: int = 16
    n: int = 8
    per_channel: bool = True
    zp_in: int = 0
    zp_out: int = 0
    act: tuple[int, int] = (-128, 127)
    bias: bool = True
    wide_shifts: bool = False


CASES = {
    "vector": Case(),
    "batches3": Case(batches=3, k=20, n=5),
    "batches8": Case(batches=8, k=64, n=10),
    "k1": Case(k=1, n=4),
    "n1": Case(k=33, n=1),
    "k_large": Case(k=1000, n=6),
    "per_tensor": Case(batches=2, per_channel=False),
    "per_tensor_n1": Case(n=1, per_channel=False),
    "zp_in_-128_zp_out_127": Case(batches=2, zp_in=-128, zp_out=127),
    "zp_in_127_zp_out_-128": Case(batches=2, zp_in=127, zp_out=-128),
    "wide_shifts": Case(batches=4, n=24, wide_shifts=True),
    "wide_shifts_per_tensor": Case(batches=4, n=5, wide_shifts=True, per_channel=False),
    "relu": Case(zp_out=-5, act=(-5, 127)),
    "narrow_act": Case(batches=2, act=(-10, 20)),
    "no_bias": Case(batches=2, bias=False),
    "no_bias_zp": Case(batches=2, bias=False, zp_in=-7),
    "blocks_tail": Case(k=37, n=11),
    "chunks_only": Case(k=64, n=8, per_channel=False),
    "k8_n128": Case(k=8, n=128, per_channel=False, zp_in=-128),
    "k640_n12": Case(k=640, n=12, per_channel=False, zp_in=5),
    "k3_n4": Case(k=3, n=4),
    "k1_n16_per_tensor": Case(k=1, n=16, per_channel=False),
    "k2_n7_batches3": Case(batches=3, k=2, n=7),
    "k16_n1_per_tensor_batches2": Case(batches=2, k=16, n=1, per_channel=False),
    "k47_n3_batches2": Case(batches=2, k=47, n=3),
    "k17_n6_per_tensor": Case(batches=2, k=17, n=6, per_channel=False),
}


def build(case: Case, rng: np.random.Generator) -> tuple[FCParams, list[Any]]:
    channels = case.n if case.per_channel else 1
    if case.wide_shifts:
        mult, shift = wide_multipliers(rng, channels)
    else:
        mult, shift = realistic_multipliers(rng, channels, case.k)
    p = FCParams(batches=case.batches, in_features=case.k, out_features=case.n,
                 q=QuantIO(-case.zp_in, case.zp_out, *case.act),
                 per_channel=int(case.per_channel), multiplier=mult, shift=shift)
    x = rng.integers(-128, 128, (case.batches, case.k), dtype=np.int8)
    w = rng.integers(-128, 128, (case.n, case.k), dtype=np.int8)
    b = rng.integers(-(1 << 13), 1 << 13, case.n).astype(np.int32) if case.bias else None
    return p, [x, w, b]


def c_operands(p: FCParams, inputs: list[Any]) -> list[Any]:
    """[x, w, bias] -> what the C kernel takes: [x, packed w, kernel sums]."""
    x, w, b = inputs
    return [x, pack_weights(w), kernel_sums(p, w, b)]


def check(p: FCParams, inputs: list[Any]) -> None:
    expected = mcu_fully_connected_s8(p, *inputs)
    c_in = c_operands(p, inputs)
    ctx, _keep = scratch_context(0)  # no scratch on any isa
    got = np.full((p.batches, p.out_features), 0x5A, dtype=np.int8)
    assert call_raw("mcu_fully_connected_s8", ctypes.byref(ctx), p, *c_in, got) == MCU_OK
    np.testing.assert_array_equal(got, expected)
    ref = call_kernel("mcu_fully_connected_s8_ref", p, c_in, (p.batches, p.out_features))
    np.testing.assert_array_equal(ref, expected)
    if inputs[2] is None and p.q.input_offset == 0:  # NULL kernel sums: all zero
        assert call_raw("mcu_fully_connected_s8", ctypes.byref(ctx), p, c_in[0], c_in[1], None, got) == MCU_OK
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("n,k", [(1, 1), (4, 16), (5, 17), (8, 33), (7, 3), (12, 48), (3, 40)])
def test_layout_round_trip(n: int, k: int) -> None:
    """pack_weights is a permutation, undone by unpack_weights; a block's first chunk is the four
    rows' first 16 weights one after the other."""
    w = np.arange(n * k).reshape(n, k)
    packed = pack_weights(w)
    assert sorted(packed.tolist()) == list(range(n * k))
    np.testing.assert_array_equal(unpack_weights(packed, n, k), w)
    if n >= 4 and k >= 16:
        np.testing.assert_array_equal(packed[:64], w[:4, :16].ravel())


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    rng = np.random.default_rng(sum(map(ord, name)))
    check(*build(CASES[name], rng))


def test_known_values() -> None:
    """A hand-computed case: out = round((x + 3) . w * 0.25) + 1, ties away from zero."""
    p = FCParams(batches=2, in_features=3, out_features=2, q=QuantIO(3, 1, -128, 127),
                 per_channel=0, multiplier=np.array([1 << 30], dtype=np.int32),
                 shift=np.array([-1], dtype=np.int32))
    x = np.array([[-3, -2, -1], [0, 1, 2]], dtype=np.int8)   # + 3 -> [0 1 2], [3 4 5]
    w = np.array([[1, 1, 1], [1, -1, 0]], dtype=np.int8)
    bias = np.array([0, 1], dtype=np.int32)
    # acc = [[3, 0], [12, 0]]; * 0.25 -> [[0.75, 0], [3, 0]] -> [[1, 0], [3, 0]]; + 1
    expected = np.array([[2, 1], [4, 1]], dtype=np.int8)
    np.testing.assert_array_equal(mcu_fully_connected_s8(p, x, w, bias), expected)
    check(p, [x, w, bias])


def test_extreme_values() -> None:
    rng = np.random.default_rng(5)
    for zp_in, x_val, w_val in [(-128, 127, -128), (127, -128, -128), (-128, -128, 127)]:
        p, (x, w, b) = build(Case(batches=2, k=300, zp_in=zp_in), rng)
        check(p, [np.full_like(x, x_val), np.full_like(w, w_val), b])


@st.composite
def cases(draw: st.DrawFn) -> Case:
    return Case(
        batches=draw(st.integers(1, 4)), k=draw(st.integers(1, 80)), n=draw(st.integers(1, 12)),
        per_channel=draw(st.booleans()),
        zp_in=draw(st.integers(-128, 127)), zp_out=draw(st.integers(-128, 127)),
        act=tuple(sorted(draw(st.integers(-128, 127)) for _ in range(2))),  # type: ignore[arg-type]
        bias=draw(st.booleans()), wide_shifts=draw(st.booleans()))


@settings(max_examples=150, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_property_golden_equals_c(case: Case, seed: int) -> None:
    check(*build(case, np.random.default_rng(seed)))


INVALID = {
    "batches_0": lambda p: dataclasses.replace(p, batches=0),
    "in_features_0": lambda p: dataclasses.replace(p, in_features=0),
    "out_features_-1": lambda p: dataclasses.replace(p, out_features=-1),
    "per_channel_2": lambda p: dataclasses.replace(p, per_channel=2),
    "act_min_gt_act_max": lambda p: dataclasses.replace(p, q=QuantIO(0, 0, 3, 2)),
    "act_max_200": lambda p: dataclasses.replace(p, q=QuantIO(0, 0, -128, 200)),
    "input_offset_-128": lambda p: dataclasses.replace(p, q=QuantIO(-128, 0, -128, 127)),
    "shift_-32": lambda p: dataclasses.replace(
        p, shift=np.where(np.arange(p.out_features) == 3, -32, p.shift).astype(np.int32)),
    "null_multiplier": lambda p: dataclasses.replace(p, multiplier=None),
    "null_shift": lambda p: dataclasses.replace(p, shift=None),
}


@pytest.mark.parametrize("name", [*INVALID, "null_params", "null_input", "null_weights",
                                  "null_output"])
def test_invalid_params(name: str) -> None:
    p, (x, w, b) = build(Case(batches=2), np.random.default_rng(0))
    out = np.full((p.batches, p.out_features), 0x5A, dtype=np.int8)
    ctx, _keep = scratch_context(0)
    args: dict[str, Any] = {"ctx": ctypes.byref(ctx), "params": p, "input": x, "weights": pack_weights(w),
                            "kernel_sums": kernel_sums(p, w, b), "output": out}
    if name in INVALID:
        args["params"] = INVALID[name](p)
    else:
        args[name.removeprefix("null_")] = None
    assert call_raw("mcu_fully_connected_s8", *args.values()) == MCU_ERR_ARG
    assert (out == 0x5A).all(), "output written despite invalid params"
