"""The LayerNormalization case table both kernels' tests use (tests/kernels/test_layernorm.py for
mcu_layernorm_s8, tests/kernels/test_layernorm_f32.py for the float island mcu_layernorm_f32_s8);
each file adds the cases only its kernel takes."""
from __future__ import annotations

from typing import NamedTuple

from hypothesis import strategies as st


class Case(NamedTuple):
    rows: int = 4
    row_size: int = 48
    s_in: float = 0.05
    zp_in: int = 3
    eps: float = 1e-5
    s_out: float = 0.03
    zp_out: int = -2
    act: tuple[int, int] = (-128, 127)
    beta: bool = True
    gamma_sd: float = 0.3  # gamma ~ N(1, sd), beta ~ N(0, sd)
    spread: int = 128  # inputs uniform in zp_in +- spread (clipped to int8)


BASE_CASES = {
    "default": Case(),
    "no_beta": Case(beta=False),
    "one_row": Case(rows=1),
    "row_size_1": Case(row_size=1),  # x - mean == 0: y = beta
    "row_size_2": Case(row_size=2),
    "odd_row_size": Case(row_size=37),
    "wide_rows": Case(rows=3, row_size=768),  # BERT-base hidden size
    "many_rows": Case(rows=128, row_size=16),
    "narrow_inputs": Case(spread=2),  # near-constant rows, variance ~ epsilon
    "large_epsilon": Case(eps=0.5),
    "tiny_input_scale": Case(s_in=1e-5, eps=1e-12),
    "large_input_scale": Case(s_in=10.0),
    "large_gamma_saturates": Case(gamma_sd=5.0, s_out=0.01),
    "zp_extremes": Case(zp_in=-128, zp_out=127),
    "zp_extremes_2": Case(zp_in=127, zp_out=-128),
    "narrow_act": Case(act=(-5, 9)),
}


@st.composite
def cases(draw: st.DrawFn, max_row_size: int) -> Case:
    """Random cases for the property tests: output scales wide enough for gamma's spread."""
    lo, hi = sorted(draw(st.integers(-128, 127)) for _ in range(2))
    gamma_sd = draw(st.floats(0.0, 2.0))
    return Case(rows=draw(st.integers(1, 4)), row_size=draw(st.integers(1, max_row_size)),
                s_in=draw(st.floats(1e-4, 1.0)), zp_in=draw(st.integers(-128, 127)),
                eps=draw(st.floats(1e-6, 1e-2)),
                s_out=draw(st.floats(0.25, 4.0)) * (1.0 + 3.0 * gamma_sd) * 4.0 / 128.0,
                zp_out=draw(st.integers(-128, 127)), act=(lo, hi), beta=draw(st.booleans()),
                gamma_sd=gamma_sd, spread=draw(st.sampled_from([1, 4, 128])))
