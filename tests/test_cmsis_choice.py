"""The cmsis-nn backend's per-layer kernel choice, its summary, and its arena bound.

`--backend cmsis-nn` calls CMSIS-NN except on layer shapes where mcugen's own kernel executes
fewer instructions (emitter/backends/kernel_choice.py, measured in docs/cmsis_nn.md);
compile_model(cmsis_choice="cmsis") (`mcugen --cmsis-everywhere`) converts every layer CMSIS-NN
can take. The rules are checked on their own everywhere; the backend tests need the user's
CMSIS-NN (CMSIS_NN_PATH) and skip without it.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from emitter.backends.cmsis_nn import cmsis_path
from emitter.backends.kernel_choice import ours_is_faster
from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.summary import summary
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS, shared_model

pytestmark = pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")
needs_cmsis = pytest.mark.skipif(cmsis_path() is None, reason="CMSIS_NN_PATH is not set: CMSIS-NN is the "
                                 "user's library; point CMSIS_NN_PATH at a CMSIS-NN v7.0.0 checkout to run these")
CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")


def compiled(name: str, core: str, choice: str = "fastest", backend: str = "cmsis-nn"):
    return compile_model(shared_model(name), name="net", backend=backend, board=load_board(core),
                         cmsis_path=cmsis_path() if backend == "cmsis-nn" else None, cmsis_choice=choice)


@needs_cmsis
@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_arena_within_lower_bound_plus_scratch(name, core):
    """Arena <= the portable schedule's liveness lower bound + the largest CMSIS-NN scratch."""
    c = compiled(name, core)
    bound = compiled(name, core, backend="portable").plan.lower_bound
    scratch = max((p.scratch for p in c.prepared), default=0)
    assert c.plan.arena_size <= bound + scratch, (c.plan.arena_size, bound, scratch)


@needs_cmsis
@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_every_layer_is_cmsis_or_reasoned(name, core):
    c = compiled(name, core)
    kernels = [(k, p.kernel) for k, p in enumerate(c.prepared) if p.kernel]
    portable = {k: (kernel, why) for k, kernel, why in c.portable_layers}
    for k, kernel in kernels:
        if k in portable:
            assert kernel.startswith("mcu_") and portable[k][0] == kernel and portable[k][1]
        else:
            assert kernel.startswith("arm_"), (k, kernel)
    text = summary(c, 0, core, "backend cmsis-nn")
    assert f"{len(kernels) - len(portable)} of {len(kernels)} layers call CMSIS-NN" in text
    for k, kernel, why in c.portable_layers:
        assert f"layer {k} {kernel}: {why}" in text


@needs_cmsis
def test_choice_cmsis_converts_everything_it_can():
    everywhere = compiled("tflm_micro_speech", "cortex-m4", "cmsis")
    assert not everywhere.portable_layers
    assert all(p.kernel.startswith("arm_") for p in everywhere.prepared if p.kernel)


@needs_cmsis
def test_kws_keeps_fast_portable_kernels_on_dsp_and_mve_not_on_pure_c():
    """DSCNN on cortex-m4: every conv and depthwise layer takes mcugen's DSP path (FC, pool and
    softmax stay CMSIS-NN); cortex-m55: the depthwise layers and the one-channel first conv;
    cortex-m0plus: CMSIS-NN throughout."""
    def portable(core):
        return {k: kernel for k, kernel, _ in compiled("mlperf_kws_dscnn", core).portable_layers}

    m4, m55 = portable("cortex-m4"), portable("cortex-m55")
    assert set(m4.values()) == {"mcu_conv2d_s8", "mcu_depthwise_conv2d_s8"} and len(m4) == 9
    assert set(m55.values()) == {"mcu_conv2d_s8", "mcu_depthwise_conv2d_s8"}
    assert [k for k, kernel in m55.items() if kernel == "mcu_conv2d_s8"] == [1]
    assert portable("cortex-m0plus") == {}


def layer(name: str, kernel: str, core: str = "cortex-m4"):
    c = compile_model(shared_model(name), name="net", board=load_board(core))
    return next(p for p in c.prepared if p.kernel == kernel)


@pytest.mark.parametrize("var", ["dsp", "mve"])
def test_rules_follow_the_fast_path_conditions(var):
    """A layer the rule keeps goes back to CMSIS-NN once its requantization leaves the fast
    path's range (shift > -1, negative multiplier, |bias| >= 2^29) or on a pure-C core."""
    dw = layer("mlperf_kws_dscnn", "mcu_depthwise_conv2d_s8")
    assert ours_is_faster(dw, var) and ours_is_faster(dw, "c") is None
    c = dw.params
    assert ours_is_faster(replace(dw, params=replace(c, shift=np.zeros_like(c.shift))), var) is None
    assert ours_is_faster(replace(dw, params=replace(c, multiplier=-c.multiplier)), var) is None
    bias = dw.operands["bias"]
    big = replace(bias, data=np.full_like(bias.data, 1 << 29))
    assert ours_is_faster(replace(dw, operands={**dw.operands, "bias": big}), var) is None
    assert ours_is_faster(replace(dw, params=replace(c, depth_multiplier=2)), var) is None


def test_conv_and_fc_rules_per_path():
    """DSP: convolutions up to a 576-tap window, and fully connected layers wherever their DSP path
    runs; MVE: only one-channel convolutions, and fully connected layers from 128 inputs (KWS's
    64-input classifier stays CMSIS-NN)."""
    first, pointwise = [p for p in compile_model(shared_model("mlperf_kws_dscnn"), name="net").prepared
                        if p.kernel == "mcu_conv2d_s8"][:2]
    assert ours_is_faster(first, "dsp") and ours_is_faster(pointwise, "dsp")
    c = pointwise.params  # 16 -> 4 channels 1x1: CMSIS-NN's 1x1 fast kernel wins
    small = replace(c, input=replace(c.input, c=16), filter=replace(c.filter, n=4, c=16), output=replace(c.output, c=4))
    assert ours_is_faster(replace(pointwise, params=small), "dsp") is None
    wide = replace(small, filter=replace(small.filter, n=8), output=replace(small.output, c=8))
    assert ours_is_faster(replace(pointwise, params=wide), "dsp")
    strided = replace(small, stride_h=2, stride_w=2)  # CMSIS-NN's general path: ours
    assert ours_is_faster(replace(pointwise, params=strided), "dsp")
    assert ours_is_faster(first, "mve") and ours_is_faster(pointwise, "mve") is None
    assert ours_is_faster(layer("mlperf_kws_dscnn", "mcu_fully_connected_s8"), "mve") is None
    assert ours_is_faster(layer("mlperf_ad_fc_autoencoder", "mcu_fully_connected_s8"), "mve")
    fc = layer("mlperf_ad_fc_autoencoder", "mcu_fully_connected_s8")
    assert ours_is_faster(fc, "dsp") and ours_is_faster(fc, "c") is None
    wide = replace(fc.params, shift=np.full_like(fc.params.shift, 3))  # no requant2: the generic path
    assert ours_is_faster(replace(fc, params=wide), "dsp") is None


@needs_cmsis
def test_cli_cmsis_everywhere(tmp_path, capsys):
    """`--cmsis-everywhere` calls CMSIS-NN on every layer it supports; by default the summary
    names the layers kept portable."""
    from emitter.cli import main

    model = str(shared_model("mlperf_kws_dscnn"))
    assert main([model, "--board=cortex-m4", "--backend=cmsis-nn", "-o", str(tmp_path / "a")]) == 0
    assert "3 of 12 layers call CMSIS-NN directly; portable kernels:" in capsys.readouterr().out
    assert main([model, "--board=cortex-m4", "--backend=cmsis-nn", "--cmsis-everywhere",
                 "-o", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "12 of 12 layers call CMSIS-NN directly" in out and "portable kernels" not in out
    assert "mcu_conv2d_s8(" not in (tmp_path / "b" / "mlperf_kws_dscnn.c").read_text()
