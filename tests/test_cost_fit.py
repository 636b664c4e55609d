"""The cost tables' predictions for shapes they do not hold (emitter/backends/cost_fit.py) and the
planner's rows (`python scripts/cost_tables.py --planner`: band calls, lean calls, small layers)."""
from __future__ import annotations

import numpy as np
import pytest

from emitter.backends import cost_fit
from emitter.backends import kernel_choice as kc
from emitter.backends.cost_cases import LEAN_CALL, Shape, band_path
from emitter.plan.propose import cost_rows

ARM = [("cortex-m4", "dsp"), ("cortex-m7", "dsp"), ("cortex-m55", "mve")]


@pytest.mark.parametrize(("core", "isa"), ARM)
def test_the_planner_rows_are_the_planners_only(core: str, isa: str) -> None:
    rows = cost_rows(core, isa)
    paths = {r.path for r in rows}
    assert {band_path(isa), band_path(LEAN_CALL), LEAN_CALL} <= paths, "run scripts/cost_tables.py --planner"
    choice = kc.load_table(core)  # the kernel choice: whole layers on their own paths, both candidates
    assert choice and not {r.path for r in choice} & {band_path(isa), band_path(LEAN_CALL), LEAN_CALL}
    assert len(choice) < len(rows)


@pytest.mark.parametrize(("core", "isa"), ARM)
@pytest.mark.parametrize("kind", ["conv", "dw"])
def test_each_case_is_predicted_from_the_others(core: str, isa: str, kind: str) -> None:
    """Leave-one-out: a case left out of its table is predicted within a few per cent (median)."""
    rows = cost_rows(core, isa)
    for path, most in ((isa, 0.08), (band_path(isa), 0.06), (band_path(LEAN_CALL), 0.03), (LEAN_CALL, 0.05)):
        group = [r for r in rows if r.shape.kind == kind and r.path == path and r.shape.bits == 8]
        errors = []
        for i in range(0, len(group), max(1, len(group) // 25)):
            rest = tuple(r for j, r in enumerate(group) if j != i and r.shape != group[i].shape)
            got = kc.predict_ours(rest, group[i].shape, path)
            assert got is not None and got > 0
            errors.append(abs(got / group[i].ours - 1))
        assert float(np.median(errors)) <= most, (path, float(np.median(errors)))


def test_an_exact_hit_is_the_mean_of_its_measurements() -> None:
    s = Shape("fc", c_in=3, c_out=5)
    other = Shape("fc", c_in=3, c_out=5, per_channel=0)  # the same features (kernel_choice.features)
    rows = tuple(kc.Cost(x, "dsp", n) for x, n in ((s, 100), (s, 120), (other, 400)))
    assert kc.predict_ours(rows, s, "dsp") == 110
    assert kc.predict_ours(rows, Shape("fc", c_in=3, c_out=6), "dsp") is not None
    assert kc.predict_ours(rows, s, "mve") is None


def test_a_band_or_lean_path_counts_the_work_of_its_kernel_path() -> None:
    s = Shape("conv", 1, 5, 64, 64, 1, 1)
    assert cost_fit.work(s, "dsp/band") == cost_fit.work(s, "dsp")
    assert cost_fit.work(s, LEAN_CALL) == cost_fit.work(s, "generic") == cost_fit.work(s, band_path(LEAN_CALL))
    assert cost_fit.work(s, "dsp") != cost_fit.work(s, "mve")  # passes of 4 positions, of 3


def test_a_band_prediction_follows_its_passes() -> None:
    """The DSP path computes 4 positions a pass: a band of 5 costs about as much as one of 8 (the
    planner's tables, cortex-m4), not 5/8 of it."""
    five, eight = Shape("conv", 1, 5, 64, 64, 1, 1), Shape("conv", 1, 8, 64, 64, 1, 1)
    path = band_path("dsp")
    got5, got8 = (kc.predict_ours(cost_rows("cortex-m4", "dsp"), x, path) for x in (five, eight))
    assert got5 is not None and got8 is not None
    assert got5 > 0.85 * got8
