"""The cost tables' predictions for shapes they do not hold (emitter/backends/cost_fit.py) and the
planner's rows (`python scripts/cost_tables.py --planner`: band calls, lean calls, small layers)."""
from __future__ import annotations

import numpy as np
import pytest

from emitter.backends import cost_fit
from emitter.backends import kernel_choice as kc
from emitter.backends.cost_cases import Shape, band_path, is_lean, lean_call
from emitter.plan.propose import cost_rows

ARM = [("cortex-m4", "dsp"), ("cortex-m7", "dsp"), ("cortex-m55", "mve")]


@pytest.mark.parametrize(("core", "isa"), ARM)
def test_the_planner_rows_are_the_planners_only(core: str, isa: str) -> None:
    rows = cost_rows(core, isa)
    paths = {r.path for r in rows}
    # the lean calls' paths, whole and by bands: the generic path's, and the core's own (the DSP lean
    # variant; on MVE the depthwise layers' MVE path from their build-time groups)
    lean = {lean_call("generic"), lean_call(isa)}
    assert {band_path(isa)} | lean | {band_path(p) for p in lean} <= paths, "run scripts/cost_tables.py --planner"
    assert not {p for p in paths if p.startswith("lean") and not is_lean(p)}  # every lean row names its path
    choice = kc.load_table(core)  # the kernel choice: whole layers on their own paths, both candidates
    assert choice and not {r.path for r in choice} & ({band_path(isa)} | {p for p in paths if is_lean(p)})
    assert len(choice) < len(rows)


@pytest.mark.parametrize(("core", "isa"), ARM)
@pytest.mark.parametrize("kind", ["conv", "dw"])
def test_each_case_is_predicted_from_the_others(core: str, isa: str, kind: str) -> None:
    """Leave-one-out: a case left out of its table is predicted within a few per cent (median)."""
    rows = cost_rows(core, isa)
    lean = sorted({r.path for r in rows if is_lean(r.path) and r.shape.kind == kind})
    # (a lean call's band rows on the MVE path, the depthwise layers' from build-time groups, as the
    # MVE path's own band rows: its border windows and per-call set-up make them the noisier ones; on
    # MVE the generic lean calls are the convolutions whose windows fit neither the groups nor the
    # direct groups in their least scratch, the more varied shapes: 5.1 % at stop 48)
    bounds = [(isa, 0.08), (band_path(isa), 0.06)] + [
        (p, (0.06 if p == band_path(lean_call("mve")) else 0.03) if p.endswith("/band")
         else 0.06 if isa == "mve" and kind == "conv" and p == lean_call("generic") else 0.05) for p in lean]
    for path, most in bounds:
        group = [r for r in rows if r.shape.kind == kind and r.path == path and r.shape.bits == 8]
        if len(group) < 20:  # (a lean path few cases take: the planner falls back, propose.MIN_PLANNER_ROWS)
            continue
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
    generic = lean_call("generic")
    assert cost_fit.work(s, generic) == cost_fit.work(s, "generic") == cost_fit.work(s, band_path(generic))
    assert cost_fit.work(s, lean_call("mve")) == cost_fit.work(s, "generic")  # its groups: as the generic path
    assert cost_fit.work(s, "dsp") != cost_fit.work(s, "mve")  # passes of 4 positions, of 3
    assert cost_fit.work(s, lean_call("dsp")) != cost_fit.work(s, "dsp")  # passes of 2, channel pairs


def test_a_band_prediction_follows_its_passes() -> None:
    """The DSP path computes 4 positions a pass: a band of 5 costs about as much as one of 8 (the
    planner's tables, cortex-m4), not 5/8 of it."""
    five, eight = Shape("conv", 1, 5, 64, 64, 1, 1), Shape("conv", 1, 8, 64, 64, 1, 1)
    path = band_path("dsp")
    got5, got8 = (kc.predict_ours(cost_rows("cortex-m4", "dsp"), x, path) for x in (five, eight))
    assert got5 is not None and got8 is not None
    assert got5 > 0.85 * got8


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m7"])
def test_the_dsp_path_is_predicted_by_its_positions_a_pass(core: str) -> None:
    """Filters of K > 144 taps take 2 positions a pass on the DSP path, K > 288 one (their interleaved
    windows fill MCU_CONV_DSP_WORDS): leave-one-out, those cases too are predicted within 3 % (median),
    and their count per MAC is above the 4-position cases' at the same shape otherwise."""
    rows = cost_rows(core, "dsp")
    group = [r for r in rows if r.shape.kind == "conv" and r.path == "dsp" and r.shape.bits == 8]
    few = [r for r in group if cost_fit.dsp_positions(r.shape) < 4]
    assert len(few) >= 20
    errors = []
    for r in few:
        got = kc.predict_ours(tuple(x for x in group if x.shape != r.shape), r.shape, "dsp")
        assert got is not None
        errors.append(abs(got / r.ours - 1))
    assert float(np.median(errors)) <= 0.03, float(np.median(errors))
    assert [cost_fit.dsp_positions(Shape("conv", 8, 8, c, 64, 3, 3)) for c in (16, 32, 64)] == [4, 2, 1]


def test_a_lean_dsp_band_of_five_positions_is_predicted_from_its_pairs() -> None:
    """A 1x1 layer's band of one 5-wide row through the lean call's DSP variant (two passes of two and
    one position alone; KWS's pointwise layers in its smallest plan) costs close to what the planner's
    rows measured of its neighbours: within 5 % of 38,871 (QEMU, cortex-m4, tuning.measure lean and
    bands), where the generic path's features gave +14 %."""
    s = Shape("conv", 1, 5, 64, 64, 1, 1)
    got = kc.predict_ours(cost_rows("cortex-m4", "dsp"), s, band_path(lean_call("dsp")))
    assert got is not None and abs(got / 38_871 - 1) <= 0.05, got
