"""4-bit weights (issue 24): the front end (INT4/UINT4 DequantizeLinear constants, refusals), the
kernel mcu_fully_connected_s4 against its golden on host and in QEMU, int4 models bit-exact with
the golden on host and in QEMU and within onnxruntime's drift, and their flash (docs/int4.md)."""
from __future__ import annotations

import ctypes
from typing import Any, NamedTuple

import numpy as np
import pytest

from emitter.kernels.common import QuantIO
from emitter.kernels.mcu_fully_connected_s4 import (
    mcu_fully_connected_s4,
    pack_weights,
    unpack_weights,
)
from emitter.kernels.mcu_fully_connected_s8 import FCParams, kernel_sums
from tests.harness.ckernels import MCU_ERR_ARG, MCU_OK, call_raw, realistic_multipliers, scratch_context

# -- the kernel ------------------------------------------------------------------------------


class FcCase(NamedTuple):
    batches: int
    k: int
    n: int
    per_channel: bool
    zp_in: int = 0
    zp_out: int = 0
    act: tuple[int, int] = (-128, 127)
    rounding: int = 0


def fc_case(case: FcCase, rng: np.random.Generator) -> tuple[FCParams, list[Any]]:
    channels = case.n if case.per_channel else 1
    mult, shift = realistic_multipliers(rng, channels, case.k)
    p = FCParams(case.batches, case.k, case.n, QuantIO(-case.zp_in, case.zp_out, *case.act, case.rounding),
                 int(case.per_channel), mult, shift)
    x = rng.integers(-128, 128, (case.batches, case.k), dtype=np.int8)
    w = rng.integers(-8, 8, (case.n, case.k), dtype=np.int8)
    b = rng.integers(-(1 << 12), 1 << 12, case.n).astype(np.int32)
    return p, [x, w, b]


def check_fc(p: FCParams, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> None:
    expected = mcu_fully_connected_s4(p, x, w, b)
    ctx, _keep = scratch_context(0)
    got = np.full((p.batches, p.out_features), 0x5A, dtype=np.int8)
    sums = kernel_sums(p, w, b)
    assert call_raw("mcu_fully_connected_s4", ctypes.byref(ctx), p, x, pack_weights(w), sums, got) == MCU_OK
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("n,k", [(1, 1), (4, 32), (5, 33), (9, 49), (8, 64), (3, 17), (11, 100), (4, 2)])
def test_layout_round_trip(n: int, k: int) -> None:
    w = np.random.default_rng(n * k).integers(-8, 8, (n, k)).astype(np.int8)
    packed = pack_weights(w)
    assert packed.dtype == np.uint8 and packed.size == n * ((k + 1) // 2)
    np.testing.assert_array_equal(unpack_weights(packed, n, k), w)
    if n >= 4 and k >= 32:  # byte j of row 0's first chunk: weight j low, weight j + 16 high (+ 8)
        u = w[0].astype(np.int32) + 8
        np.testing.assert_array_equal(packed[:16], u[:16] | (u[16:32] << 4))


def random_fc_cases(count: int, seed: int) -> list[FcCase]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        lo, hi = sorted(int(v) for v in rng.integers(-128, 128, 2))
        out.append(FcCase(int(rng.integers(1, 4)), int(rng.integers(1, 140)), int(rng.integers(1, 14)),
                          bool(i % 2), int(rng.integers(-128, 128)), int(rng.integers(-128, 128)),
                          (lo, hi) if i % 3 else (-128, 127), int(i % 4 == 3)))
    return out


FC_CASES = [FcCase(1, 1, 1, False), FcCase(1, 32, 4, True), FcCase(2, 33, 5, False, 7, -3),
            FcCase(1, 49, 31, True, -128, 127), FcCase(3, 17, 9, False), FcCase(1, 64, 8, True, 0, 0, (-5, 60)),
            FcCase(2, 255, 7, True, 12, 0, (-128, 127), 1), *random_fc_cases(24, 7)]


@pytest.mark.parametrize("case", FC_CASES, ids=[f"b{c.batches}_k{c.k}_n{c.n}_{'pc' if c.per_channel else 'pt'}"
                                                f"_r{c.rounding}" for c in FC_CASES])
def test_kernel_equals_golden(case: FcCase) -> None:
    """The host C (generic path, UBSan) == the golden over odd K and N, per tensor and per channel,
    both roundings."""
    p, (x, w, b) = fc_case(case, np.random.default_rng(case.k * 31 + case.n))
    check_fc(p, x, w, b)


def test_kernel_extremes_and_null_sums() -> None:
    """Largest products (x = -128, w = -8 on every input), no bias with input offset 0 (NULL sums)."""
    p, (x, w, b) = fc_case(FcCase(2, 301, 6, True, -128), np.random.default_rng(3))
    check_fc(p, np.full_like(x, -128), np.full_like(w, -8), b)
    check_fc(p, np.full_like(x, 127), np.full_like(w, 7), b)
    p, (x, w, _) = fc_case(FcCase(2, 45, 6, False), np.random.default_rng(4))
    expected = mcu_fully_connected_s4(p, x, w, None)
    got = np.zeros_like(expected)
    ctx, _keep = scratch_context(0)
    assert call_raw("mcu_fully_connected_s4", ctypes.byref(ctx), p, x, pack_weights(w), None, got) == MCU_OK
    np.testing.assert_array_equal(got, expected)


def test_kernel_invalid_params() -> None:
    p, (x, w, b) = fc_case(FcCase(1, 20, 4, True), np.random.default_rng(5))
    out = np.full((1, 4), 0x5A, dtype=np.int8)
    ctx, _keep = scratch_context(0)
    bad = FCParams(p.batches, 0, p.out_features, p.q, p.per_channel, p.multiplier, p.shift)
    assert call_raw("mcu_fully_connected_s4", ctypes.byref(ctx), bad, x, pack_weights(w), None, out) == MCU_ERR_ARG
    assert (out == 0x5A).all()
