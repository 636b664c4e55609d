"""A layer a segment calls band by band carries build-time constants in its params (Kernel.band_constants):
mcu_conv2d_s8's kernel_sums and channels_fast, mcu_depthwise_conv2d_s8's channels_fast and its lean call's
channel groups prepared for the core's fast path (dsp_groups on a DSP core, mve_groups on an MVE one). Each
band call then neither sums the filter, checks the channels nor prepares the groups again. Whole-layer calls
carry none (no flash spent).
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.calls import ConstArg, Prepared
from emitter.compiler import compile_model
from emitter.render import bundle as bundle_module
from emitter.target.toolchain import missing_tools
from emitter.verify.run import run_host
from tests.harness.bundles import emit
from tests.memory.chains import same_size_convs
from tests.memory.qemu import qemu_counted
from tests.memory.test_fed import front_model

MISSING = missing_tools()


def model(tmp_path: Path) -> Path:
    """A depthwise-separable block like KWS's: pointwise, 3x3 depthwise, pointwise, 16 channels."""
    return same_size_convs(16, 12, 6, (1, 3, 1), (False, True, False), tmp_path, seed=3)


def params_of(c_text: str, k: int) -> str:
    """The initializer of layer k's params struct in a bundle's C."""
    got = re.search(rf"static const \w+ net_l{k}_params = \{{(.*?)\n\}};", c_text, re.S)
    assert got is not None, f"layer {k} has no params"
    return got.group(1)


def sums_of(c_text: str, k: int) -> list[int] | None:
    """Layer k's kernel sums array in a bundle's C, None where it has none."""
    got = re.search(rf"net_l{k}_kernel_sums\[\d+\][^=;]*= \{{([^}}]*)\}}", c_text, re.S)
    return None if got is None else [int(v) for v in got.group(1).split(",") if v.strip()]


@pytest.mark.parametrize("kind", ["separable", "front"])
@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
def test_streamed_layers_carry_their_constants(kind: str, core: str, tmp_path: Path) -> None:
    """A convolution the plan calls band by band carries kernel_sums equal to bias + input offset x the
    sum of each output channel's weights, and channels_fast 1; a depthwise one channels_fast 1; a layer
    called whole carries neither."""
    path = model(tmp_path) if kind == "separable" else front_model("taps", tmp_path)
    board = load_board(core)
    for memory in ("stream", "layer"):
        c = compile_model(path, name="net", board=board, memory=memory, io_nhwc=True)
        banded = {s.step for seg in c.plan.schedule.segments for s in seg.stages}
        assert bool(banded) == (memory == "stream")
        text = "".join(p.read_text() for p in emit(c, tmp_path / memory).glob("*.c"))
        for k, p in enumerate(c.prepared):
            if p.kernel not in ("mcu_conv2d_s8", "mcu_depthwise_conv2d_s8"):
                continue
            assert (".channels_fast = 1," in params_of(text, k)) == (k in banded), (memory, k)
            if p.kernel == "mcu_depthwise_conv2d_s8":  # the groups of the core's own path only
                for isa, on in (("dsp", "cortex-m4"), ("mve", "cortex-m55")):
                    groups = f".{isa}_groups = net_l{k}_{isa}_groups," in params_of(text, k)
                    assert groups == (k in banded and core == on), (memory, k, isa)
                continue
            want = None
            if k in banded:
                filt, bias = p.operands["filter"], p.operands["bias"]
                assert isinstance(filt, ConstArg) and isinstance(bias, ConstArg) and p.params is not None
                want = (bias.data.astype(np.int64) + p.params.q.input_offset * filt.data.reshape(
                    p.params.filter.n, -1).astype(np.int64).sum(axis=1)).tolist()
            assert sums_of(text, k) == want, (memory, k)


@pytest.mark.skipif(bool(MISSING), reason="needs missing tools: " + "; ".join(MISSING))
@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
def test_band_constants_bit_exact_and_faster(core: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The streamed plan is bit-exact in QEMU with the plain host build, and runs fewer instructions
    than the same plan without the constants (but the depthwise groups: the plan gave their lean calls
    no scratch)."""
    path = model(tmp_path)
    board = load_board(core)
    c = compile_model(path, name="net", board=board, memory="stream", io_nhwc=True)
    rng = np.random.default_rng(9)
    samples = [[rng.integers(-128, 128, c.input_shapes[0]).astype(np.int8)] for _ in range(3)]
    host_c = compile_model(path, name="net", memory="layer", isa="c", io_nhwc=True)
    want = run_host(host_c, emit(host_c, tmp_path / "host_bundle"), samples, tmp_path / "host")
    got, count = qemu_counted(c, board, samples, tmp_path / "host" / "glue", tmp_path / "with")
    with_constants = bundle_module.band_params

    def plain(p: Prepared) -> Any:  # the plan's lean depthwise calls need their groups: no scratch for them
        full = with_constants(p)
        groups = {f: getattr(full, f) for f in ("dsp_groups", "mve_groups") if getattr(full, f, None) is not None}
        return replace(p.params, **groups) if groups else p.params
    monkeypatch.setattr(bundle_module, "band_params", plain)
    got_plain, plain = qemu_counted(c, board, samples, tmp_path / "host" / "glue", tmp_path / "without")
    for k in range(len(samples)):
        for outs in (got, got_plain):
            assert np.array_equal(np.asarray(outs[k][0]).ravel(), np.asarray(want[k][0]).ravel()), (core, k)
    assert count < plain, (count, plain)
