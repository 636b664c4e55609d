"""--features-ref (issue 32 item 2): mcugen's own features fed back give 0 differences.

`mcugen features` writes real-valued features (raw / 2^frac); --features-ref quantizes them to the
model input. It used round(x / scale) + zp, while the device requantizes the raw fixed-point value
(a 31-bit multiplier, double rounding): 2.7 % of the keyword example's coefficients came out one
quantum apart although the same run said "raw features vs cmsisdsp: bit-exact". Now both use the
device's rule (emitter.features.reference.quantize_real).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from emitter.cli import main

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "keyword_audio"


@pytest.fixture(scope="module")
def keyword(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("cmsisdsp")
    from emitter.commands.frontend import read_audio
    from emitter.compiler import compile_model
    from emitter.features.spec import load_spec
    from emitter.render.frontend import bind

    feats = tmp_path_factory.mktemp("features") / "feats.npz"
    assert main(["features", str(EXAMPLE / "frontend.toml"), str(EXAMPLE / "heldout.npz"), "-o", str(feats)]) == 0
    spec = load_spec(str(EXAMPLE / "frontend.toml"))
    fe = bind(spec, compile_model(EXAMPLE / "keyword_int8.onnx"))
    clips, _ = read_audio([str(EXAMPLE / "heldout.npz")], spec.sample_rate)
    return fe, feats, clips


def device_rows(fe, clips) -> list[np.ndarray]:
    """The int8 features the generated C computes (the reference --verify checks it bit-exact against)."""
    from emitter.commands.frontend import fit
    from emitter.features.reference import features_raw, quantize_raw

    spec = fe.spec
    return [quantize_raw(spec, fe.quant, features_raw(spec, fit(c, spec.window_samples(fe.frames)), fe.frames))
            for c in clips]


def test_own_features_fed_back_give_no_difference(keyword):
    from emitter.commands.frontend import compare_reference

    fe, feats, clips = keyword
    text = compare_reference(fe, str(feats), device_rows(fe, clips))
    last = text.splitlines()[-1].split()
    assert last[:4] == ["all", "0", "0.000", "0.0%"] and "(identical)" in text, text


def test_the_naive_rounding_was_the_difference(keyword):
    """The old rule on the same features: some coefficients one quantum off (what the issue saw)."""
    fe, feats, clips = keyword
    ref = np.load(feats)["features"].astype(np.float64)
    q = fe.quant
    naive = np.clip(np.floor(np.abs(ref / q.scale) + 0.5) * np.sign(ref) + q.zero_point, -128, 127)
    d = np.abs(np.stack(device_rows(fe, clips)).astype(np.int64) - naive)
    assert d.max() == 1 and 0 < np.mean(d > 0) < 0.1


def test_a_one_quantum_change_is_still_seen(keyword, tmp_path):
    from emitter.commands.frontend import compare_reference

    fe, feats, clips = keyword
    data = dict(np.load(feats))
    data["features"] = data["features"] + np.float32(fe.quant.scale)  # every value one quantum up
    moved = tmp_path / "moved.npz"
    np.savez(moved, **data)
    last = compare_reference(fe, str(moved), device_rows(fe, clips)).splitlines()[-1].split()
    assert last[0] == "all" and int(last[1]) >= 1 and float(last[3].rstrip("%")) > 90
