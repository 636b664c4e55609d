"""The cmsis-nn backend's per-layer kernel choice, its summary, and its arena bound.

`--backend cmsis-nn` calls CMSIS-NN except on layers where mcugen's own kernel executes fewer
instructions (emitter/backends/kernel_choice.py: the measured cost tables, docs/kernel_choice.md);
compile_model(cmsis_choice="cmsis") (`mcugen --cmsis-everywhere`) converts every layer CMSIS-NN
can take. The choice's rule is tested in tests/test_kernel_choice.py; the backend tests need the user's
CMSIS-NN (CMSIS_NN_PATH) and skip without it.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from emitter.backends import kernel_choice as kc
from emitter.backends.kernel_choice import ours_is_faster
from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.report.summary import summary
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS, shared_model
from tests.harness.cmsis import CMSIS_NN

pytestmark = pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")
needs_cmsis = pytest.mark.skipif(CMSIS_NN is None, reason="CMSIS_NN_PATH is not set: CMSIS-NN is the "
                                 "user's library; point CMSIS_NN_PATH at a CMSIS-NN v7.0.0 checkout to run these")
CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")


def compiled(name: str, core: str, choice: str = "fastest", backend: str = "cmsis-nn"):
    return compile_model(shared_model(name), name="net", backend=backend, board=load_board(core),
                         cmsis_path=CMSIS_NN if backend == "cmsis-nn" else None, cmsis_choice=choice)


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
@pytest.mark.parametrize("core", CORES)
def test_portable_layers_are_the_measured_faster_ones(core):
    """Every layer kept portable is one whose choice (cost table) says mcugen's kernel is faster;
    every other choice calls CMSIS-NN; plain-C cores (M0+) make no choice: CMSIS-NN throughout."""
    c = compiled("mlperf_kws_dscnn", core)
    kept = {k for k, _, why in c.portable_layers if why.startswith("faster than CMSIS-NN")}
    assert {x.index for x in c.kernel_choices if x.ours_wins} == kept
    assert all(x.source == "table" for x in c.kernel_choices)
    if core == "cortex-m0plus":
        assert not c.kernel_choices and not kept
    else:
        assert len(c.kernel_choices) == sum(1 for p in c.prepared if p.kernel.startswith(("arm_conv", "arm_depth",
                                                                                        "arm_fully", "mcu_conv",
                                                                                        "mcu_depth", "mcu_fully")))


def layer(name: str, kernel: str, core: str = "cortex-m4"):
    c = compile_model(shared_model(name), name="net", board=load_board(core))
    return next(p for p in c.prepared if p.kernel == kernel)


def test_reasons_name_both_counts_and_plain_c_keeps_cmsis():
    """ours_is_faster() gives the two counts and the path where mcugen's kernel wins, None on a
    plain-C code path; the choice follows the path (a layer off the fast path is another group)."""
    dw = layer("mlperf_kws_dscnn", "mcu_depthwise_conv2d_s8")
    why = ours_is_faster(dw, "dsp")
    assert why is not None and "vs CMSIS-NN" in why and "dsp path" in why
    assert ours_is_faster(dw, "c") is None
    c = dw.params
    off = replace(dw, params=replace(c, shift=np.zeros_like(c.shift)))  # requantization off the fast path
    why_off = ours_is_faster(off, "dsp")
    assert why_off is None or "generic path" in why_off


def test_held_back_1d_depthwise_on_m55_keeps_the_faster_mve_kernel():
    """Depthwise Kx1 (K 9..15) over 40..128 channels, the held-back audio model's class (issue 12):
    mcugen's MVE depthwise used to spend 1.3-2.4x CMSIS-NN's instructions there; its whole-window
    runs now spend fewer (0.55-0.85x measured), and the M55 table, measured on the kernels of this
    tree, says so."""
    from emitter.backends.cost_cases import Shape

    rows = kc.load_table("cortex-m55")
    for k, ch in ((9, 64), (11, 96), (15, 128), (13, 40)):
        got = kc.predict(rows, Shape("dw", 49, 1, ch, ch, k, 1, pt=k // 2, pb=k // 2), "mve", "mve")
        assert got is not None and got[0] < got[1], (k, ch, got)


@needs_cmsis
def test_cli_cmsis_everywhere(tmp_path, capsys, cmsis_env):
    """`--cmsis-everywhere` calls CMSIS-NN on every layer it supports; by default the summary
    names the layers kept portable."""
    from emitter.cli import main

    model = str(shared_model("mlperf_kws_dscnn"))
    assert main([model, "--board=cortex-m4", "--backend=cmsis-nn", "-o", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "of 12 layers call CMSIS-NN directly; portable kernels:" in out
    assert "kernel choice: 10 conv/depthwise/FC layers, 10 from the cost table" in out
    assert main([model, "--board=cortex-m4", "--backend=cmsis-nn", "--cmsis-everywhere",
                 "-o", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "12 of 12 layers call CMSIS-NN directly" in out and "portable kernels" not in out
    assert "mcu_conv2d_s8(" not in (tmp_path / "b" / "mlperf_kws_dscnn.c").read_text()
