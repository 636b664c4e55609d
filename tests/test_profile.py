"""Per-layer instruction profiles in QEMU (emitter/verify/profile.py, `mcugen verify --profile`).

The profile build emits a lap marker after every layer; the plugin's laps must split the count of
one inference exactly (laps + return = total), one lap per kernel call, and the heavy layers must
get the instructions (a conv layer costs more than the softmax after it).
"""
from __future__ import annotations

import pytest

from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.render.bundle import render_bundle
from emitter.render.write import write_bundle
from emitter.target.toolchain import missing_tools
from emitter.verify.profile import profile_layers
from emitter.verify.run import load_inputs
from tests.harness.bundles import SHARED_MODELS, shared_model

pytestmark = [pytest.mark.qemu,
              pytest.mark.skipif(bool(missing_tools()), reason="cross toolchain or QEMU missing"),
              pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")]


@pytest.mark.parametrize("core", ["cortex-m0plus", "cortex-m55"])
def test_profile_splits_the_inference_per_layer(core, tmp_path):
    name = "tflm_micro_speech"
    board = load_board(core)
    c = compile_model(shared_model(name), name="net", backend="portable", board=board)
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), tmp_path / "b")
    samples = load_inputs(c, str(SHARED_MODELS / name / f"{name}_ref.npz"), 1)[:1]  # medians of one: exact sums
    prof = profile_layers(c, tmp_path / "b", board, samples, tmp_path / "w")
    kernels = [p.kernel for p in c.prepared if p.kernel]
    assert [lay.kernel for lay in prof.layers] == kernels
    assert all(lay.instructions > 0 for lay in prof.layers)
    assert sum(lay.instructions for lay in prof.layers) + prof.tail == prof.total
    assert 0 <= prof.tail < 100
    conv = next(lay for lay in prof.layers if lay.kernel == "mcu_conv2d_s8")
    soft = next(lay for lay in prof.layers if lay.kernel == "mcu_softmax_s8")
    assert conv.instructions > 50 * soft.instructions
    assert conv.instructions / conv.macs > 0.5  # at least one instruction per two MACs
    table = prof.table()
    assert "mcu_conv2d_s8" in table and f"{prof.total:,}" in table
