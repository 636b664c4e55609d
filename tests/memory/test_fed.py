"""Fed segments (emitter/plan/stream.py fed): a streamed segment whose first layer takes its lean
call keeps its scratch just below that layer's whole input (the input buffer's lead) when the
segment reads that input for the last time. Each band's ctx then holds the scratch and every
input row above it that the bands have passed (mcu_context_t built per band), and the lean call
runs the fast one once those bytes hold its scratch, where that is the faster (mcu_conv2d_s8_lean:
Kernel.lean_fast). The tests build audio-like front layers (a one-channel feature map, a tall
convolution, a fully connected head that accumulates the rows) and check: the plan feeds the
segment in the same RAM,
the generated code passes the growing ctx, the bundle is bit-exact in QEMU on every core and as
the board's bundle built for the host, and on the DSP cores the fed plan runs fewer instructions
than the same plan with its scratch in its own buffer."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from emitter.boards import Board, load_board
from emitter.compiler import Compiled, compile_model
from emitter.plan import search
from emitter.plan.arena import scratch_of
from emitter.target.toolchain import missing_tools
from emitter.verify.run import run_host
from tests.harness.bundles import emit
from tests.memory.chains import IR_VERSION
from tests.memory.qemu import qemu_counted
from tests.memory.test_pointwise_in_place import board_bundle_on_host
from tests.models.ops import quantize

MISSING = missing_tools()

# (input h, w, c), conv (c_out, kh, kw, stride, pads top/left/bottom/right), fully connected outputs
SHAPES = {
    "speech": ((49, 40, 1), (8, 10, 8, 2, (4, 3, 5, 3)), 4),  # micro_speech's front layer
    "narrow": ((31, 16, 1), (6, 5, 4, 1, (2, 1, 2, 2)), 3),  # stride 1, an odd channel count
    "taps": ((17, 12, 4), (8, 3, 3, 1, (1, 1, 1, 1)), 5),  # four input channels: windows tap by tap
}


def front_model(kind: str, out: Path) -> Path:
    """A quantized QDQ model: [1, c, h, w] -> Conv + ReLU -> Flatten -> Gemm."""
    (h, w, c), (co, kh, kw, s, pads), n = SHAPES[kind]
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, (co, c, kh, kw)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.normal(0, 0.1, co).astype(np.float32), "b")]
    oh = (h + pads[0] + pads[2] - kh) // s + 1
    ow = (w + pads[1] + pads[3] - kw) // s + 1
    inits += [numpy_helper.from_array(rng.normal(0, 0.05, (n, co * oh * ow)).astype(np.float32), "fw"),
              numpy_helper.from_array(rng.normal(0, 0.1, n).astype(np.float32), "fb")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[kh, kw],
                              strides=[s, s], pads=[pads[0], pads[1], pads[2], pads[3]]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(nodes, f"front_{kind}", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                      [1, c, h, w])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mcugen-tests")
    model.ir_version = IR_VERSION
    calib = [{"x": rng.normal(0, 1, (1, c, h, w)).astype(np.float32)} for _ in range(8)]
    return quantize(onnx.shape_inference.infer_shapes(model), calib, out_path=out / f"front_{kind}.onnx")


def smallest(onnx_path: Path, board: Board, feed: bool, monkeypatch: pytest.MonkeyPatch) -> Compiled:
    monkeypatch.setattr(search, "FEED", feed)
    return compile_model(onnx_path, name="net", board=board, memory="stream", io_nhwc=True)


@pytest.mark.parametrize("kind", sorted(SHAPES))
@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
def test_fed_in_the_same_ram(kind: str, core: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The smallest plan feeds its segment where the lean call needs less than the fast one (the DSP
    cores): no scratch buffer of its own, the input leads with it, and the RAM does not grow."""
    board = load_board(core)
    path = front_model(kind, tmp_path)
    plain = smallest(path, board, False, monkeypatch)
    fed = smallest(path, board, True, monkeypatch)
    assert fed.plan.arena_size <= plain.plan.arena_size
    seg = fed.plan.schedule.segments[0]
    if board.isa != "dsp":  # the MVE lean call needs what the fast one does here: nothing to feed
        return
    assert fed.plan.feeds, "the segment is not fed"
    head = fed.graph.nodes[seg.first].name
    lead = next(b for b in fed.plan.buffers if b.name == fed.plan.feeds[head])
    assert lead.lead == seg.feed > 0
    assert scratch_of(fed.plan, head) == lead.offset
    assert not any(b.kind == "scratch" for b in fed.plan.buffers)
    assert 0 < seg.feed_fast <= 1


@pytest.mark.skipif(bool(MISSING), reason="needs missing tools: " + "; ".join(MISSING))
@pytest.mark.parametrize(("kind", "core"), [("speech", "cortex-m4"), ("narrow", "cortex-m7"),
                                            ("taps", "cortex-m4"), ("speech", "cortex-m55")])
def test_fed_bit_exact_and_faster(kind: str, core: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fed plan is bit-exact with the golden model's plain build in QEMU and as the board's bundle
    built for the host; on a DSP core it passes each band a ctx that grows with the rows passed and
    runs fewer instructions than the same plan unfed."""
    board = load_board(core)
    path = front_model(kind, tmp_path)
    fed = smallest(path, board, True, monkeypatch)
    rng = np.random.default_rng(5)
    samples = [[rng.integers(-128, 128, fed.input_shapes[0]).astype(np.int8)] for _ in range(3)]
    host_c = compile_model(path, name="net", memory="layer", isa="c", io_nhwc=True)
    want = run_host(host_c, emit(host_c, tmp_path / "host_bundle"), samples, tmp_path / "host")
    got, count = qemu_counted(fed, board, samples, tmp_path / "host" / "glue", tmp_path / "fed")
    on_host = board_bundle_on_host(fed, samples, tmp_path)
    for k in range(len(samples)):
        assert np.array_equal(np.asarray(got[k][0]).ravel(), np.asarray(want[k][0]).ravel()), (core, k)
        assert np.array_equal(np.asarray(on_host[k][0]).ravel(), np.asarray(want[k][0]).ravel()), (core, k, "host")
    if board.isa != "dsp":
        return
    text = "".join(p.read_text() for p in (tmp_path / "fed" / "bundle").glob("*.c"))
    assert "&(mcu_context_t){" in text and "+ rows[0] * " in text
    plain = smallest(path, board, False, monkeypatch)
    assert not plain.plan.feeds
    _, plain_count = qemu_counted(plain, board, samples, tmp_path / "host" / "glue", tmp_path / "plain")
    assert count < plain_count, (count, plain_count)


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_a_fed_segment_keeps_its_first_layer_lean(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chosen plan is relaxed again while that gains (search.RELAX_ROUNDS): a fed segment's first
    layer stays on its lean call (which runs the fast one where its ctx has room), never back on the
    fast call in the fed bytes (the band calls would find too little scratch and return an error)."""
    from emitter.plan.stream import without_lean

    c = smallest(front_model(kind, tmp_path), load_board("cortex-m4"), True, monkeypatch)
    fed = [s for s in c.plan.schedule.segments if s.feed]
    assert fed, "the smallest plan feeds its segment"
    for seg in fed:
        assert seg.first in seg.lean
        assert without_lean(seg, c.prepared, "dsp", seg.first) is None
