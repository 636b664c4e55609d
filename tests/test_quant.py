"""emitter/quant.py against its C twins in mcu_math.h (compiled through tests/csrc/quant_shim.c)
and against exact integer references, over the whole valid domain:
x any int32, multiplier in [2^30, 2^31) or 0, shift in [-31, 30], exponent in [0, 31]."""
from __future__ import annotations

import ctypes
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emitter import quant
from emitter.quant import INT32_MAX, INT32_MIN
from tests.harness.ckernels import build_lib

SHIM = Path(__file__).resolve().parent / "csrc" / "quant_shim.c"

EDGES = [INT32_MIN, INT32_MIN + 1, -(1 << 30), -65536, -256, -3, -2, -1, 0, 1, 2, 3, 255,
         1 << 30, INT32_MAX - 1, INT32_MAX]
int32s = st.one_of(st.sampled_from(EDGES), st.integers(INT32_MIN, INT32_MAX))
multipliers = st.one_of(st.sampled_from([0, 1 << 30, (1 << 30) + 1, INT32_MAX]),
                        st.integers(1 << 30, INT32_MAX))
shifts = st.integers(-31, 30)
exponents = st.integers(0, 31)


@pytest.fixture(scope="module")
def shim() -> ctypes.CDLL:
    lib = build_lib((str(SHIM),), "quant_shim")
    i32 = ctypes.c_int32
    for name in ("shim_srdhm", "shim_rounding_divide_by_pot", "shim_requantize"):
        fn = getattr(lib, name)
        fn.restype = i32
        fn.argtypes = [i32] * (3 if name == "shim_requantize" else 2)
    return lib


def c_array(lib: ctypes.CDLL, name: str, *args: np.ndarray) -> np.ndarray:
    """Call an element-wise shim_<op>_array over int32 arrays; returns int64 like emitter.quant."""
    arrays = [np.ascontiguousarray(a, dtype=np.int32) for a in args]
    out = np.empty(arrays[0].shape, dtype=np.int32)
    ptrs = [ctypes.c_void_p(a.ctypes.data) for a in arrays]
    getattr(lib, name)(*ptrs, ctypes.c_void_p(out.ctypes.data), ctypes.c_int32(out.size))
    return out.astype(np.int64)


# ---- exact references (Python integers) ------------------------------------------------------

def ref_srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul: floor(a*b / 2^31 + 1/2), i.e. ties toward
    +infinity (the negative nudge 1 - 2^30 with truncating division), INT32_MIN^2 saturates."""
    if a == INT32_MIN and b == INT32_MIN:
        return INT32_MAX
    return (a * b + (1 << 30)) >> 31


def ref_rdbp(x: int, exponent: int) -> int:
    """x / 2^exponent, ties away from zero."""
    den = 1 << exponent
    mag = (2 * abs(x) + den) // (2 * den)
    return mag if x >= 0 else -mag


def ref_requantize(x: int, multiplier: int, shift: int) -> int:
    shifted = ((x << max(shift, 0)) + (1 << 31)) % (1 << 32) - (1 << 31)  # int32 wrap
    return ref_rdbp(ref_srdhm(shifted, multiplier), max(-shift, 0))


# ---- hypothesis: single values, Python twin == C == exact reference ----------------------------

@settings(max_examples=500, deadline=None)
@given(a=int32s, b=int32s)
def test_srdhm(shim: ctypes.CDLL, a: int, b: int) -> None:
    expected = ref_srdhm(a, b)
    assert int(quant.srdhm(np.array(a), np.array(b))) == expected
    assert shim.shim_srdhm(a, b) == expected


@settings(max_examples=500, deadline=None)
@given(x=int32s, exponent=exponents)
def test_rounding_divide_by_pot(shim: ctypes.CDLL, x: int, exponent: int) -> None:
    expected = ref_rdbp(x, exponent)
    assert int(quant.rounding_divide_by_pot(np.array(x), exponent)) == expected
    assert shim.shim_rounding_divide_by_pot(x, exponent) == expected


@settings(max_examples=1000, deadline=None)
@given(x=int32s, multiplier=multipliers, shift=shifts)
def test_requantize(shim: ctypes.CDLL, x: int, multiplier: int, shift: int) -> None:
    expected = ref_requantize(x, multiplier, shift)
    assert INT32_MIN <= expected <= INT32_MAX
    assert int(quant.requantize(np.array(x), multiplier, shift)) == expected
    assert shim.shim_requantize(x, multiplier, shift) == expected


def test_saturation_and_ties(shim: ctypes.CDLL) -> None:
    assert shim.shim_srdhm(INT32_MIN, INT32_MIN) == INT32_MAX
    assert int(quant.srdhm(np.array(INT32_MIN), np.array(INT32_MIN))) == INT32_MAX
    assert shim.shim_srdhm(1 << 30, 1) == 1       # +0.5 -> 1
    assert shim.shim_srdhm(-(1 << 30), 1) == 0    # -0.5 -> 0 (gemmlowp nudge)
    assert shim.shim_rounding_divide_by_pot(5, 1) == 3
    assert shim.shim_rounding_divide_by_pot(-5, 1) == -3
    assert shim.shim_rounding_divide_by_pot(INT32_MIN, 31) == -1
    assert shim.shim_rounding_divide_by_pot(INT32_MAX, 31) == 1
    assert shim.shim_requantize(INT32_MIN, INT32_MAX, 0) == INT32_MIN + 1
    assert shim.shim_requantize(1 << 30, 1 << 30, 1) == -(1 << 30)  # 2^31 wraps to INT32_MIN
    assert shim.shim_requantize(12345, 0, 5) == 0


# ---- bulk sweep: vectorized Python == C on many random triples plus every edge combination ----

def test_bulk_sweep(shim: ctypes.CDLL) -> None:
    rng = np.random.default_rng(1234)
    n = 200_000
    x = rng.integers(INT32_MIN, INT32_MAX, n, endpoint=True)
    # Small magnitudes too, where rounding ties are frequent.
    x[: n // 4] = rng.integers(-1024, 1024, n // 4)
    m = rng.integers(1 << 30, INT32_MAX, n, endpoint=True)
    m[::50] = 0
    s = rng.integers(-31, 30, n, endpoint=True)
    edge_m = [0, 1 << 30, INT32_MAX]
    grid = np.array([(a, b, c) for a in EDGES for b in edge_m for c in range(-31, 31)]).T
    x, m, s = (np.concatenate([v, g]) for v, g in zip((x, m, s), grid, strict=True))
    np.testing.assert_array_equal(quant.requantize(x, m, s),
                                  c_array(shim, "shim_requantize_array", x, m, s))
    b = rng.integers(INT32_MIN, INT32_MAX, x.size, endpoint=True)
    np.testing.assert_array_equal(quant.srdhm(x, b), c_array(shim, "shim_srdhm_array", x, b))
    e = rng.integers(0, 31, x.size, endpoint=True)
    np.testing.assert_array_equal(quant.rounding_divide_by_pot(x, e),
                                  c_array(shim, "shim_rounding_divide_by_pot_array", x, e))


# ---- quantize_multiplier -----------------------------------------------------------------------

@pytest.mark.parametrize("real, expected", [
    (0.0, (0, 0)),
    (0.5, (1 << 30, 0)),
    (1.0, (1 << 30, 1)),
    (0.25, (1 << 30, -1)),
    (0.75, (3 << 29, 0)),
    (2.0, (1 << 30, 2)),
    (1.0 - 2.0 ** -40, (1 << 30, 1)),          # rounds up to 2^31: the 1<<31 fix-up
    (2.0 ** -32, (1 << 30, -31)),              # smallest representable shift
    (2.0 ** -33, (0, 0)),                      # shift < -31: flushed to zero
    (2.0 ** 31, (INT32_MAX, 30)),              # shift > 30: clamped
    # Expected pairs from TFLite's quantization_util_test.cc (QuantizeMultiplier*, positive part).
    (0.125, (1073741824, -2)),
    (0.50 - 5e-9, (2147483627, -1)),
    (0.50 - 1e-10, (1073741824, 0)),
    (1 - 1e-9, (2147483646, 0)),
    (1 + 1e-11, (1073741824, 1)),
    (1.25, (1342177280, 1)),
    (1.75, (1879048192, 1)),
    (2 - 1e-9, (2147483647, 1)),
    (2 - 1e-11, (1073741824, 2)),
    (4.0, (1073741824, 3)),
])
def test_quantize_multiplier_known(real: float, expected: tuple[int, int]) -> None:
    assert quant.quantize_multiplier(real) == expected


@pytest.mark.parametrize("bad", [-1e-9, math.inf, math.nan])
def test_quantize_multiplier_rejects(bad: float) -> None:
    with pytest.raises(ValueError):
        quant.quantize_multiplier(bad)


@settings(max_examples=1000, deadline=None)
@given(real=st.floats(min_value=2.0 ** -32, max_value=2.0 ** 29, allow_nan=False))
def test_quantize_multiplier_normal(real: float) -> None:
    m, shift = quant.quantize_multiplier(real)
    assert (1 << 30) <= m < (1 << 31)
    assert -31 <= shift <= 30
    rebuilt = Fraction(m) * Fraction(2) ** (shift - 31)
    assert abs(rebuilt - Fraction(real)) <= Fraction(real) * Fraction(1, 1 << 31)


@settings(max_examples=200, deadline=None)
@given(real=st.floats(min_value=0.0, max_value=2.0 ** -33, allow_nan=False))
def test_quantize_multiplier_flushes_tiny(real: float) -> None:
    assert quant.quantize_multiplier(real) == (0, 0)


@settings(max_examples=500, deadline=None)
@given(real=st.floats(min_value=2.0 ** -24, max_value=1.0, exclude_max=True),
       x=st.integers(-(1 << 24), 1 << 24))
def test_requantize_approximates_real_product(real: float, x: int) -> None:
    m, shift = quant.quantize_multiplier(real)
    got = int(quant.requantize(np.array(x), m, shift))
    assert abs(Fraction(got) - Fraction(x) * Fraction(real)) <= Fraction(101, 100)


@settings(max_examples=300, deadline=None)
@given(real=st.floats(min_value=2.0 ** 29, max_value=1e300, allow_nan=False, allow_infinity=False))
def test_quantize_multiplier_clamps_huge(real: float) -> None:
    """Shifts above 30 cannot be represented: TFLite clamps to (INT32_MAX, 30)."""
    m, shift = quant.quantize_multiplier(real)
    assert (1 << 30) <= m <= INT32_MAX and 29 <= shift <= 30
    if real >= 2.0 ** 30:
        assert (m, shift) == (INT32_MAX, 30)


@settings(max_examples=200, deadline=None)
@given(reals=st.lists(st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=2.0 ** 31)), max_size=16))
def test_per_channel_multipliers_equal_scalar(reals: list[float]) -> None:
    mult, shift = quant.multipliers(np.array(reals))
    assert mult.dtype == np.int32 and shift.dtype == np.int32
    assert [(int(m), int(s)) for m, s in zip(mult, shift, strict=True)] == [quant.quantize_multiplier(r) for r in reals]


def test_round_int32_saturates_without_overflow() -> None:
    """A bias over a tiny scale is far beyond int64: it saturates (the headroom check refuses it
    by name later) instead of raising OverflowError."""
    import numpy as np

    from emitter.quant import INT32_MAX, INT32_MIN, round_int32

    got = round_int32(np.array([2.5, -2.5, 1e30, -1e30, float("inf"), 0.49999]))
    assert got.dtype == np.int32
    assert got.tolist() == [3, -3, INT32_MAX, INT32_MIN, INT32_MAX, 0]
