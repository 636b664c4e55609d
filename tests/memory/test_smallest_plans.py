"""Issue 23's figure for the smallest plans (`--memory stream`): at most 1.35x the whole-layer plan's
instructions in QEMU, bit-exact with TFLM, on the DSP cores and on cortex-m55 (docs/memory.md, "Small and
fast together"; KWS on cortex-m55 since stop 49, docs/memory_plans.md). Slow (a model's two plans built and
run in QEMU each): `bash scripts/test.sh -m slow`."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.harness.bundles import SHARED_MODELS, memory_measure

needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None,
                                reason="needs qemu-system-arm and arm-none-eabi-gcc")


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m7", "cortex-m55"])
@pytest.mark.parametrize("name", ["mlperf_kws_dscnn", "mlperf_ic_resnet8", "tflm_micro_speech"])
def test_smallest_plan_within_135_percent(name: str, core: str, tmp_path: Path) -> None:
    if not (SHARED_MODELS / name).is_dir():
        pytest.skip("shared models not available")
    measure = memory_measure()
    for kind in ("layer", "stream"):
        (tmp_path / kind).mkdir()
    whole = measure(name, core, "layer", tmp_path / "layer")
    smallest = measure(name, core, "stream", tmp_path / "stream")
    assert whole["bit_exact_vs_tflm"] and smallest["bit_exact_vs_tflm"]
    assert smallest["activation_ram_bytes"] < whole["activation_ram_bytes"]
    assert smallest["instructions"] <= 1.35 * whole["instructions"], (smallest["instructions"], whole["instructions"])
