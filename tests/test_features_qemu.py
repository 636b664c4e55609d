"""The feature front end in QEMU: features bit-exact with cmsisdsp (q15, q31; f32 within the
documented tolerance) over >= 100 clips on Cortex-M0+, M4, M7 and M55, the stream hop by hop, and
the keyword example from raw PCM to class on M4 and M7."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.features.sources import cmsis_dsp_path
from emitter.render.bundle import render_bundle
from emitter.render.frontend import bind
from emitter.render.write import write_bundle
from emitter.target import missing_tools
from emitter.verify.frontend import check
from tests.features_cases import EXAMPLE, KWS_MODEL, all_clips, kws_spec, spectrogram_case

pytest.importorskip("cmsisdsp", reason="the front end's reference is the cmsisdsp package (scripts/setup.sh)")
MISSING = missing_tools()
pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(bool(MISSING), reason="the QEMU tier needs missing tools: " + "; ".join(MISSING)),
    pytest.mark.skipif(cmsis_dsp_path(required=False) is None,
                       reason="CMSIS-DSP's sources are absent (python -m emitter.features.sources fetch)"),
]
CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("arith", ["q15", "q31", "f32"])
def test_features_in_qemu_over_100_clips(core, arith, tmp_path):
    board = load_board(core)
    c = compile_model(KWS_MODEL, name="kws")
    fe = bind(kws_spec(arithmetic=arith), c)
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name, fe), tmp_path / "b")
    clips = all_clips(fe.window_samples, fe.spec.sample_rate)
    assert len(clips) >= 100
    r = check(fe, c, tmp_path / "b", clips, tmp_path / "w", board, modes=("raw", "push"))
    assert r.ok, (r.raw_mismatch, r.raw_max_diff, r.stream_mismatch, r.input_max_diff)
    if arith != "f32":
        assert r.raw_mismatch == 0 and r.raw_max_diff == 0 and r.stream_mismatch == 0
    hop, frame_count = r.instructions["push"], fe.frames
    assert hop > 0
    # streaming computes one frame per hop: its instructions are those of the raw features of one frame
    assert abs(hop - r.instructions["raw"] / frame_count) < 0.1 * hop


def test_keyword_example_pcm_to_class_in_qemu(tmp_path):
    sys.path.insert(0, str(EXAMPLE))
    from run_keyword_demo import evaluate  # type: ignore[import-not-found]

    r = evaluate(["cortex-m4", "cortex-m7"], tmp_path / "out")
    for where in ("host", "cortex-m4", "cortex-m7"):
        assert r[f"{where}_exact"] == 1, where
    assert r["cortex-m4_accuracy"] == r["cortex-m7_accuracy"] == r["host_accuracy"]
    assert r["cortex-m4_accuracy"] >= 0.8 and r["float"] >= 0.8 and r["int8_ort"] >= 0.8
    assert np.isclose(r["cortex-m4_accuracy"], r["float"], atol=0.1)


@pytest.mark.parametrize("core", ["cortex-m0plus", "cortex-m7"])
@pytest.mark.parametrize("arith", ["q15", "q31"])
def test_spectrogram_in_qemu_over_100_clips(core, arith, tmp_path):
    fe, c, bundle, clips = spectrogram_case(tmp_path, arith, core)
    r = check(fe, c, bundle, clips, tmp_path / "w", load_board(core), modes=("raw", "push"))
    assert r.ok and r.raw_mismatch == 0 and r.stream_mismatch == 0, (r.raw_mismatch, r.stream_mismatch)
