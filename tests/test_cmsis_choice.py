"""The cmsis-nn backend's per-layer kernel choice, its summary, and its arena bound.

`--backend cmsis-nn` calls CMSIS-NN except on layer shapes where mcugen's own kernel executes
fewer instructions (emitter/backends/cmsis_nn.py: ours_is_faster, measured in docs/cmsis_nn.md);
compile_model(cmsis_choice="cmsis") converts every layer CMSIS-NN can take. These tests need the
user's CMSIS-NN (CMSIS_NN_PATH) and skip without it.
"""
from __future__ import annotations

import pytest

from emitter.backends.cmsis_nn import cmsis_path
from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.summary import summary
from tests.support import MODEL_NAMES, SHARED_MODELS, shared_model

pytestmark = [
    pytest.mark.skipif(cmsis_path() is None, reason="CMSIS_NN_PATH is not set: CMSIS-NN is the user's "
                       "library; point CMSIS_NN_PATH at a CMSIS-NN v7.0.0 checkout to run these"),
    pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present"),
]
CORES = ("cortex-m0plus", "cortex-m4", "cortex-m7", "cortex-m55")


def compiled(name: str, core: str, choice: str = "fastest", backend: str = "cmsis-nn"):
    return compile_model(shared_model(name), name="net", backend=backend, board=load_board(core),
                         cmsis_path=cmsis_path() if backend == "cmsis-nn" else None, cmsis_choice=choice)


@pytest.mark.parametrize("core", CORES)
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_arena_within_lower_bound_plus_scratch(name, core):
    """Arena <= the portable schedule's liveness lower bound + the largest CMSIS-NN scratch."""
    c = compiled(name, core)
    bound = compiled(name, core, backend="portable").plan.lower_bound
    scratch = max((p.scratch for p in c.prepared), default=0)
    assert c.plan.arena_size <= bound + scratch, (c.plan.arena_size, bound, scratch)


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


def test_choice_cmsis_converts_everything_it_can():
    everywhere = compiled("tflm_micro_speech", "cortex-m4", "cmsis")
    assert not everywhere.portable_layers
    assert all(p.kernel.startswith("arm_") for p in everywhere.prepared if p.kernel)
