"""CMSIS-NN inside streamed plans (issue 23, item 2): with the cmsis-nn backend, a layer that runs
by rows calls CMSIS-NN's convolution, depthwise convolution or pool on each band of rows (an input
sub-tensor with the band's own top padding; emitter/backends/cmsis_nn.py Banded), bit-exact with
the golden model on the host and in QEMU (cortex-m4, m7: DSP; m55: MVE), on small models with odd
padding, strides and dilations whose bands reach the top and bottom borders, and on a shared model
against TFLM's reference outputs. (An add of two whole same-size operands runs CMSIS-NN's
arm_elementwise_add_s8 on each band; IC's residual adds are checked by `mcugen verify`, see
docs/memory.md: RESIDUAL below streams wrongly with the portable kernels already.)
"""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from emitter.backends import cmsis_nn
from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model
from emitter.kernels import mcu_conv2d_s8, mcu_depthwise_conv2d_s8
from emitter.plan.search import activation_ram
from emitter.render.bundle import BundleBuilder, render_bundle
from emitter.render.write import write_bundle
from emitter.resources import data_dir
from emitter.target.toolchain import missing_tools
from emitter.verify.run import run_verify
from tests.harness.bundles import SHARED_MODELS, STRICT, shared_model
from tests.harness.cmsis import CMSIS_NN, NO_CMSIS
from tests.memory.test_bands import conv_params, geometry
from tests.models.ops import quantize

MISSING = missing_tools()
needs_cmsis = pytest.mark.skipif(CMSIS_NN is None, reason=NO_CMSIS)
needs_qemu = pytest.mark.skipif(bool(MISSING), reason="the QEMU tier needs missing tools: " + "; ".join(MISSING))
needs_models = pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason="../shared/models is not present")
CORES = ("cortex-m4", "cortex-m7", "cortex-m55")

# (kind, ...): ("conv"|"dw", out channels | multiplier, kh, kw, stride, dilation, pads [t, l, b, r]),
#              ("pool", op, kh, kw, stride, pads)
CHAIN = [("conv", 16, 3, 3, 1, 1, [1, 1, 1, 1]), ("dw", 1, 3, 3, 1, 2, [2, 2, 1, 2]),
         ("conv", 6, 1, 1, 1, 1, [0, 0, 0, 0]), ("pool", "AveragePool", 3, 3, 2, [0, 1, 2, 1]),
         ("dw", 1, 5, 3, 2, 1, [2, 1, 2, 1]), ("pool", "MaxPool", 2, 3, 1, [1, 0, 0, 2])]
OVERLAP = [("conv", 8, 3, 3, 2, 1, [2, 1, 0, 1]), ("dw", 1, 3, 3, 1, 2, [1, 1, 2, 1]),
           ("pool", "AveragePool", 3, 3, 2, [1, 1, 1, 1]), ("conv", 12, 1, 1, 1, 1, [0, 0, 0, 0]),
           ("pool", "MaxPool", 3, 2, 1, [2, 0, 0, 1]), ("dw", 2, 5, 3, 2, 1, [2, 1, 1, 1])]
RESIDUAL = [("conv", 8, 3, 3, 1, 1, [1, 1, 1, 1]), ("conv", 8, 3, 3, 1, 1, [1, 1, 1, 1]), ("add", 0),
            ("conv", 12, 1, 1, 1, 1, [0, 0, 0, 0]), ("pool", "MaxPool", 3, 3, 2, [1, 1, 1, 1])]
MODELS = {"chain": (CHAIN, 4, 40, 12, 1), "overlap": (OVERLAP, 4, 23, 11, 0)}
ONE_BY_N = ([("conv", 8, 1, 3, 1, 1, [0, 1, 0, 0])], 4, 6, 5, 2)  # 1x3, padding left 1, right 0


def chain_model(name: str, out: Path) -> Path:
    """A float chain of MODELS[name] over an NCHW input, quantized QDQ int8 per channel."""
    layers, cin, h, w, seed = MODELS.get(name) or {"one_by_n": ONE_BY_N, "residual": (RESIDUAL, 8, 30, 10, 4)}[name]
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def const(n: str, v: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(v.astype(np.float32), n))
        return n

    cur, c = "x", cin
    for k, layer in enumerate(layers):
        n = f"l{k}"
        if layer[0] == "add":  # a residual add of layer layer[1]'s output
            nodes.append(helper.make_node("Add", [cur, f"l{layer[1]}"], [n], name=n))
        elif layer[0] in ("conv", "dw"):
            kind, co, kh, kw, s, d, pads = layer
            group = c if kind == "dw" else 1
            co = c * co if kind == "dw" else co
            wt, b = rng.normal(0, 0.5, (co, c // group, kh, kw)), rng.normal(0, 0.1, co)
            nodes += [helper.make_node("Conv", [cur, const(n + "_w", wt), const(n + "_b", b)], [n + "_c"], name=n,
                                       kernel_shape=[kh, kw], strides=[s, s], dilations=[d, d], pads=pads,
                                       group=group),
                      helper.make_node("Relu", [n + "_c"], [n], name=n + "_relu")]
            c = co
        else:
            _, op, kh, kw, s, pads = layer
            attrs = {"kernel_shape": [kh, kw], "strides": [s, s], "pads": pads}
            if op == "AveragePool":
                attrs["count_include_pad"] = 0
            nodes.append(helper.make_node(op, [cur], [n], name=n, **attrs))
        cur = n
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, h, w])
    graph = helper.make_graph(nodes, name, [x], [helper.make_tensor_value_info(cur, TensorProto.FLOAT, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mcugen-tests")
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model)
    calib = [{"x": rng.normal(0, 1, (1, cin, h, w)).astype(np.float32)} for _ in range(8)]
    return quantize(model, calib, out_path=out / f"{name}.onnx")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("cmsis_stream")
    return {name: chain_model(name, out) for name in MODELS}


def compiled(path: Path, core: str, **kw: object) -> Compiled:
    assert CMSIS_NN is not None
    return compile_model(path, name="net", board=load_board(core), backend="cmsis-nn", cmsis_path=CMSIS_NN,
                         cmsis_choice="cmsis", numerics="tflite", io_nhwc=True, **kw)  # type: ignore[arg-type]


def banded(c: Compiled) -> dict[int, str]:
    """Layers that call CMSIS-NN on bands, with how their segment runs ("rows", "down", "up")."""
    b = BundleBuilder(c)
    return {k: c.plan.modes[s.first] for s in c.plan.schedule.segments if c.plan.modes.get(s.first) != "whole"
            for k in b.windows(s)}


def plan_of(path: Path, core: str, name: str) -> Compiled:
    """chain: the fastest plan within 110 % of the smallest (a streamed chain of CMSIS-NN band
    calls); overlap: the overlap plan (single layers by rows, over their input, bottom up)."""
    if name == "overlap":
        return compiled(path, core, memory="overlap")
    small = compiled(path, core, memory="stream")
    return compiled(path, core, memory="auto", ram_budget=activation_ram(small.graph, small.plan) * 11 // 10)


def test_window_band_matches_the_twins(tmp_path: Path) -> None:
    """mcu_window_band() (the rows of a band CMSIS-NN computes) equals the twins' band()."""
    lib = tmp_path / "libband.so"
    rt = data_dir("mcu_runtime")
    res = subprocess.run(["gcc", "-O1", "-shared", "-fPIC", *STRICT, f"-I{rt / 'include'}",
                          str(rt / "support" / "mcu_band.c"), "-o", str(lib)], capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0, res.stderr
    band = ctypes.CDLL(str(lib)).mcu_window_band
    rng = np.random.default_rng(3)
    for _ in range(300):
        g = geometry(rng)
        o0 = int(rng.integers(0, g["out_h"]))
        o1 = int(rng.integers(o0 + 1, g["out_h"] + 1))
        for twin, depthwise in ((mcu_conv2d_s8, False), (mcu_depthwise_conv2d_s8, True)):
            p = conv_params(g, depthwise)
            window = (ctypes.c_int32 * 6)(g["out_h"], g["h"], g["s"], g["d"], g["k"], g["pt"])
            got, rows = (ctypes.c_int32 * 3)(), (ctypes.c_int32 * 2)()
            status = band(window, o0, o1, got, rows)
            try:
                bp, lo, hi = twin.band(p, o0, o1)
            except ValueError:
                assert status != 0, (g, o0, o1)
                continue
            assert status == 0 and tuple(rows) == (lo, hi), (g, o0, o1)
            assert tuple(got) == (bp.input.h, bp.output.h, bp.pad_top), (g, o0, o1)


@needs_cmsis
@pytest.mark.parametrize("core", CORES)
def test_band_scratch_covers_every_band(models: dict[str, Path], core: str) -> None:
    """Every band call's scratch (the user's CMSIS-NN sizer, the core's code path) fits the scratch
    the plan reserved for the layer; the chain streams through CMSIS-NN's conv, depthwise and
    average pool, and none of those layers is reported portable."""
    c = plan_of(models["chain"], core, "chain")
    calls = banded(c)
    kernels = {cmsis_nn.band_call(c.prepared[k], c.plan, k).kernel for k in calls}  # type: ignore[union-attr]
    assert {"arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8", "arm_avgpool_s8"} <= kernels, kernels
    assert "rows" in calls.values()
    assert not {k for k, _, _ in c.portable_layers} & set(calls)
    conv = cmsis_nn.Converter(Path(str(CMSIS_NN)), load_board(core))
    for k in calls:
        p = c.prepared[k]
        assert isinstance(p, cmsis_nn.Banded) and p.cmsis is not None
        requests = cmsis_nn.band_requests(conv, p, p.cmsis)
        assert requests is not None
        sizes = cmsis_nn.ask_sizes(Path(str(CMSIS_NN)), [r.query for r in requests if r is not None])
        seg = c.plan.schedule.segment_at(k)
        assert seg is not None and max([0, *sizes]) <= min(p.scratch, seg.scratch), (k, sizes, p.scratch)


@needs_cmsis
def test_mve_1xn_band_stays_portable(tmp_path: Path) -> None:
    """A 1x3 convolution CMSIS-NN takes whole (6 input rows: arm_convolve_s8) but whose one-row
    bands would take MVE's arm_convolve_1_x_n_s8, which fails for this padding
    (cmsis_quirks.mve_1xn_problem): no band calls on cortex-m55; on cortex-m4 the bands are CMSIS-NN's."""
    path = chain_model("one_by_n", tmp_path)
    assert CMSIS_NN is not None
    for core, takes in (("cortex-m55", False), ("cortex-m4", True)):
        board = load_board(core)
        native = compile_model(path, name="net", board=board, numerics="tflite", io_nhwc=True, memory="layer")
        p = next(x for x in native.prepared if x.kernel == "mcu_conv2d_s8")
        conv = cmsis_nn.Converter(Path(str(CMSIS_NN)), board)
        whole, _ = conv.convert(p)
        assert whole.kernel == "arm_convolve_wrapper_s8", core
        assert (cmsis_nn.band_requests(conv, p, whole) is not None) == takes, core


@needs_cmsis
@needs_qemu
@pytest.mark.qemu
@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("core", CORES)
def test_band_calls_bit_exact_host_and_qemu(models: dict[str, Path], name: str, core: str, tmp_path: Path) -> None:
    """CMSIS-NN on bands at the top and bottom borders (odd padding, stride 2, dilation 2): the
    host build and the firmware in QEMU equal the golden model."""
    c = plan_of(models[name], core, name)
    calls = banded(c)
    assert calls and ("up" if name == "overlap" else "rows") in calls.values(), calls
    board = load_board(core)
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), tmp_path / "b")
    assert "mcu_window_band(" in (tmp_path / "b" / "net.c").read_text()
    rep = run_verify(c, tmp_path / "b", board, models[name], None, 3, qemu=True, work=tmp_path / "w")
    assert rep.ok, rep.text()
    want = np.stack([o[0] for o in rep.outputs["golden"]])
    np.testing.assert_array_equal(np.stack([o[0] for o in rep.outputs["qemu"]]), want)
    np.testing.assert_array_equal(np.stack([o[0] for o in rep.outputs["host"]]), want)


@needs_cmsis
@needs_models
@needs_qemu
@pytest.mark.qemu
def test_shared_model_streams_cmsis_nn_bit_exact_with_tflm(tmp_path: Path) -> None:
    """KWS at the issue's 9,000-byte budget on cortex-m7 with CMSIS-NN on every layer it takes:
    its convolutions and depthwise convolutions stream row by row through CMSIS-NN's kernels,
    bit-exact with TFLM's reference outputs on the host and in QEMU."""
    name, board = "mlperf_kws_dscnn", load_board("cortex-m7")
    assert CMSIS_NN is not None
    c = compile_model(shared_model(name), name="net", board=board, backend="cmsis-nn", cmsis_path=CMSIS_NN,
                      cmsis_choice="cmsis", memory="auto", ram_budget=9_000)
    assert activation_ram(c.graph, c.plan) <= 9_000
    assert len(banded(c)) >= 6, banded(c)
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), tmp_path / "b")
    ref = SHARED_MODELS / name / f"{name}_ref.npz"
    rep = run_verify(c, tmp_path / "b", board, shared_model(name), str(ref), 0, qemu=True, work=tmp_path / "w")
    assert rep.ok, rep.text()
    want = np.load(ref)["tflm_outputs"]
    np.testing.assert_array_equal(np.stack([o[0] for o in rep.outputs["qemu"]]), want)
    np.testing.assert_array_equal(np.stack([o[0] for o in rep.outputs["host"]]), want)


@pytest.mark.parametrize("memory", ["overlap", "stream"])
def test_residual_chain_streams_bit_exact_portable(tmp_path: Path, memory: str) -> None:
    """Conv 3x3, conv 3x3, add of both, conv 1x1, max pool (8 channels, 30x10), portable, host. Found
    while testing CMSIS-NN's bands, both plans were wrong (emitter/plan/arena.py overlap_pairs): in
    overlap, the fused conv + add wrote exactly over its skip operand, which is its convolution's own
    input; in stream, the add's exact in-place pair overrode the limit its chain's replay set."""
    path, board = chain_model("residual", tmp_path), load_board("cortex-m4")
    c = compile_model(path, name="net", board=board, numerics="tflite", io_nhwc=True, memory=memory)
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), tmp_path / "b")
    rep = run_verify(c, tmp_path / "b", board, path, None, 2, qemu=False, work=tmp_path / "w")
    assert rep.ok, rep.text()


def test_budget_compares_the_kernel_choices_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a budget (the fastest plan within it), the kernel choices' plans are compared by their
    estimated instructions: CMSIS-NN's calls whose plan streams at a high cost lose to the choice
    with more layers portable whose plan does not; with no budget the first choice that fits is
    kept (its kernels are the faster on whole layers), and one at no overhead ends the comparison."""
    from emitter import compiler
    from emitter.plan import search

    asked: list[str] = []

    def fake_orders(g, prepared, align, isa, memory, ram_budget, budget_src, core=""):  # type: ignore[no-untyped-def]
        asked.append(prepared[0].tag)
        overhead = {"cmsis": 1000, "kept": 10, "free": 0}[prepared[0].tag]
        chosen = search.Candidate(compiler.plan(g, [0] * len(g.nodes), 4), overhead)
        return list(range(len(g.nodes))), search.Choice(chosen, (chosen,), 1, "")

    monkeypatch.setattr(search, "search_orders", fake_orders)
    g = compile_model(shared_model("tflm_hello_world") if SHARED_MODELS.is_dir() else
                      Path(__file__).resolve().parents[1] / "examples" / "digits_cnn_int8.onnx",
                      name="net", memory="layer").graph
    n = len(g.nodes)

    def variant(tag: str) -> tuple[tuple[SimpleNamespace, ...], list[tuple[int, str, str]], list[object]]:
        return (SimpleNamespace(tag=tag, scratch=0, is_portable=True),) * n, [], []

    got = compiler.memory_variants(g, [variant("cmsis"), variant("kept")], 4, "dsp", "auto", 9_000, "--ram-budget")
    assert got[1][0].tag == "kept" and asked == ["cmsis", "kept"]
    asked.clear()
    got = compiler.memory_variants(g, [variant("cmsis"), variant("kept")], 4, "dsp", "auto", None, "board")
    assert got[1][0].tag == "cmsis" and asked == ["cmsis"]
    asked.clear()
    got = compiler.memory_variants(g, [variant("free"), variant("kept")], 4, "dsp", "auto", 9_000, "--ram-budget")
    assert got[1][0].tag == "free" and asked == ["free"]


@needs_cmsis
@needs_models
def test_a_larger_budget_never_plans_slower() -> None:
    """KWS on cortex-m55 with the cmsis-nn backend: the plan's estimated instructions do not grow with
    the budget (at 9,500 B it once took CMSIS-NN's calls in a plan estimated +98 % over whole layers,
    against +29 % at 9,000 B with the layers it streams portable)."""
    assert CMSIS_NN is not None
    board = load_board("cortex-m55")
    last = None
    for budget in (9_000, 9_500, 10_100):
        c = compile_model(shared_model("mlperf_kws_dscnn"), name="net", board=board, backend="cmsis-nn",
                          cmsis_path=CMSIS_NN, memory="auto", ram_budget=budget)
        assert c.memory is not None
        est = c.memory.chosen.overhead
        assert last is None or est <= last, (budget, est, last)
        last = est


@needs_cmsis
@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
def test_cmsis_nns_calls_carry_their_price(tmp_path: Path, core: str) -> None:
    """Every CMSIS-NN call of the residual chain carries the price the planner's base counts it at
    (cmsis_nn.price): a convolution's from the table's CMSIS-NN column, an Add's and an average
    pool's per element (cmsis_nn.PER_ELEMENT)."""
    from emitter.backends.cmsis_nn import CALL_INSTRUCTIONS, PER_ELEMENT

    board = load_board(core)
    c = compiled(chain_model("residual", tmp_path), core, memory="layer")
    theirs = {p.kernel: p for p in c.prepared if p.kernel.startswith("arm_")}
    assert {"arm_elementwise_add_s8", "arm_convolve_wrapper_s8"} <= set(theirs), set(theirs)
    add = theirs["arm_elementwise_add_s8"]
    size = add.operands["block_size"].value  # type: ignore[attr-defined]
    assert add.instructions == int(PER_ELEMENT["mcu_add_s8"][board.isa] * size) + CALL_INSTRUCTIONS
    assert theirs["arm_convolve_wrapper_s8"].instructions > 0
