"""A depthwise convolution written over its input in one whole call of its own
(mcu_depthwise_conv2d_s8_overlap_down, asked of the C through the twin's in_place): the output
starts exactly as far below the input as the path's order of writes needs (rows: one row and one
pixel for 3x3 with padding 1; the DSP path's 3x3 row pairs: two rows and a pixel; its Kx1 lines:
column by column; exactly: the fast paths run groups of channels over the whole output), the
planner places it there, and the bundle stays bit-exact with the golden
model on the host and in QEMU on every path (generic, DSP with its pairs and lines,
MVE with its row ring); one pixel less than the rule breaks it."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model
from emitter.kernels import kernel
from emitter.kernels import mcu_depthwise_conv2d_s8 as dw_twin
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_depthwise_conv2d_s8 import DepthwiseConvParams
from emitter.plan import search, stream
from emitter.plan.stream import in_place_call
from emitter.target.toolchain import missing_tools
from emitter.verify.run import run_host
from tests.harness.bundles import emit
from tests.memory.chains import same_size_convs
from tests.memory.qemu import qemu_outputs

MISSING = missing_tools()


@pytest.fixture(autouse=True)
def _no_homing(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check where the plain in-place rule puts each output (no homing calls, which
    move it back onto the input: tests/memory/test_homing.py)."""
    monkeypatch.setattr(search, "HOMING", False)
# 3x3 (row pairs on DSP), 5x1 (DSP lines down the columns), 1x5 (lines along the rows), 5x5
WINDOWS: tuple[tuple[int, int], ...] = ((3, 3), (5, 1), (1, 5), (5, 5))
# (core, channels, height, width): cortex-m55 8 x 5: narrow, the MVE row ring. (Channels a multiple of 4:
# the output then starts on the arena's alignment)
CASES = [("cortex-m0plus", 12, 7, 6), ("cortex-m4", 36, 7, 6), ("cortex-m7", 16, 9, 5), ("cortex-m55", 24, 8, 5),
         ("cortex-m55", 8, 6, 11)]


def params(h: int, w: int, c: int, kh: int, kw: int) -> DepthwiseConvParams:
    return DepthwiseConvParams(Dims(1, h, w, c), Dims(1, kh, kw, c), Dims(1, h, w, c), 1, 1, 1, 1, 1, kh // 2, kw // 2,
                               QuantIO(0, 0, -128, 127), np.full(c, 1 << 30, np.int32), np.full(c, -1, np.int32))


def test_the_rule_follows_the_order_of_writes() -> None:
    """Rows: every input pixel above and left of the window's first is read for the last time; the DSP
    row pairs write a pair's lower row while the upper one still reads the row above; the DSP lines of
    a Kx1 filter run down the columns: whole rows below."""
    c = 8
    bias = np.zeros(c, np.int32)
    assert dw_twin.in_place(params(6, 5, c, 3, 3), bias, "c") == (5 + 1) * c
    assert dw_twin.in_place(params(6, 5, c, 3, 3), bias, "mve") == (5 + 1) * c
    assert dw_twin.in_place(params(6, 5, c, 3, 3), bias, "dsp") == (2 * 5 + 1) * c
    assert dw_twin.in_place(params(6, 5, c, 5, 5), bias, "c") == (2 * 5 + 2) * c
    assert dw_twin.in_place(params(6, 5, c, 5, 1), bias, "c") == 2 * 5 * c
    assert dw_twin.in_place(params(6, 5, c, 5, 1), bias, "dsp") == 2 * 5 * c
    assert dw_twin.in_place(params(6, 5, c, 1, 5), bias, "dsp") == 2 * c
    assert dw_twin.in_place(params(6, 5, c, 1, 1), bias, "dsp") == 0
    two = DepthwiseConvParams(Dims(1, 6, 5, 4), Dims(1, 3, 3, 8), Dims(1, 6, 5, 8), 2, 1, 1, 1, 1, 1, 1,
                              QuantIO(0, 0, -128, 127), np.full(8, 1 << 30, np.int32), np.full(8, -1, np.int32))
    assert dw_twin.in_place(two, bias, "c") is None  # depth_multiplier 2: channels read other channels


def depthwise_steps(c: Compiled) -> list[int]:
    return [k for k, p in enumerate(c.prepared) if p.kernel == "mcu_depthwise_conv2d_s8"]


def placed_down(c: Compiled, step: int) -> int | None:
    """How far below its input the layer's output starts, None where they do not overlap."""
    node = c.graph.nodes[step]
    at = {b.name: b for b in c.plan.buffers if b.kind == "tensor"}
    src, dst = at[c.plan.root[node.inputs[0]]], at[c.plan.root[node.outputs[0]]]
    if dst.offset + dst.size <= src.offset or src.offset + src.size <= dst.offset:
        return None
    return src.offset - dst.offset


def compiled(core: str, ch: int, h: int, w: int, tmp_path: Path) -> tuple[Path, Compiled]:
    onnx_path = same_size_convs(ch, h, w, WINDOWS, True, tmp_path)
    return onnx_path, compile_model(onnx_path, name="net", board=load_board(core), memory="inplace", io_nhwc=True)


@pytest.mark.parametrize(("core", "ch", "h", "w"), CASES)
def test_the_plan_places_outputs_exactly_at_the_rule(core: str, ch: int, h: int, w: int, tmp_path: Path) -> None:
    _, c = compiled(core, ch, h, w, tmp_path)
    steps = depthwise_steps(c)
    assert len(steps) == len(WINDOWS)
    at_limit = 0
    for step in steps[:-1]:  # (the last layer writes the caller's buffer)
        call = c.plan.schedule.call_at(step)
        assert call is not None
        placed = placed_down(c, step)
        if call.call:  # the channel-block call, where it set a lower peak (test_depthwise_in_place.py)
            assert call.call == dw_twin.IN_PLACE_C and placed == 0
            continue
        assert call == in_place_call(c.prepared[step], c.plan_isa)
        assert call.exact and placed in (call.down, None), (step, placed, call.down)  # there or not over it
        at_limit += placed == call.down
    assert at_limit >= 2, "fewer than two outputs over their input: the QEMU test would test little"


@pytest.mark.skipif(bool(MISSING), reason="needs missing tools: " + "; ".join(MISSING))
@pytest.mark.parametrize("short", [False, True])
@pytest.mark.parametrize(("core", "ch", "h", "w"), CASES)
def test_over_its_input_bit_exact(core: str, ch: int, h: int, w: int, short: bool, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Bit-exact at the rule's limit; with a rule one position short (short=True) the layers whose
    rule needs a row or more above the pixel (every window here but the 1x5) go wrong."""
    board = load_board(core)
    onnx_path = same_size_convs(ch, h, w, WINDOWS, True, tmp_path)
    if short:
        rule = dw_twin.in_place

        def less(p: DepthwiseConvParams, bias: np.ndarray | None, isa: str) -> int | None:
            down = rule(p, bias, isa)
            return None if down is None else max(0, down - p.output.c)

        short_twin = replace(dw_twin.KERNEL, in_place=less)
        monkeypatch.setattr(stream, "twin", lambda name: short_twin if name == short_twin.name else kernel(name))
    c = compile_model(onnx_path, name="net", board=board, memory="inplace", io_nhwc=True)
    rng = np.random.default_rng(3)
    samples = [[rng.integers(-128, 128, c.input_shapes[0]).astype(np.int8)] for _ in range(3)]
    plain = compile_model(onnx_path, name="net", memory="layer", isa="c", io_nhwc=True)
    want = run_host(plain, emit(plain, tmp_path / "plain_bundle"), samples, tmp_path / "plain")
    got = qemu_outputs(c, board, samples, tmp_path / "plain" / "glue", tmp_path)
    same = all(np.array_equal(np.asarray(got[k][0]).ravel(), np.asarray(want[k][0]).ravel())
               for k in range(len(samples)))
    if short:
        assert not same, f"{core}: a rule one position short still bit-exact: the test cannot fail"
        return
    assert same, core
    host = run_host(c, tmp_path / "bundle", samples, tmp_path / "host")  # the same plan, built for the host
    for k in range(len(samples)):
        assert np.array_equal(np.asarray(host[k][0]).ravel(), np.asarray(want[k][0]).ravel()), ("host", core, k)
