"""Whole layers on their lean calls in an in-place plan (emitter/plan/search.py leaner): where the
fast call's scratch sets the peak, a pointwise layer writes over its input through mcu_conv2d_s8_lean
(its MVE variant with the build-time constants takes every channel of three positions at a time, in
groups: no constants in scratch, the windows copied before the outputs are written), and another
convolution runs as one whole lean call. Their params carry kernel_sums and requant_bases (the C's
sizes are asked for those params); the bundle is bit-exact in QEMU and built for the host, and the
plan is smaller than the in-place plan on fast calls.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import compile_model
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.plan import search
from emitter.plan.stream import band_params, in_place_call, lean_in_place_call
from emitter.target.toolchain import missing_tools
from emitter.verify.run import run_host
from tests.harness.bundles import emit
from tests.memory.chains import same_size_convs
from tests.memory.qemu import qemu_outputs
from tests.memory.test_band_constants import params_of
from tests.memory.test_pointwise_in_place import board_bundle_on_host

MISSING = missing_tools()


def model(tmp_path: Path, c: int = 32) -> Path:
    """A convolution of 1x3 windows, then a depthwise-separable block like KWS's (pointwise, 3x3
    depthwise, pointwise), c channels over 10x5."""
    return same_size_convs(c, 10, 5, ((1, 3), 1, 3, 1), (False, False, True, False), tmp_path, seed=5)


def test_lean_pointwise_in_place_on_mve_only_with_the_constants(tmp_path: Path) -> None:
    """The lean call of a pointwise layer may write exactly over its input on MVE with the constants
    (all channels a pass), with less scratch than the fast call; not without them beyond one group of
    MCU_CONV_MVE_LEAN_BLOCK channels (blocks of channels a call), nor on DSP or plain C."""
    c = compile_model(model(tmp_path), name="net", board=load_board("cortex-m55"), memory="layer", io_nhwc=True)
    pw = [k for k, p in enumerate(c.prepared) if p.kernel == "mcu_conv2d_s8" and p.params.filter.w == 1]
    assert pw
    for k in pw:
        p = c.prepared[k]
        call = lean_in_place_call(p, "mve")
        fast = in_place_call(p, "mve")
        assert call is not None and fast is not None and call.down == 0 == fast.down
        assert call.call == conv_twin.LEAN_C and call.scratch < conv_twin.buffer_size(p.params, p.operands["bias"].data,
                                                                                        "mve")
        assert conv_twin.lean_in_place(band_params(p), None, "mve") == 0
        assert conv_twin.lean_in_place(p.params, None, "mve") is None  # 32 channels: blocks of 8 a call
        for isa in ("dsp", "c"):
            assert lean_in_place_call(p, isa) is None


@pytest.mark.skipif(bool(MISSING), reason="needs missing tools: " + "; ".join(MISSING))
def test_lean_calls_in_place_smaller_and_bit_exact(tmp_path: Path) -> None:
    board = load_board("cortex-m55")
    path = model(tmp_path)
    c = compile_model(path, name="net", board=board, memory="inplace", io_nhwc=True)
    calls = {k: call for k in c.plan.schedule.exact if (call := c.plan.schedule.call_at(k)) is not None}
    lean_pw = [k for k, call in calls.items() if call.call == conv_twin.LEAN_C]
    whole = [s.first for s in c.plan.schedule.segments if c.plan.modes.get(s.first) == "whole" and s.lean]
    assert lean_pw == [1] and whole == [0], (calls, c.plan.schedule.segments)
    # smaller than the in-place plan without them
    with pytest.MonkeyPatch.context() as m:
        m.setattr(search, "leaner", lambda *args: [])
        plain = compile_model(path, name="net", board=board, memory="inplace", io_nhwc=True)
    assert c.plan.arena_size < plain.plan.arena_size, (c.plan.arena_size, plain.plan.arena_size)
    # the lean layers' params carry the constants the C was asked about
    text = "".join(p.read_text() for p in emit(c, tmp_path / "bundle").glob("*.c"))
    for k in (*lean_pw, *whole):
        assert ".requant_bases = net_l" in params_of(text, k) and ".kernel_sums = net_l" in params_of(text, k), k
    rng = np.random.default_rng(2)
    samples = [[rng.integers(-128, 128, c.input_shapes[0]).astype(np.int8)] for _ in range(3)]
    host_c = compile_model(path, name="net", memory="layer", isa="c", io_nhwc=True)
    want = run_host(host_c, emit(host_c, tmp_path / "host_bundle"), samples, tmp_path / "host")
    got = qemu_outputs(c, board, samples, tmp_path / "host" / "glue", tmp_path)
    on_host = board_bundle_on_host(c, samples, tmp_path)
    for k in range(len(samples)):
        assert np.array_equal(np.asarray(got[k][0]).ravel(), np.asarray(want[k][0]).ravel()), k
        assert np.array_equal(np.asarray(on_host[k][0]).ravel(), np.asarray(want[k][0]).ravel()), (k, "host")


# (core, isa, kernels, depthwise): 8 channels, chains where some stage's fast call needs no more than
# the least another stage needs (the DSP cores' pointwise layers beside the depthwise's lean call)
SEGMENTS = [("cortex-m4", "dsp", ((1, 3), 1, 3, 1), (False, False, True, False)),
            ("cortex-m7", "dsp", (3, 3, 1), (True, False, False))]


@pytest.mark.parametrize(("core", "isa", "kernels", "depthwise"), SEGMENTS)
def test_a_segment_takes_lean_calls_only_where_they_lower_its_scratch(core: str, isa: str, kernels: tuple,
                                                                      depthwise: tuple, tmp_path: Path) -> None:
    """A streamed segment's scratch is the least its stages allow (each stage's lean call where it
    needs fewer bytes); a stage whose fast call needs no more than that keeps its fast call."""
    from emitter.plan.propose import stages
    from emitter.plan.stream import band_scratch, make_segment

    path = same_size_convs(8, 10, 5, kernels, depthwise, tmp_path, seed=5)
    c = compile_model(path, name="net", board=load_board(core), memory="layer", io_nhwc=True)
    st = stages(c.graph, c.prepared, list(range(len(c.prepared))))
    assert st is not None and len(st) == len(kernels)
    seg = make_segment(st, c.prepared, isa, lean=True)
    assert seg is not None
    fast = [band_scratch(s, c.prepared[s.step], isa) for s in st]
    lean = [band_scratch(s, c.prepared[s.step], isa, True) for s in st]
    pairs = [(a, b) for a, b in zip(fast, lean, strict=True) if a is not None and b is not None]
    assert len(pairs) == len(st)
    least = max(min(a, b) for a, b in pairs)
    assert seg.scratch == least
    kept = [s.step for s, (a, b) in zip(st, pairs, strict=True) if b < a <= least]
    assert kept and not set(kept) & set(seg.lean)  # (lean would save bytes there, but not the segment's)
    assert seg.lean == tuple(s.step for s, (a, b) in zip(st, pairs, strict=True) if b < a and a > least)
