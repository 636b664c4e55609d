"""mcu_lut_s8: host C kernel == numpy golden (emitter/kernels/mcu_lut_s8.py), bit for bit, also in place;
table[0] is f(-128) and table[255] is f(127); invalid parameters -> MCU_ERR_ARG."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter.kernels.mcu_lut_s8 import mcu_lut_s8
from tests.harness.ckernels import MCU_ERR_ARG, call_raw

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)


def sigmoid_table(s_in: float, zp_in: int) -> np.ndarray:
    """A table as a generator would build it: sigmoid with TFLite's output scale 1/256, zp -128."""
    real = s_in * (ALL_INT8.astype(np.float64) - zp_in)
    q = np.round(256.0 / (1.0 + np.exp(-real))) - 128
    return np.clip(q, -128, 127).astype(np.int8)


def run(table: np.ndarray, x: np.ndarray) -> np.ndarray:
    expected = mcu_lut_s8(table, x)
    out = np.full(x.shape, 0x5A, dtype=np.int8)
    assert call_raw("mcu_lut_s8", x.size, table, x, out) == 0
    np.testing.assert_array_equal(out, expected)
    in_place = x.copy()
    assert call_raw("mcu_lut_s8", x.size, table, in_place, in_place) == 0
    np.testing.assert_array_equal(in_place, expected)
    return expected


CASES = {
    "identity": ALL_INT8.copy(),
    "negate_sat": np.clip(-ALL_INT8.astype(np.int64), -128, 127).astype(np.int8),
    "sigmoid": sigmoid_table(0.1, 0),
    "sigmoid_zp": sigmoid_table(0.05, -40),
    "constant": np.full(256, -7, dtype=np.int8),
}


@pytest.mark.parametrize("name", list(CASES))
def test_case_table(name: str) -> None:
    table = CASES[name]
    got = run(table, ALL_INT8)
    np.testing.assert_array_equal(got, table)  # every input once, in order: the table itself


def test_endpoints() -> None:
    table = np.arange(256, dtype=np.int64).astype(np.uint8).view(np.int8)
    got = run(table, np.array([-128, 127, 0, -1], dtype=np.int8))
    np.testing.assert_array_equal(got.view(np.uint8), [0, 255, 128, 127])


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1, 300))
def test_property_golden_equals_c(seed: int, size: int) -> None:
    rng = np.random.default_rng(seed)
    run(rng.integers(-128, 128, 256, dtype=np.int8), rng.integers(-128, 128, size, dtype=np.int8))


def test_invalid_params() -> None:
    table, x, out = ALL_INT8.copy(), ALL_INT8.copy(), np.zeros(256, dtype=np.int8)
    assert call_raw("mcu_lut_s8", 0, table, x, out) == MCU_ERR_ARG
    assert call_raw("mcu_lut_s8", -5, table, x, out) == MCU_ERR_ARG
    assert call_raw("mcu_lut_s8", 256, None, x, out) == MCU_ERR_ARG
    assert call_raw("mcu_lut_s8", 256, table, None, out) == MCU_ERR_ARG
    assert call_raw("mcu_lut_s8", 256, table, x, None) == MCU_ERR_ARG
    with pytest.raises(ValueError):
        mcu_lut_s8(np.zeros(255, dtype=np.int8), x)
