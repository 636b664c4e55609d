"""MatMul of two activations (emitter/ops/batch_matmul.py, mcu_batch_matmul_s8, arm_batch_matmul_s8),
built as onnxruntime's quantize_static writes it: QDQ (MatMul between DequantizeLinear and
QuantizeLinear) and QOperator (QLinearMatMul), int8 and uint8 activations.

- host C == golden, bit for bit; golden within 1 quantum of onnxruntime (isolated op), for 2-D,
  3-D, 4-D, broadcast batch (either side, both), a transposed rhs (Q x K^T) or lhs, odd sizes, K = 1;
- a Transpose of the last two axes in front of an operand is folded (no copy, the kernel's flag);
- CMSIS-NN: arm_batch_matmul_s8 exactly where it reads the operands as stored (lhs [.., M, K], rhs
  [.., N, K], TFLite rounding), the portable kernel elsewhere with the reason; the choice between
  them by the measured cost table (M4: CMSIS-NN for a tiny single query row, mcugen's kernel otherwise);
- QEMU cortex-m0plus (generic path), cortex-m4 (DSP) and cortex-m55 (MVE): portable (both roundings) and cmsis-nn,
  every case bit-exact with the golden, and the attention block of tests/models/attention.py;
- the attention block on the host: exact vs the golden, within 4 quanta of onnxruntime.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from emitter.backends import kernel_choice as kc
from emitter.backends.cost_cases import Shape, onnx_of, random_case, shape_of
from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.target.toolchain import missing_tools
from emitter.verify.run import diff_stats, ort_run
from tests.harness.bundles import build_library, emit, int8_inputs, run_c
from tests.harness.cmsis import CMSIS_NN, needs_cmsis
from tests.harness.qemu import MergedCase, run_merged
from tests.models.attention import attention_feeds, attention_model
from tests.models.matmul2 import CASES, MatMulCase, case_model
from tests.models.ops import quantize

BY_ID = {c.id: c for c in CASES}
U8 = (("mm3d", "qdq"), ("mm_trans_b", "qdq"), ("mm2d_odd", "qop"), ("mm_bcast_both", "qop"))
PARAMS = [(c.id, fmt, "int8") for c in CASES for fmt in ("qdq", "qop")] + [(i, f, "uint8") for i, f in U8]
MISSING = missing_tools()


def label(case: str, fmt: str, act: str) -> str:
    return f"{case}-{fmt}" + ("-u8" if act == "uint8" else "")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, tuple[Path, list[np.ndarray]]]:
    tmp = tmp_path_factory.mktemp("bmm_models")
    return {label(*p): case_model(BY_ID[p[0]], p[1], tmp, p[2]) for p in PARAMS}


@pytest.fixture(scope="module")
def host(models, tmp_path_factory):
    """Every case compiled (portable, any core) into one shared library."""
    tmp = tmp_path_factory.mktemp("bmm_host")
    compiled = {lab: compile_model(path, name=f"mm{k}") for k, (lab, (path, _)) in enumerate(models.items())}
    lib = build_library([emit(c, tmp / c.name) for c in compiled.values()], tmp / "libbmm.so")
    return compiled, lib


def kernels(c: Compiled) -> list[str]:
    return [p.kernel for p in c.prepared if p.kernel]


def the_bmm(c: Compiled):
    return next(p for p in c.prepared if p.kernel in ("mcu_batch_matmul_s8", "arm_batch_matmul_s8"))


@pytest.mark.parametrize("case,fmt,act", PARAMS, ids=[label(*p) for p in PARAMS])
def test_host_c_equals_golden_within_1_of_ort(case, fmt, act, models, host):
    compiled, lib = host
    lab = label(case, fmt, act)
    path, xs = models[lab]
    c = compiled[lab]
    assert kernels(c)[-1] == "mcu_batch_matmul_s8", kernels(c)
    samples = int8_inputs(c, xs)
    gold = golden_run(c, samples)
    for g, h in zip(gold, run_c(lib, c, samples), strict=True):
        np.testing.assert_array_equal(h, g, err_msg="host C differs from the golden model")
    d, n, mx = diff_stats([gold], ort_run(c, path, [samples]))
    assert mx <= 1, f"golden vs onnxruntime: {d}/{n} elements differ, max {mx} quanta"


def test_transpose_folds_into_the_kernel_flag(host):
    compiled, _ = host
    for lab, flag in (("mm_trans_b-qdq", "rhs_transposed"), ("mm_trans_b_4d_odd-qdq", "rhs_transposed"),
                      ("mm_trans_a-qdq", "lhs_transposed"), ("mm_trans_b-qdq-u8", "rhs_transposed")):
        c = compiled[lab]
        assert kernels(c) == ["mcu_batch_matmul_s8"], f"{lab}: {kernels(c)} (the Transpose should move no data)"
        assert getattr(the_bmm(c).params, flag) == 1
    p = the_bmm(compiled["mm_bcast_both-qdq"]).params
    assert (p.lhs.n, p.lhs.h, p.rhs.n, p.rhs.h, p.output.n, p.output.h) == (2, 1, 1, 3, 2, 3)


def cmsis(path: Path, core: str, name: str, **kw) -> Compiled:
    return compile_model(path, name=name, board=load_board(core), backend="cmsis-nn", cmsis_path=CMSIS_NN,
                         **{"numerics": "tflite", "cmsis_choice": "cmsis", **kw})


@needs_cmsis
def test_cmsis_nn_takes_rows_of_k_only(models, cmsis_env):
    """arm_batch_matmul_s8 reads lhs as [.., M, K] and rhs as [.., N, K]: a Q x K^T (rhs stored
    transposed) maps to it, with its MVE scratch (N int32 column sums); an rhs stored [.., K, N]
    or a transposed lhs keeps mcugen's kernel, saying why; onnxruntime rounding too."""
    c = cmsis(models["mm_trans_b-qdq"][0], "cortex-m55", "t")
    assert kernels(c) == ["arm_batch_matmul_s8"]
    assert the_bmm(c).operands["ctx"].fields["size"] == 4 * 6  # N = 6 column sums
    assert kernels(cmsis(models["mm_trans_b-qdq"][0], "cortex-m4", "t")) == ["arm_batch_matmul_s8"]
    for lab in ("mm3d-qdq", "mm_trans_a-qdq"):
        c = cmsis(models[lab][0], "cortex-m55", "p")
        assert kernels(c) == ["mcu_batch_matmul_s8"]
        (why,) = [w for _, k, w in c.portable_layers if k == "mcu_batch_matmul_s8"]
        assert "rows of K" in why, why
    c = cmsis(models["mm_trans_b-qdq"][0], "cortex-m55", "r", numerics=None)  # onnxruntime rounding
    assert kernels(c) == ["mcu_batch_matmul_s8"]


def test_choice_by_measured_cost_table(tmp_path):
    """The committed tables hold measured bmm cases: mcugen's kernel wins a multi-row Q x K^T on the
    M4 and the M55; CMSIS-NN wins a single query row of four outputs on the M4 (measured: 948 vs 914)."""
    def prepared(s: Shape):
        return next(p for p in compile_model(one_case_model(s, tmp_path), name="x", io_nhwc=True,
                                             board=load_board("cortex-m55")).prepared if p.kernel)
    many, one = Shape("bmm", h=16, c_in=16, c_out=16, batches=4, per_channel=0), \
        Shape("bmm", h=1, c_in=64, c_out=4, batches=1, per_channel=0)
    for core, isa in (("cortex-m4", "dsp"), ("cortex-m55", "mve")):
        ch = kc.choose(prepared(many), 0, core, isa)
        assert ch is not None and ch.ours_wins and ch.source == "table", ch
    ch = kc.choose(prepared(one), 0, "cortex-m4", "dsp")
    assert ch is not None and not ch.ours_wins and ch.source == "table", ch


def one_case_model(s: Shape, tmp: Path) -> Path:
    onnx.save(onnx_of([random_case("x", s, 7)]), str(tmp / f"{s.key()}.onnx"))
    return tmp / f"{s.key()}.onnx"


def test_cost_case_is_one_batch_matmul_layer(tmp_path):
    """A bmm cost case (scripts/cost_tables.py, --tune) lowers to exactly one kernel layer of its
    shape, rhs stored transposed (the Transpose is a view)."""
    s = Shape("bmm", h=7, c_in=9, c_out=5, batches=2, per_channel=0)
    c = compile_model(one_case_model(s, tmp_path), name="x", io_nhwc=True, board=load_board("cortex-m4"))
    layers = [p for p in c.prepared if p.kernel]
    assert [p.kernel for p in layers] == ["mcu_batch_matmul_s8"] and shape_of(layers[0]) == s
    assert kc.path_of(layers[0], "dsp") == "dsp" and kc.path_of(layers[0], "mve") == "mve"
    # its constant lhs is a const array of the bundle: host C == golden
    samples = [np.random.default_rng(5).integers(-128, 128, (2, 5, 9), dtype=np.int8)]
    lib = build_library([emit(c, tmp_path / "b")], tmp_path / "lib.so")
    for g, h in zip(golden_run(c, samples), run_c(lib, c, samples), strict=True):
        np.testing.assert_array_equal(h, g)


@pytest.mark.parametrize("fmt", ["qdq", "qop"])
def test_attention_block_on_host(fmt, tmp_path):
    """Q/K/V projections, heads, Q x K^T, scale, Softmax, P x V, quantized by onnxruntime: exact
    with the golden on the host, within 4 quanta of onnxruntime. The heads split (Reshape [T, H, d],
    Transpose) moves no data: the MatMuls read Q, K^T and V where the projections wrote them
    ([T, H, d]) through their strides, K^T as rows of d (rhs transposed)."""
    feeds = attention_feeds()
    path = quantize(attention_model(), feeds, fmt=fmt, out_path=tmp_path / f"att_{fmt}.onnx")
    c = compile_model(path, name="att")
    bmms = [p for p in c.prepared if p.kernel == "mcu_batch_matmul_s8"]
    assert len(bmms) == 2 and "mcu_transpose_s8" not in kernels(c), kernels(c)
    # heads 8 elements apart (d = 8), rows (tokens) 16 (H * d)
    for s in (bmms[0].params.lhs_strides, bmms[0].params.rhs_strides, bmms[1].params.rhs_strides):
        assert (s.h, s.row) == (8, 16), s
    assert bmms[0].params.rhs_transposed
    assert {"mcu_softmax_s8", "mcu_mul_s8"} <= set(kernels(c))
    lib = build_library([emit(c, tmp_path / "b")], tmp_path / "libatt.so")
    samples = int8_inputs(c, [feeds[0]["x"]])
    gold = golden_run(c, samples)
    for g, h in zip(gold, run_c(lib, c, samples), strict=True):
        np.testing.assert_array_equal(h, g)
    d, n, mx = diff_stats([gold], ort_run(c, path, [samples]))
    assert mx <= 4, f"golden vs onnxruntime: {d}/{n} elements differ, max {mx} quanta"


# ---- QEMU: the DSP (M4) and MVE (M55) paths, both backends ----------------------------------------

QEMU_CASES: tuple[MatMulCase, ...] = tuple(CASES)


@pytest.mark.qemu
@needs_cmsis
@pytest.mark.skipif(bool(MISSING), reason="the QEMU tier needs missing tools: " + "; ".join(MISSING))
@pytest.mark.parametrize("core", ["cortex-m0plus", "cortex-m4", "cortex-m55"])  # generic, DSP, MVE paths
def test_qemu_both_backends_bit_exact(core, models, tmp_path):
    """One image per core: every QDQ case three times (portable in onnxruntime's rounding,
    portable and cmsis-nn in TFLite's) and the attention block (portable, cmsis-nn), each output
    equal to its golden model. The image is built with -Werror."""
    board = load_board(core)
    merged: list[MergedCase] = []
    gold: dict[str, list[np.ndarray]] = {}
    feeds = attention_feeds()
    att = quantize(attention_model(), feeds, fmt="qdq", out_path=tmp_path / "att.onnx")
    todo = [(case.id, models[label(case.id, "qdq", "int8")]) for case in QEMU_CASES]
    todo.append(("attention", (att, [feeds[0]["x"]])))
    for k, (cid, (path, xs)) in enumerate(todo):
        for tag, c in (("ort", compile_model(path, name=f"q{k}o", board=board)),
                       ("tfl", compile_model(path, name=f"q{k}t", board=board, numerics="tflite")),
                       ("cmsis", cmsis(path, core, f"q{k}c"))):
            samples = int8_inputs(c, xs)
            gold[f"{cid}@{tag}"] = golden_run(c, samples)
            merged.append(MergedCase(f"{cid}@{tag}", c, samples))
    assert any("arm_batch_matmul_s8" in kernels(m.compiled) for m in merged)
    run = run_merged(merged, board, tmp_path / "q", cmsis_nn=CMSIS_NN, werror=True)
    assert run.run.exit_code == 0 and not run.failures, (run.run.exit_code, run.failures)
    for m, out in zip(merged, run.outputs, strict=True):
        assert out is not None
        for o, g in zip(out, gold[m.label], strict=True):
            np.testing.assert_array_equal(o, g, err_msg=f"{m.label} on {core}")


# ---- refusals ---------------------------------------------------------------------------------------

def qdq_two_acts(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...],
                 bias: int | None = None) -> onnx.ModelProto:
    """int8 x0, x1 -> DequantizeLinear each -> MatMul [-> Add(DQ(int32 bias [bias]))] -> QuantizeLinear."""
    from onnx import TensorProto as TP
    from onnx import helper as H
    from onnx import numpy_helper as NH

    inits = [NH.from_array(np.array(0.05, np.float32), "s"), NH.from_array(np.array(0, np.int8), "z")]
    nodes = [H.make_node("DequantizeLinear", [f"x{i}", "s", "z"], [f"f{i}"], name=f"dq{i}") for i in range(2)]
    y = "y"
    if bias is not None:
        inits += [NH.from_array(np.arange(bias, dtype=np.int32), "bq"),
                  NH.from_array(np.array(0.0025, np.float32), "bs"), NH.from_array(np.array(0, np.int32), "bz")]
        nodes.append(H.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bf"], name="dqb"))
    nodes.append(H.make_node("MatMul", ["f0", "f1"], ["y"], name="mm"))
    if bias is not None:
        nodes.append(H.make_node("Add", ["y", "bf"], ["yb"], name="add"))
        y = "yb"
    nodes.append(H.make_node("QuantizeLinear", [y, "s", "z"], ["q"], name="qy"))
    g = H.make_graph(nodes, "mm", [H.make_tensor_value_info(f"x{i}", TP.INT8, list(s)) for i, s in enumerate((a, b))],
                     [H.make_tensor_value_info("q", TP.INT8, list(out))], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("a,b,out,bias,words", [
    ((1, 2, 2, 3, 4), (1, 2, 2, 4, 5), (1, 2, 2, 3, 5), None, "rank 2 to 4"),
    ((3, 4), (4, 5), (3, 5), 5, "Add(bias)"),
])
def test_refusals_name_the_reason(a, b, out, bias, words, tmp_path):
    from emitter.errors import McugenError

    onnx.save(qdq_two_acts(a, b, out, bias), str(tmp_path / "m.onnx"))
    with pytest.raises(McugenError, match=words.replace("(", r"\(").replace(")", r"\)")):
        compile_model(tmp_path / "m.onnx", name="m")


def test_hand_built_qdq_two_acts_compiles(tmp_path):
    """The same builder without the refused parts: a plain int8 x int8 MatMul, exact on the host."""
    onnx.save(qdq_two_acts((2, 3, 4), (2, 4, 5), (2, 3, 5)), str(tmp_path / "m.onnx"))
    c = compile_model(tmp_path / "m.onnx", name="m")
    assert kernels(c) == ["mcu_batch_matmul_s8"]
    rng = np.random.default_rng(3)
    samples = [rng.integers(-128, 128, (2, 3, 4), dtype=np.int8), rng.integers(-128, 128, (2, 4, 5), dtype=np.int8)]
    lib = build_library([emit(c, tmp_path / "b")], tmp_path / "lib.so")
    for g, h in zip(golden_run(c, samples), run_c(lib, c, samples), strict=True):
        np.testing.assert_array_equal(h, g)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_qlinearmatmul_of_graph_inputs(dtype, tmp_path):
    """A QLinearMatMul of two graph inputs as other tools write it (no QuantizeLinear: the node's own
    scales and zero points quantize its inputs; uint8 becomes int8, zero point - 128): exact on the
    host, within 1 quantum of onnxruntime."""
    from onnx import TensorProto as TP
    from onnx import helper as H
    from onnx import numpy_helper as NH

    dt, npdt, zp = (TP.UINT8, np.uint8, 128) if dtype == "uint8" else (TP.INT8, np.int8, 0)
    inits = [NH.from_array(np.array(0.02, np.float32), "as"), NH.from_array(np.array(zp + 3, npdt), "az"),
             NH.from_array(np.array(0.03, np.float32), "bs"), NH.from_array(np.array(zp - 5, npdt), "bz"),
             NH.from_array(np.array(0.1, np.float32), "ys"), NH.from_array(np.array(zp, npdt), "yz")]
    node = H.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], name="qmm")
    g = H.make_graph([node], "qmm", [H.make_tensor_value_info("a", dt, [2, 5, 12]),
                                     H.make_tensor_value_info("b", dt, [2, 12, 7])],
                     [H.make_tensor_value_info("y", dt, [2, 5, 7])], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 13)])
    m.ir_version = 8
    path = tmp_path / "qmm.onnx"
    onnx.save(m, str(path))
    c = compile_model(path, name="qmm")
    assert kernels(c) == ["mcu_batch_matmul_s8"]
    rng = np.random.default_rng(0)
    samples = [rng.integers(-128, 128, (2, 5, 12), dtype=np.int8), rng.integers(-128, 128, (2, 12, 7), dtype=np.int8)]
    gold = golden_run(c, samples)
    lib = build_library([emit(c, tmp_path / "b")], tmp_path / "lib.so")
    for g_, h in zip(gold, run_c(lib, c, samples), strict=True):
        np.testing.assert_array_equal(h, g_)
    d, n, mx = diff_stats([gold], ort_run(c, path, [samples]))
    assert mx <= 1, f"golden vs onnxruntime: {d}/{n} elements differ, max {mx} quanta"
