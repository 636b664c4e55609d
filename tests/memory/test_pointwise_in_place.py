"""A pointwise convolution (1x1, stride 1, as many output channels as input ones) written over its
input in one whole call (emitter/kernels/mcu_conv2d_s8.py in_place): the planner places its output
exactly where the C path allows it (the DSP path: on the input when its passes divide the
positions, else four positions lower; MVE: on the input, when the channels are one block;
generic: never; beyond 128 channels at least one position lower, where a host build of the same
bundle runs the generic path position by position without room for a position's outputs), and the
bundle stays bit-exact with the golden model in QEMU and built for the host."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model
from emitter.kernels import kernel
from emitter.plan import search
from emitter.plan.stream import in_place_call
from emitter.target.toolchain import missing_tools
from emitter.verify.harness import run_on_host, write_glue
from emitter.verify.run import run_host, unpack
from tests.harness.bundles import emit
from tests.memory.chains import same_size_convs
from tests.memory.qemu import qemu_outputs

MISSING = missing_tools()


@pytest.fixture(autouse=True)
def _no_homing(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check where the plain in-place rule puts each output (no homing calls, which
    move it back onto the input: tests/memory/test_homing.py)."""
    monkeypatch.setattr(search, "HOMING", False)
IR_VERSION = 8

# (core, channels, height, width): the whole-call overlap the core's path allows, in positions (None: none)
CASES = [("cortex-m4", 16, 5, 5, 4),  # 25 positions: the DSP path's last pass steps back
         ("cortex-m7", 16, 4, 6, 0),  # 24 positions: every pass whole
         ("cortex-m55", 16, 5, 5, 0),  # MVE: one block of channels
         ("cortex-m55", 80, 3, 3, None),  # MVE: two blocks (MCU_CONV_MVE_OC_BLOCK 64): never
         ("cortex-m0plus", 16, 5, 5, None)]  # generic: never


def pointwise_model(c: int, h: int, w: int, out: Path, seed: int = 0) -> Path:
    """Three pointwise convs (c -> c), each with ReLU; quantized QDQ int8. Compiled with io_nhwc,
    the arena holds one tensor and the layers' overlaps at least (the input lives in it)."""
    return same_size_convs(c, h, w, (1, 1, 1), False, out, seed)


def pointwise_steps(c: Compiled) -> list[int]:
    return [k for k, p in enumerate(c.prepared) if p.kernel == "mcu_conv2d_s8"]


def placed_down(c: Compiled, step: int) -> int | None:
    """How far below its input the layer's output starts, None where they do not overlap."""
    node = c.graph.nodes[step]
    at = {b.name: b for b in c.plan.buffers if b.kind == "tensor"}
    src, dst = at[c.plan.root[node.inputs[0]]], at[c.plan.root[node.outputs[0]]]
    if dst.offset + dst.size <= src.offset or src.offset + src.size <= dst.offset:
        return None
    return src.offset - dst.offset


def board_bundle_on_host(c: Compiled, samples: list[list[np.ndarray]], tmp_path: Path) -> list:
    """The board's bundle of `c` built with the host gcc (-Werror) and run on `samples`: its outputs."""
    write_glue(c, tmp_path / "board_glue")
    run_dir, res = run_on_host(emit(c, tmp_path / "board_bundle"), tmp_path / "board_glue", tmp_path / "board_host",
                               samples, werror=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return unpack(c, (run_dir / "output.bin").read_bytes(), len(samples))


@pytest.mark.parametrize(("core", "ch", "h", "w", "positions"), CASES)
def test_pointwise_written_over_its_input_where_the_path_allows(core: str, ch: int, h: int, w: int,
                                                                positions: int | None, tmp_path: Path) -> None:
    board = load_board(core)
    c = compile_model(pointwise_model(ch, h, w, tmp_path), name="net", board=board, memory="inplace", io_nhwc=True)
    steps = pointwise_steps(c)
    assert len(steps) == 3
    want = None if positions is None else positions * ch
    for step in steps:
        call = in_place_call(c.prepared[step], c.plan_isa)
        assert (call.down if call is not None else None) == want
    # each layer's output in the arena (the last one's is the caller's) as high as the rule lets
    # it (the smallest arena): exactly at the limit
    for step in steps[:-1]:
        assert placed_down(c, step) == want, (step, placed_down(c, step), want)


def test_the_rule_is_the_pointwise_layers_only() -> None:
    from emitter.kernels.common import Dims, QuantIO
    from emitter.kernels.mcu_conv2d_s8 import ConvParams

    def conv(k: int, stride: int, pad: int, c_out: int) -> ConvParams:
        o = (6 + 2 * pad - k) // stride + 1
        return ConvParams(Dims(1, 6, 6, 8), Dims(c_out, k, k, 8), Dims(1, o, o, c_out), stride, stride, 1, 1,
                          pad, pad, QuantIO(0, 0, -128, 127), np.full(c_out, 1 << 30, np.int32),
                          np.full(c_out, -8, np.int32))

    rule = kernel("mcu_conv2d_s8").in_place
    assert rule is not None
    assert rule(conv(1, 1, 0, 8), None, "dsp") == 0  # 36 positions
    assert rule(conv(1, 1, 0, 8), None, "mve") == 0
    assert rule(conv(1, 1, 0, 8), None, "c") is None
    for other in (conv(3, 1, 1, 8), conv(1, 2, 0, 8), conv(1, 1, 0, 16), conv(1, 1, 1, 8)):
        assert rule(other, None, "dsp") is None


@pytest.mark.skipif(bool(MISSING), reason="needs missing tools: " + "; ".join(MISSING))
@pytest.mark.parametrize(("core", "ch", "h", "w", "positions"), [x for x in CASES if x[4] is not None])
def test_pointwise_in_place_bit_exact_in_qemu(core: str, ch: int, h: int, w: int, positions: int,
                                               tmp_path: Path) -> None:
    board = load_board(core)
    onnx_path = pointwise_model(ch, h, w, tmp_path)
    c = compile_model(onnx_path, name="net", board=board, memory="inplace", io_nhwc=True)
    assert all(placed_down(c, k) == positions * ch for k in pointwise_steps(c)[:-1])  # at the limit: tests the rule
    rng = np.random.default_rng(1)
    samples = [[rng.integers(-128, 128, c.input_shapes[0]).astype(np.int8)] for _ in range(3)]
    host_c = compile_model(onnx_path, name="net", memory="layer", isa="c", io_nhwc=True)
    want = run_host(host_c, emit(host_c, tmp_path / "host_bundle"), samples, tmp_path / "host")
    got = qemu_outputs(c, board, samples, tmp_path / "host" / "glue", tmp_path)
    for k in range(len(samples)):
        assert np.array_equal(np.asarray(got[k][0]).ravel(), np.asarray(want[k][0]).ravel()), (core, k)
    # the board's bundle itself built for the host (`make CC=gcc`): the plain C paths run its plan
    on_host = board_bundle_on_host(c, samples, tmp_path)
    for k in range(len(samples)):
        assert np.array_equal(np.asarray(on_host[k][0]).ravel(), np.asarray(want[k][0]).ravel()), (core, k, "host")


@pytest.mark.parametrize(("core", "ch", "h", "w"), [("cortex-m4", 40, 5, 5), ("cortex-m7", 40, 4, 6),
                                                    ("cortex-m55", 40, 5, 5), ("cortex-m7", 144, 4, 6)])
def test_board_bundle_over_its_input_bit_exact_built_for_the_host(core: str, ch: int, h: int, w: int,
                                                                  tmp_path: Path) -> None:
    """Two or more of the generic path's blocks of channels (MCU_CONV_OC_BLOCK 32), whose loops
    read every position again per block; the board's path writes each layer over its input (on it:
    cortex-m7 and cortex-m55 at 40 channels; one position lower at 144), and the same bundle built
    with the host gcc runs it position by position, bit-exact."""
    board = load_board(core)
    onnx_path = pointwise_model(ch, h, w, tmp_path)
    c = compile_model(onnx_path, name="net", board=board, memory="inplace", io_nhwc=True)
    downs = [placed_down(c, k) for k in pointwise_steps(c)[:-1]]
    assert all(d is not None and (ch <= 128 or d >= ch) for d in downs), downs  # over their inputs
    rng = np.random.default_rng(2)
    samples = [[rng.integers(-128, 128, c.input_shapes[0]).astype(np.int8)] for _ in range(3)]
    host_c = compile_model(onnx_path, name="net", memory="layer", isa="c", io_nhwc=True)
    want = run_host(host_c, emit(host_c, tmp_path / "host_bundle"), samples, tmp_path / "host")
    got = board_bundle_on_host(c, samples, tmp_path)
    for k in range(len(samples)):
        assert np.array_equal(np.asarray(got[k][0]).ravel(), np.asarray(want[k][0]).ravel()), (core, k)
