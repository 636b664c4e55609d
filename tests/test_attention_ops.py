"""The ops around attention (issue 26 item 2), quantized by onnxruntime quantize_static (QDQ):
4-D softmax, GELU (opset 20 exact/tanh, com.microsoft Gelu, torch's Erf subgraph folded into one
table), Mul by a constant, ReduceMean over tokens, integer LayerNormalization, the Reshape/Transpose
of a multi-head split. Per case: the kernels chosen, host C == golden, golden within 1 quantum of
onnxruntime; QEMU cortex-m4 and cortex-m55 bit-exact with the golden, portable and cmsis-nn (4-D
softmax with TFLite's output quantization runs arm_softmax_s8)."""
from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

from emitter import compiler
from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.target.toolchain import missing_tools
from emitter.verify.run import diff_stats, ort_run
from tests.harness.bundles import build_library, emit, int8_inputs, run_c
from tests.harness.cmsis import CMSIS_NN
from tests.harness.qemu import MergedCase, run_merged
from tests.models.ops import ATTENTION, TOKENS, OpCase, case_model, quantize

logging.getLogger().setLevel(logging.ERROR)

GELU_ERF = next(c for c in ATTENTION if c.id == "gelu_erf_subgraph")
# case id -> the portable kernels of its layers ("" for a free view)
KERNELS = {
    "softmax_1x2x5x8": ["mcu_softmax_s8"],
    "gelu_exact_op20": ["mcu_lut_s8"],
    "gelu_tanh_op20": ["mcu_lut_s8"],
    "gelu_erf_subgraph": ["mcu_lut_s8"],
    "mul_last_axis_const": ["mcu_mul_s8"],
    "mul_scores_scalar": ["mcu_mul_s8"],
    "reducemean_tokens_keep0": ["mcu_avgpool_requant_s8", ""],
    "reducemean_tokens_keep1": ["mcu_avgpool_requant_s8"],
    "layernorm_gamma_beta": ["mcu_layernorm_s8"],
    "reshape_heads": ["mcu_fully_connected_s8", ""],
    "transpose_heads": ["mcu_fully_connected_s8", "", "mcu_transpose_s8"],  # a view, then the output relayout
}
QEMU_CORES = ("cortex-m4", "cortex-m55")
MISSING = missing_tools()


def ms_gelu_model() -> onnx.ModelProto:
    """com.microsoft Gelu (what onnxruntime's transformer optimizer writes) on [1, 6, 16]."""
    node = helper.make_node("Gelu", ["x0"], ["y"], name="gelu", domain="com.microsoft")
    graph = helper.make_graph([node], "ms_gelu", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, TOKENS)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, TOKENS)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, tuple[Path, list[np.ndarray], Compiled]]:
    tmp = tmp_path_factory.mktemp("attention")
    out: dict[str, tuple[Path, list[np.ndarray], Compiled]] = {}
    for k, case in enumerate(ATTENTION):
        path, xs = case_model(case, "qdq", tmp)
        out[case.id] = (path, xs, compile_model(path, name=f"att{k}"))
    rng = np.random.default_rng(5)
    feeds = [{"x0": rng.uniform(-3, 3, TOKENS).astype(np.float32)} for _ in range(8)]
    path = quantize(ms_gelu_model(), feeds, out_path=tmp / "ms_gelu.onnx")
    # onnx shape inference does not know com.microsoft ops: onnxruntime's symbolic shape inference
    # (what quant_pre_process runs) writes the shapes, as a model through onnxruntime's tools has them
    onnx.save(SymbolicShapeInference.infer_shapes(onnx.load(str(path)), auto_merge=True), str(path))
    out["ms_gelu"] = (path, [feeds[0]["x0"]], compile_model(path, name="att_ms"))
    return out


def kernels(c: Compiled) -> list[str]:
    return [p.kernel for p in c.prepared]


@pytest.mark.parametrize("cid", [*KERNELS, "ms_gelu"])
def test_case_host_equals_golden_within_one_quantum_of_onnxruntime(cid, built, tmp_path):
    path, xs, c = built[cid]
    assert kernels(c) == KERNELS.get(cid, ["mcu_lut_s8"])
    samples = int8_inputs(c, xs)
    gold = golden_run(c, samples)
    lib = build_library([emit(c, tmp_path / cid)], tmp_path / f"{cid}.so")
    for g, h in zip(gold, run_c(lib, c, samples), strict=True):
        np.testing.assert_array_equal(h, g)
    d, n, mx = diff_stats([gold], ort_run(c, path, [samples]))
    assert mx <= 1, f"golden vs onnxruntime: {d}/{n} elements differ, max {mx} quanta"


def test_gelu_erf_table_equals_the_unfolded_chain(built, monkeypatch):
    """The folded table gives what the five requantized layers (float island Div included) give,
    on every int8 input code, and onnxruntime within 1 quantum there too."""
    path, _, folded = built[GELU_ERF.id]
    monkeypatch.setattr(compiler, "passes", lambda io_nhwc: [
        p for p in _unpatched_passes(io_nhwc) if getattr(p, "__name__", "") != "fold_tables"])
    chain = compile_model(path, name="chain")
    assert kernels(chain) == ["mcu_eltwise_f32_s8", "mcu_lut_s8", "mcu_add_s8", "mcu_mul_s8", "mcu_mul_s8"]
    codes = np.resize(np.arange(-128, 128, dtype=np.int8), (3, *TOKENS))
    samples = [[codes[k]] for k in range(3)]
    for s in samples:
        np.testing.assert_array_equal(golden_run(folded, s)[0], golden_run(chain, s)[0])
    _, _, mx = diff_stats([golden_run(folded, s) for s in samples], ort_run(folded, path, samples))
    assert mx <= 1


_unpatched_passes = compiler.passes


def test_heads_split_is_a_free_view(built):
    """Reshape [N, T, C] -> [N, T, H, C/H] moves no data; neither does ReduceMean's keepdims=0."""
    for cid in ("reshape_heads", "reducemean_tokens_keep0"):
        c = built[cid][2]
        views = [p for p in c.prepared if not p.kernel]
        assert views and all("view" in p.summary for p in views), [p.summary for p in c.prepared]


def softmax_tflite_output(path: Path, out: Path) -> Path:
    """The softmax case with TFLite's output quantization (1/256, -128): arm_softmax_s8's."""
    m = onnx.load(str(path))
    sm = next(n for n in m.graph.node if n.op_type == "Softmax")
    q = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == sm.output[0])
    for init in m.graph.initializer:
        if init.name == q.input[1]:
            init.CopyFrom(numpy_helper.from_array(np.array(1 / 256, np.float32), init.name))
        if init.name == q.input[2]:
            init.CopyFrom(numpy_helper.from_array(np.array(-128, np.int8), init.name))
    onnx.save(m, str(out))
    return out


@pytest.mark.qemu
@pytest.mark.skipif(bool(MISSING), reason="needs: " + "; ".join(MISSING))
@pytest.mark.parametrize("core", QEMU_CORES)
def test_bit_exact_in_qemu(core, built, tmp_path):
    """Every case in one image per core, portable; with CMSIS-NN also each case on the cmsis-nn
    backend (TFLite numerics, CMSIS-NN wherever it has the kernel) and the 4-D softmax with TFLite's
    output quantization, which runs arm_softmax_s8."""
    board = load_board(core)
    merged = []
    for cid, (_, xs, c) in built.items():
        for_core = compile_model(c.model.path, replace(c.options, board=board))
        merged.append(MergedCase(cid, for_core, int8_inputs(for_core, xs)))
    if CMSIS_NN is not None:
        sm_path, sm_xs, _ = built["softmax_1x2x5x8"]
        tfl = softmax_tflite_output(sm_path, tmp_path / "softmax_tflite.onnx")
        cases: list[tuple[str, Path, list[np.ndarray]]] = [("softmax_tflite_out", tfl, sm_xs)]
        cases += [(cid, path, xs) for cid, (path, xs, _) in built.items()]
        for k, (cid, path, xs) in enumerate(cases):
            c = compile_model(path, name=f"cm{k}", backend="cmsis-nn", board=board, cmsis_path=CMSIS_NN,
                              cmsis_choice="cmsis", numerics="tflite")
            if cid == "softmax_tflite_out":
                assert kernels(c) == ["arm_softmax_s8"]
            merged.append(MergedCase(f"{cid}@cmsis", c, int8_inputs(c, xs)))
    result = run_merged(merged, board, tmp_path, cmsis_nn=CMSIS_NN, werror=True)
    for k, m in enumerate(merged):
        assert m.label not in result.failures, result.failures[m.label]
        got = result.outputs[k]
        assert got is not None
        for q, g in zip(got, golden_run(m.compiled, m.inputs), strict=True):
            np.testing.assert_array_equal(q, g, err_msg=f"{m.label} on {core}")


def test_layernorm_falls_back_to_the_float_island(tmp_path):
    """A row longer than the integer kernel takes (8192) keeps the float island."""
    n = 8200
    case = OpCase("layernorm_wide", "LayerNormalization", ((1, 1, n),), {"axis": -1, "epsilon": 1e-5},
                  lambda rng: {"scale": rng.uniform(0.5, 1.5, n).astype(np.float32)}, opset=17, qop=False)
    path, xs = case_model(case, "qdq", tmp_path)
    c = compile_model(path, name="wide")
    assert kernels(c) == ["mcu_layernorm_f32_s8"]
    samples = int8_inputs(c, xs)
    _, _, mx = diff_stats([golden_run(c, samples)], ort_run(c, path, [samples]))
    assert mx <= 1


def test_example_model_runs_without_float():
    """examples/attention: every attention op integer (two integer LayerNorms, GELU one table, the
    two activation MatMuls), golden top-1 on the test images as the README states, and onnxruntime's
    int8 model agrees on every prediction it gets right or wrong but one in twenty."""
    folder = Path(__file__).resolve().parents[1] / "examples" / "attention"
    path = folder / "attention_int8.onnx"
    c = compile_model(path, name="kwt")
    ks = kernels(c)
    assert ks.count("mcu_layernorm_s8") == 2 and ks.count("mcu_batch_matmul_s8") == 2, ks
    assert "mcu_softmax_s8" in ks and "mcu_avgpool_requant_s8" in ks
    assert not {"mcu_eltwise_f32_s8", "mcu_layernorm_f32_s8"} & set(ks), ks
    data = np.load(folder / "test.npz")
    samples = [int8_inputs(c, [x[None]]) for x in data["tokens"]]
    gold = np.array([golden_run(c, s)[0].ravel().argmax() for s in samples])
    ref = np.array([r[0].ravel().argmax() for r in ort_run(c, path, samples)])
    assert int((gold == data["labels"]).sum()) == 96  # 80.67 % of 119
    assert (gold == ref).mean() >= 0.95


def test_chain_read_in_the_middle_gets_its_own_table(tmp_path, monkeypatch):
    """The Erf output of the GELU chain is also a graph output: two tables from x, each equal to
    the unfolded layers' result."""
    consts = {"c": np.float32(np.sqrt(2.0)), "one": np.float32(1.0), "half": np.float32(0.5)}
    nodes = [helper.make_node("Div", ["x0", "c"], ["d"], name="div"),
             helper.make_node("Erf", ["d"], ["e"], name="erf"),
             helper.make_node("Add", ["e", "one"], ["a"], name="add_one"),
             helper.make_node("Mul", ["x0", "a"], ["m"], name="mul_x"),
             helper.make_node("Mul", ["m", "half"], ["z"], name="mul_half")]
    graph = helper.make_graph(nodes, "gelu_two_outputs",
                              [helper.make_tensor_value_info("x0", TensorProto.FLOAT, TOKENS)],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, TOKENS) for n in ("z", "e")],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    rng = np.random.default_rng(3)
    feeds = [{"x0": rng.uniform(-3, 3, TOKENS).astype(np.float32)} for _ in range(8)]
    path = quantize(model, feeds, out_path=tmp_path / "gelu2.onnx")
    folded = compile_model(path, name="folded")
    assert kernels(folded) == ["mcu_lut_s8", "mcu_lut_s8"]
    monkeypatch.setattr(compiler, "passes", lambda io_nhwc: [
        p for p in _unpatched_passes(io_nhwc) if getattr(p, "__name__", "") != "fold_tables"])
    chain = compile_model(path, name="chain")
    assert "mcu_eltwise_f32_s8" in kernels(chain)
    codes = np.resize(np.arange(-128, 128, dtype=np.int8), (3, *TOKENS))
    for k in range(3):
        for f, u in zip(golden_run(folded, [codes[k]]), golden_run(chain, [codes[k]]), strict=True):
            np.testing.assert_array_equal(f, u)


def decomposed_layernorm() -> onnx.ModelProto:
    """LayerNorm as torch exports it below opset 17: ReduceMean, Sub, Pow 2, ReduceMean, Add eps,
    Sqrt, Div, Mul gamma, Add beta."""
    rng = np.random.default_rng(0)
    n = TOKENS[-1]
    consts = {"two": np.float32(2.0), "eps": np.float32(1e-5), "g": rng.uniform(0.5, 1.5, n).astype(np.float32),
              "b": rng.uniform(-0.5, 0.5, n).astype(np.float32)}
    nodes = [helper.make_node("ReduceMean", ["x0"], ["mu"], name="mean", axes=[-1], keepdims=1),
             helper.make_node("Sub", ["x0", "mu"], ["d"], name="center"),
             helper.make_node("Pow", ["d", "two"], ["d2"], name="square"),
             helper.make_node("ReduceMean", ["d2"], ["var"], name="var", axes=[-1], keepdims=1),
             helper.make_node("Add", ["var", "eps"], ["ve"], name="eps"),
             helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"),
             helper.make_node("Div", ["d", "sd"], ["nrm"], name="normalize"),
             helper.make_node("Mul", ["nrm", "g"], ["sc"], name="gamma"),
             helper.make_node("Add", ["sc", "b"], ["y"], name="beta")]
    graph = helper.make_graph(nodes, "decomposed_ln", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, TOKENS)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, TOKENS)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_decomposed_layernorm(tmp_path):
    """torch's LayerNorm below opset 17, each op requantized by onnxruntime: Pow and Sqrt are
    tables, the Div of two activations the float island; host == golden, within 1 quantum."""
    rng = np.random.default_rng(1)
    feeds = [{"x0": rng.uniform(-2, 2, TOKENS).astype(np.float32)} for _ in range(8)]
    path = quantize(decomposed_layernorm(), feeds, out_path=tmp_path / "dln.onnx")
    c = compile_model(path, name="dln")
    assert {"mcu_lut_s8", "mcu_avgpool_requant_s8", "mcu_eltwise_f32_s8"} <= set(kernels(c))
    samples = [int8_inputs(c, [f["x0"]]) for f in feeds]
    gold = [golden_run(c, s) for s in samples]
    lib = build_library([emit(c, tmp_path / "dln")], tmp_path / "dln.so")
    for s, g in zip(samples, gold, strict=True):
        np.testing.assert_array_equal(run_c(lib, c, s)[0], g[0])
    d, n, mx = diff_stats(gold, ort_run(c, path, samples))
    assert mx <= 1, f"golden vs onnxruntime: {d}/{n} elements differ, max {mx} quanta"
