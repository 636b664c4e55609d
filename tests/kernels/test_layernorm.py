"""mcu_layernorm_s8 (integer LayerNormalization): host C kernel == numpy golden
(emitter/kernels/mcu_layernorm_s8.py) bit for bit, also in place; the golden within 1 quantum of
float64 LayerNormalization + QuantizeLinear (round half to even) over a case table and random
params; the params builder's refusals (QuantError: the float island takes the layer); invalid params
-> MCU_ERR_ARG with the output untouched; warning-free cross-compiles without floating point."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.errors import QuantError
from emitter.kernels.mcu_layernorm_s8 import LayerNormParams, mcu_layernorm_s8
from emitter.ops.layernorm import layernorm_params
from tests.harness.ckernels import ARM_CPUS, MCU_ERR_ARG, call_kernel, call_raw, call_status, cross_compile_kernel
from tests.harness.layernorm_cases import BASE_CASES, Case, cases

KERNEL = "mcu_layernorm_s8"
F32 = np.float32


CASES = {
    **BASE_CASES,
    "widest_rows": Case(rows=2, row_size=8192),
    "constant_rows": Case(spread=0),
    "zero_epsilon": Case(eps=0.0),
}


def build(case: Case, rng: np.random.Generator) -> tuple[LayerNormParams, np.ndarray, np.ndarray,
                                                          np.ndarray | None]:
    n = case.row_size
    gamma = rng.normal(1.0, case.gamma_sd, n).astype(F32)
    beta = rng.normal(0.0, case.gamma_sd, n).astype(F32) if case.beta else None
    p = layernorm_params(case.rows, n, case.s_in, case.eps, gamma, beta, case.s_out, case.zp_out,
                         *case.act)
    lo, hi = max(-128, case.zp_in - case.spread), min(127, case.zp_in + case.spread)
    x = rng.integers(lo, hi + 1, (case.rows, n), dtype=np.int8)
    return p, x, gamma, beta


def check(p: LayerNormParams, x: np.ndarray) -> np.ndarray:
    expected = mcu_layernorm_s8(p, x)
    got = call_kernel(KERNEL, p, [x], (p.rows, p.row_size))
    np.testing.assert_array_equal(got, expected)
    return expected


def float_reference(case: Case, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None) -> np.ndarray:
    """ONNX LayerNormalization in float64 (population variance), then QuantizeLinear (half to even)."""
    xs = np.float64(F32(case.s_in)) * (x.astype(np.float64) - case.zp_in)
    mean = xs.mean(axis=1, keepdims=True)
    var = ((xs - mean) ** 2).mean(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        y = (xs - mean) / np.sqrt(var + np.float64(F32(case.eps))) * gamma.astype(np.float64)
        if beta is not None:
            y = y + beta.astype(np.float64)
        q = np.round(np.clip(y / np.float64(F32(case.s_out)), -1e3, 1e3))
    q = np.where(np.isnan(q), 0.0, q) + case.zp_out
    return np.clip(q, *case.act)


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    case = CASES[name]
    p, x, gamma, beta = build(case, np.random.default_rng(sum(map(ord, name))))
    got = check(p, x)
    if case.eps == 0.0 and case.spread == 0:
        return
    diff = np.abs(got.astype(np.int64) - float_reference(case, x, gamma, beta))
    assert diff.max() <= 1, f"max difference {diff.max()} quanta"


def test_constant_row_is_beta() -> None:
    """V == 0: u = 0, out = zero point + beta / s_out (rounded)."""
    case = Case(rows=2, row_size=5, spread=0)
    p, x, _, beta = build(case, np.random.default_rng(1))
    assert beta is not None
    want = np.clip(np.round(beta.astype(np.float64) / F32(case.s_out)) + case.zp_out, -128, 127)
    np.testing.assert_array_equal(check(p, x), np.broadcast_to(want, (2, 5)))


@settings(max_examples=200, deadline=None)
@given(case=cases(300), seed=st.integers(0, 2**32 - 1))
def test_property_golden_equals_c_within_one_quantum(case: Case, seed: int) -> None:
    p, x, gamma, beta = build(case, np.random.default_rng(seed))
    got = check(p, x)
    diff = np.abs(got.astype(np.int64) - float_reference(case, x, gamma, beta))
    assert diff.max() <= 1, f"max difference {diff.max()} quanta"


def test_refusals_leave_the_float_island() -> None:
    g = np.ones(4, F32)
    with pytest.raises(QuantError, match="row of 8193"):
        layernorm_params(1, 8193, 0.05, 1e-5, np.ones(8193, F32), None, 0.03, 0, -128, 127)
    with pytest.raises(QuantError, match="beta"):
        layernorm_params(1, 4, 0.05, 1e-5, g, np.full(4, 1e4, F32), 0.03, 0, -128, 127)
    with pytest.raises(QuantError, match="too large"):
        layernorm_params(1, 4, 0.05, 1e-5, np.full(4, 1e12, F32), None, 0.03, 0, -128, 127)


INVALID: dict[str, dict[str, Any]] = {
    "rows_0": {"rows": 0},
    "row_size_0": {"row_size": 0},
    "row_size_8193": {"row_size": 8193},
    "var_shift_odd": {"var_shift": 3},
    "var_shift_62": {"var_shift": 62},
    "var_shift_overflows": {"var_shift": 60},
    "eps_mantissa_neg": {"eps_mantissa": -1},
    "eps_shift_31": {"eps_shift": 31},
    "output_zero_point_128": {"output_zero_point": 128},
    "act_min_gt_act_max": {"act_min": 10, "act_max": 9},
    "act_max_128": {"act_max": 128},
    "multiplier_null": {"multiplier": None},
    "shift_null": {"shift": None},
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_params(name: str) -> None:
    p, x, _, _ = build(Case(), np.random.default_rng(0))
    bad = dataclasses.replace(p, **INVALID[name])
    status, out = call_status(KERNEL, bad, [x], (p.rows, p.row_size))
    assert status == MCU_ERR_ARG
    assert (out.view(np.uint8) == 0x5A).all(), "output written despite invalid params"
    with pytest.raises((ValueError, AttributeError, TypeError)):
        mcu_layernorm_s8(bad, x)


def test_shift_out_of_range() -> None:
    p, x, _, _ = build(Case(), np.random.default_rng(0))
    shift = p.shift.copy()
    shift[3] = 39
    bad = dataclasses.replace(p, shift=shift)
    assert call_status(KERNEL, bad, [x], (p.rows, p.row_size))[0] == MCU_ERR_ARG
    with pytest.raises(ValueError):
        mcu_layernorm_s8(bad, x)


def test_in_place() -> None:
    p, x, _, _ = build(Case(), np.random.default_rng(2))
    expected = mcu_layernorm_s8(p, x)
    assert call_raw(KERNEL, p, x, x) == 0
    np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize("opt", ["-O2", "-Os"])
@pytest.mark.parametrize("cpu", list(ARM_CPUS))
def test_cross_compile_without_float(cpu: str, opt: str, tmp_path: Path) -> None:
    """Warning-free under the strict flag set; no floating point at all (no VFP instruction, no
    __aeabi_f/d call); the only calls are libgcc's 64-bit integer helpers (division; multiply and shifts on
    Armv6-M)."""
    asm = cross_compile_kernel(KERNEL, cpu, tmp_path, opt)
    assert not re.search(r"\bv[a-z]+\.f(32|64)\b", asm), "floating point"
    calls = set(re.findall(r"R_ARM_THM_(?:CALL|JUMP24)\s+(\S+)", asm))
    assert all(re.fullmatch(r"__aeabi_(u?ldivmod|lmul|llsl|llsr|lasr)", c) for c in calls), calls
