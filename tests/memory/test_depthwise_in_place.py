"""A depthwise convolution written over its input (mcu_depthwise_conv2d_s8_in_place: channel block
by channel block through the scratch), chosen where it lowers the plan's peak: the planner places
the output exactly on the input and gives the call its own scratch, the bundle calls it, and the
results stay bit-exact with the golden model on the host and in QEMU, on every path (generic on
cortex-m0plus, DSP, MVE; a last block of fewer channels)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model
from emitter.kernels import mcu_depthwise_conv2d_s8 as dw_twin
from emitter.plan.search import activation_ram
from emitter.target.toolchain import missing_tools
from emitter.verify.run import run_host
from tests.harness.bundles import emit
from tests.memory.chains import same_size_convs
from tests.memory.qemu import qemu_outputs

MISSING = missing_tools()
IR_VERSION = 8
# (core, channels, height, width): 64 channels eight blocks of 8; 68 eight and a last one of 4 (blocks of
# MCU_DW_IN_PLACE_CHANNELS; its copies take 2 x 8 / C of the tensor). Deep and small: there the blocks'
# scratch is less than the pixels below the input a layer's own call writes from (test_depthwise_over_input.py)
CASES = [("cortex-m0plus", 68, 3, 3), ("cortex-m4", 68, 3, 3), ("cortex-m7", 64, 3, 3), ("cortex-m55", 68, 3, 3)]


def depthwise_model(c: int, h: int, w: int, out: Path, seed: int = 0) -> Path:
    """Three depthwise convs (3x3 pad 1, 3x3 pad 1, 5x5 pad 2: the output as large as the input),
    each with ReLU; quantized QDQ int8, per channel."""
    return same_size_convs(c, h, w, (3, 3, 5), True, out, seed)


def in_place_steps(c: Compiled) -> list[int]:
    """The steps the bundle runs through mcu_depthwise_conv2d_s8_in_place."""
    return [k for k in range(len(c.graph.nodes)) if (call := c.plan.schedule.call_at(k)) is not None
            and call.call == dw_twin.IN_PLACE_C]


def compiled(core: str, ch: int, h: int, w: int, tmp_path: Path) -> tuple[Path, Compiled]:
    onnx_path = depthwise_model(ch, h, w, tmp_path)
    return onnx_path, compile_model(onnx_path, name="net", board=load_board(core), memory="inplace", io_nhwc=True)


@pytest.mark.parametrize(("core", "ch", "h", "w"), CASES)
def test_depthwise_in_place_lowers_the_peak(core: str, ch: int, h: int, w: int, tmp_path: Path) -> None:
    onnx_path, c = compiled(core, ch, h, w, tmp_path)
    steps = in_place_steps(c)
    assert steps, "no depthwise layer written over its input"
    at = {b.name: b for b in c.plan.buffers}
    for k in steps:
        node = c.graph.nodes[k]
        out = c.plan.root[node.outputs[0]]
        if out in at:  # (the last layer writes the caller's buffer)
            assert at[out].offset == at[c.plan.root[node.inputs[0]]].offset, "not exactly over its input"
        scratch = at[f"{node.name}#scratch"].size
        p = c.prepared[k]
        assert scratch == dw_twin.in_place_buffer_size(p.params, p.operands["bias"].data, c.plan_isa)
    plain = compile_model(onnx_path, name="net", board=load_board(core), memory="layer", io_nhwc=True)
    assert activation_ram(c.graph, c.plan) < activation_ram(plain.graph, plain.plan)


@pytest.mark.skipif(bool(MISSING), reason="needs missing tools: " + "; ".join(MISSING))
@pytest.mark.parametrize(("core", "ch", "h", "w"), CASES)
def test_depthwise_in_place_bit_exact_in_qemu(core: str, ch: int, h: int, w: int, tmp_path: Path) -> None:
    board = load_board(core)
    onnx_path, c = compiled(core, ch, h, w, tmp_path)
    assert in_place_steps(c)
    rng = np.random.default_rng(2)
    samples = [[rng.integers(-128, 128, c.input_shapes[0]).astype(np.int8)] for _ in range(3)]
    plain = compile_model(onnx_path, name="net", memory="layer", isa="c", io_nhwc=True)
    want = run_host(plain, emit(plain, tmp_path / "plain_bundle"), samples, tmp_path / "plain")
    got = qemu_outputs(c, board, samples, tmp_path / "plain" / "glue", tmp_path)
    assert dw_twin.IN_PLACE_C + "(" in (tmp_path / "bundle" / "net.c").read_text()
    host = run_host(c, tmp_path / "bundle", samples, tmp_path / "host")  # the same plan, built for the host
    for k in range(len(samples)):
        expect = np.asarray(want[k][0]).ravel()
        assert np.array_equal(np.asarray(host[k][0]).ravel(), expect), ("host", core, k)
        assert np.array_equal(np.asarray(got[k][0]).ravel(), expect), (core, k)
