"""Keyword-transformer-style blocks (issue 26's acceptance class), built by hand with onnx.helper in
float and quantized by onnxruntime's quantize_static (QDQ), with and without quant_pre_process:

    x [1, T, D_in] -> MatMul + bias (embedding) [-> Concat class token] -> pre-norm block:
      LayerNorm (LayerNormalization at opset >= 17, ReduceMean/Sub/Pow/Sqrt/Div at 13) -> Q, K, V
      heads: Reshape [1, T, H, d] -> Transpose (0, 2, 1, 3); K^T by Transpose (0, 1, 3, 2) after it
      or one Transpose (0, 2, 3, 1); MatMul(Q, K^T) -> Mul or Div by a constant -> Softmax(-1)
      -> MatMul(P, V) -> Transpose (0, 2, 1, 3) -> Reshape [1, T, D] -> MatMul + bias -> residual Add
      LayerNorm -> MatMul + bias -> GELU (Erf form, tanh form, opset 20 Gelu) -> MatMul + bias -> Add
    (depth such layers; fused Q/K/V: one MatMul D -> 3D and a Split; Reshape targets explicit or
    torch's [0, 0, H, -1]; the scale on the scores or on the query heads)
    -> class token (Gather token 0) or ReduceMean over tokens (axis 1) -> Gemm classifier.

Each variant: compiled, host C == golden bit for bit, golden within 4 quanta of onnxruntime's QDQ
reference (float ops between Q/DQ) on every output; in the QEMU tier all default variants in one
firmware per core (cortex-m4, cortex-m55) and backend (portable, cmsis-nn), each equal to its golden.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.quant import ROUND_NEAREST_EVEN
from emitter.target.toolchain import missing_tools
from emitter.verify.run import diff_stats, ort_run
from tests.harness.bundles import build_library, emit, int8_inputs, run_c
from tests.harness.cmsis import CMSIS_NN
from tests.harness.qemu import MergedCase, run_merged
from tests.models.ops import quantize

MAX_QUANTA = 4


@dataclass(frozen=True)
class Block:
    id: str
    tokens: int = 8
    dim: int = 16
    heads: int = 2
    d_in: int = 8
    mlp: int = 32
    opset: int = 17
    norm: str = "op"          # "op" (LayerNormalization) | "decomposed"
    gelu: str = "erf"         # "erf" | "tanh" | "op" (opset 20 Gelu)
    keys: str = "t0132"       # "t0132": Transpose (0,2,1,3) then (0,1,3,2); "t0231": one Transpose
    scale: str = "mul"        # "mul" | "div" (the scores by a constant) | "q" (Mul of the query heads)
    pool: str = "mean"        # "mean" (ReduceMean axis 1) | "cls" (class token, Gather 0)
    classes: int = 5
    per_channel: bool = True
    act: str = "int8"         # "int8" | "uint8"
    preprocess: bool = True   # quant_pre_process before quantize_static
    seed: int = 0
    depth: int = 1            # encoder layers
    trans_b: bool = False     # the classifier as torch exports nn.Linear (Gemm transB=1)
    qkv: str = "separate"     # "separate" projections, or one "fused" MatMul D -> 3D and a Split (KWT's to_qkv)
    shapes: str = "explicit"  # Reshape targets "explicit" [1, T, H, d] or torch's "inferred" [0, 0, H, -1]


def build(b: Block) -> onnx.ModelProto:
    rng = np.random.default_rng(b.seed)
    D, T, Hh = b.dim, b.tokens, b.heads
    d = D // Hh
    Tt = T + (1 if b.pool == "cls" else 0)
    inits: dict[str, np.ndarray] = {}

    def w(name: str, fan_in: int, *shape: int) -> str:
        inits[name] = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
        return name

    def bias(name: str, n: int) -> str:
        inits[name] = (0.1 * rng.standard_normal(n)).astype(np.float32)
        return name

    def const(name: str, v) -> str:
        inits[name] = np.asarray(v)
        return name

    n: list[onnx.NodeProto] = []

    def node(op: str, ins: list[str], out: str, **attrs) -> str:
        n.append(H.make_node(op, ins, [out], name=out, **attrs))
        return out

    def linear(x: str, fin: int, fout: int, out: str) -> str:
        mm = node("MatMul", [x, w(f"{out}_W", fin, fin, fout)], f"{out}_mm")
        return node("Add", [mm, bias(f"{out}_b", fout)], out)

    def reduce_mean(x: str, axis: int, out: str, keep: int = 0) -> str:
        if b.opset >= 18:  # axes an input from opset 18
            return node("ReduceMean", [x, const(f"{out}_axes", np.array([axis], np.int64))], out, keepdims=keep)
        return node("ReduceMean", [x], out, axes=[axis], keepdims=keep)

    def layernorm(x: str, out: str) -> str:
        g = const(f"{out}_g", (1 + 0.2 * rng.standard_normal(D)).astype(np.float32))
        be = bias(f"{out}_beta", D)
        if b.norm == "op":
            return node("LayerNormalization", [x, g, be], out, axis=-1, epsilon=1e-5)
        mean = reduce_mean(x, -1, f"{out}_mean", keep=1)
        dev = node("Sub", [x, mean], f"{out}_dev")
        sq = node("Pow", [dev, const(f"{out}_two", np.float32(2.0))], f"{out}_sq")
        var = reduce_mean(sq, -1, f"{out}_var", keep=1)
        ve = node("Add", [var, const(f"{out}_eps", np.float32(1e-5))], f"{out}_ve")
        sd = node("Sqrt", [ve], f"{out}_sd")
        nrm = node("Div", [dev, sd], f"{out}_norm")
        return node("Add", [node("Mul", [nrm, g], f"{out}_mul"), be], out)

    def gelu(x: str, out: str) -> str:
        if b.gelu == "op":
            return node("Gelu", [x], out)
        if b.gelu == "erf":
            e = node("Erf", [node("Div", [x, const("sqrt2", np.float32(np.sqrt(2)))], f"{out}_div")], f"{out}_erf")
            a = node("Add", [e, const("one", np.float32(1))], f"{out}_add")
            return node("Mul", [node("Mul", [x, a], f"{out}_mul"), const("half", np.float32(0.5))], out)
        x3 = node("Pow", [x, const("three", np.float32(3))], f"{out}_x3")
        inner = node("Add", [x, node("Mul", [x3, const("c044", np.float32(0.044715))], f"{out}_c")], f"{out}_in")
        t = node("Tanh", [node("Mul", [inner, const("s2pi", np.float32(np.sqrt(2 / np.pi)))], f"{out}_s")],
                 f"{out}_tanh")
        a = node("Add", [t, const("one", np.float32(1))], f"{out}_add")
        return node("Mul", [node("Mul", [x, const("half", np.float32(0.5))], f"{out}_half"), a], out)


    if b.shapes == "explicit":
        const("heads_shape", np.array([1, Tt, Hh, d], np.int64))
        const("tokens_shape", np.array([1, Tt, D], np.int64))
    else:
        const("heads_shape", np.array([0, 0, Hh, -1], np.int64))
        const("tokens_shape", np.array([0, 0, -1], np.int64))
    h = linear("x", b.d_in, D, "embed")
    if b.pool == "cls":
        h = node("Concat", [const("cls", (0.5 * rng.standard_normal((1, 1, D))).astype(np.float32)), h], "with_cls",
                 axis=1)
    h = node("Add", [h, const("pos", (0.3 * rng.standard_normal((1, Tt, D))).astype(np.float32))], "h0")
    def encoder(h: str, P: str) -> str:
        ln1 = layernorm(h, f"{P}ln1")
        heads = {}
        if b.qkv == "fused":
            fused = linear(ln1, D, 3 * D, f"{P}qkv")
            split_sizes = const("qkv_sizes", np.array([D, D, D], np.int64))
            n.append(H.make_node("Split", [fused, split_sizes], [f"{P}{p}" for p in "qkv"], name=f"{P}qkv_split",
                                 axis=-1))
        for p in "qkv":
            proj = f"{P}{p}" if b.qkv == "fused" else linear(ln1, D, D, f"{P}{p}")
            split = node("Reshape", [proj, "heads_shape"], f"{P}{p}_split")
            if p == "k" and b.keys == "t0231":
                heads[p] = node("Transpose", [split], f"{P}k_t", perm=[0, 2, 3, 1])
            else:
                heads[p] = node("Transpose", [split], f"{P}{p}_heads", perm=[0, 2, 1, 3])
        if b.keys == "t0132":
            heads["k"] = node("Transpose", [heads["k"]], f"{P}k_t", perm=[0, 1, 3, 2])
        if b.scale == "q":  # the query scaled before the scores (Hugging Face's order)
            heads["q"] = node("Mul", [heads["q"], const("scale", np.float32(1 / np.sqrt(d)))], f"{P}q_scaled")
        s = node("MatMul", [heads["q"], heads["k"]], f"{P}scores")
        if b.scale == "mul":
            s = node("Mul", [s, const("scale", np.float32(1 / np.sqrt(d)))], f"{P}scaled")
        elif b.scale == "div":
            s = node("Div", [s, const("scale", np.float32(np.sqrt(d)))], f"{P}scaled")
        pr = node("Softmax", [s], f"{P}probs", axis=-1)
        ctx = node("MatMul", [pr, heads["v"]], f"{P}context")
        merged = node("Reshape", [node("Transpose", [ctx], f"{P}context_t", perm=[0, 2, 1, 3]), "tokens_shape"],
                      f"{P}merged")
        h1 = node("Add", [h, linear(merged, D, D, f"{P}attn_out")], f"{P}h1")
        up = linear(layernorm(h1, f"{P}ln2"), D, b.mlp, f"{P}up")
        return node("Add", [h1, linear(gelu(up, f"{P}gelu"), b.mlp, D, f"{P}down")], f"{P}h2")

    h2 = h
    for layer in range(b.depth):
        h2 = encoder(h2, f"l{layer}_" if layer else "")
    if b.pool == "cls":
        pooled = node("Gather", [h2, const("first", np.array(0, np.int64))], "pooled", axis=1)
    else:
        pooled = reduce_mean(h2, 1, "pooled")
    w_cls = (rng.standard_normal((D, b.classes)) / np.sqrt(D)).astype(np.float32)
    inits["cls_W"] = w_cls.T.copy() if b.trans_b else w_cls  # torch's Linear: Gemm(transB=1), W [classes, D]
    logits = node("Gemm", [pooled, "cls_W", bias("cls_b", b.classes)], "logits", **({"transB": 1} if b.trans_b else {}))
    graph = H.make_graph(n, b.id, [H.make_tensor_value_info("x", TP.FLOAT, [1, T, b.d_in])],
                         [H.make_tensor_value_info(logits, TP.FLOAT, [1, b.classes])],
                         [NH.from_array(v, k) for k, v in inits.items()])
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", b.opset)], producer_name="mcugen-tests")
    model.ir_version = 9 if b.opset >= 20 else 8
    onnx.checker.check_model(model, full_check=True)
    return model


def feeds(b: Block, n: int = 16, seed: int = 7) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.uniform(-1.0, 1.0, (1, b.tokens, b.d_in)).astype(np.float32)} for _ in range(n)]


def quantized(b: Block, tmp: Path) -> Path:
    model = build(b)
    if b.preprocess:
        from onnxruntime.quantization.shape_inference import quant_pre_process

        raw, pre = tmp / f"{b.id}_fp32.onnx", tmp / f"{b.id}_pre.onnx"
        onnx.save(model, raw)
        quant_pre_process(str(raw), str(pre))
        model = onnx.load(pre)
    return quantize(model, feeds(b), fmt="qdq", per_channel=b.per_channel, activation_type=b.act,
                    weight_type="int8", out_path=tmp / f"{b.id}.onnx", op_types=None)


DEFAULT = (
    Block("t8_d16_h2"),
    Block("t5_d12_h1_dec_tanh", tokens=5, dim=12, heads=1, d_in=6, mlp=20, opset=13, norm="decomposed",
          gelu="tanh", keys="t0231", scale="div", per_channel=False, preprocess=False),
    Block("t13_d20_h4_gelu20_cls_u8", tokens=13, dim=20, heads=4, d_in=10, mlp=36, opset=20, gelu="op",
          pool="cls", act="uint8", scale="div"),
    Block("t9_d18_h2_dec_u8_qscale", tokens=9, dim=18, heads=2, d_in=7, mlp=30, opset=13, norm="decomposed",
          keys="t0231", act="uint8", per_channel=False, scale="q"),
    Block("t7_d10_h2_cls", tokens=7, dim=10, heads=2, d_in=5, mlp=14, opset=17, pool="cls", gelu="tanh",
          preprocess=False),
    Block("t21_d20_h2_qkv_cls_u8", tokens=21, dim=20, heads=2, d_in=16, mlp=71, opset=18, pool="cls",
          act="uint8", seed=3, qkv="fused", shapes="inferred", trans_b=True),
)
SLOW = (
    Block("t49_d64_h4", tokens=49, dim=64, heads=4, d_in=10, mlp=96, opset=17),
    Block("t25_d36_h4_dec_erf_u8", tokens=25, dim=36, heads=4, d_in=9, mlp=60, opset=13, norm="decomposed",
          act="uint8", scale="div", pool="cls"),
    Block("t31_d42_h2_gelu20", tokens=31, dim=42, heads=2, d_in=13, mlp=50, opset=20, gelu="op",
          keys="t0231", per_channel=False, preprocess=False),
    Block("t16_d30_h1_u8_tanh", tokens=16, dim=30, heads=1, d_in=12, mlp=44, opset=18, gelu="tanh",
          act="uint8", pool="cls"),
    Block("t11_d26_h2_div", tokens=11, dim=26, heads=2, d_in=11, mlp=34, opset=17, scale="div",
          keys="t0231", act="uint8", preprocess=False, per_channel=False),
    Block("t37_d14_h2_qkv_dec18", tokens=37, dim=14, heads=2, d_in=10, mlp=50, opset=18, norm="decomposed",
          act="uint8", per_channel=False, qkv="fused", preprocess=False),
    Block("t20_d32_h4_inferred", tokens=20, dim=32, heads=4, d_in=14, mlp=78, opset=20, gelu="tanh",
          act="uint8", per_channel=False, preprocess=False, shapes="inferred"),
    Block("t24_d20_h2_depth2", tokens=24, dim=20, heads=2, d_in=10, mlp=53, opset=18, norm="decomposed",
          keys="t0231", depth=2, seed=2),
    Block("t49_d10_h1_depth2_u8", tokens=49, dim=10, heads=1, d_in=8, mlp=68, opset=13, norm="decomposed",
          act="uint8", per_channel=False, preprocess=False, scale="div", depth=2, seed=9, shapes="inferred"),
)
ALL = {b.id: b for b in DEFAULT + SLOW}


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("transformer")


_CACHE: dict[str, tuple[Path, Compiled, list[np.ndarray]]] = {}


def compiled(b: Block, tmp: Path) -> tuple[Path, Compiled, list[np.ndarray]]:
    if b.id not in _CACHE:
        path = quantized(b, tmp)
        c = compile_model(path, name=f"tb{list(ALL).index(b.id)}")
        _CACHE[b.id] = (path, c, int8_inputs(c, [feeds(b, 1, seed=99)[0]["x"]]))
    return _CACHE[b.id]


def check_host(b: Block, tmp: Path) -> None:
    path, c, sample = compiled(b, tmp)
    lib = build_library([emit(c, tmp / c.name)], tmp / f"lib{c.name}.so")
    xs = [sample] + [int8_inputs(c, [f["x"]]) for f in feeds(b, 3, seed=11)]
    gold = [golden_run(c, s) for s in xs]
    for s, g in zip(xs, gold, strict=True):
        for h, want in zip(run_c(lib, c, s), g, strict=True):
            np.testing.assert_array_equal(h, want, err_msg=f"{b.id}: host C differs from the golden model")
    d, n, mx = diff_stats(gold, ort_run(c, path, xs))
    print(f"{b.id}: golden vs onnxruntime {d}/{n} differ, max {mx} quanta")
    assert mx <= MAX_QUANTA, f"{b.id}: golden vs onnxruntime: {d}/{n} elements differ, max {mx} quanta"


@pytest.mark.parametrize("block", DEFAULT, ids=lambda b: b.id)
def test_block_host_exact_and_near_onnxruntime(block, work):
    check_host(block, work)


@pytest.mark.slow
@pytest.mark.parametrize("block", SLOW, ids=lambda b: b.id)
def test_larger_block_host_exact_and_near_onnxruntime(block, work):
    check_host(block, work)


@pytest.mark.qemu
@pytest.mark.skipif(bool(missing_tools()), reason="the QEMU tier needs missing tools")
@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
@pytest.mark.parametrize("backend", ["portable", "cmsis-nn"])
def test_blocks_in_qemu(core, backend, work, request):
    """Every default block in one firmware per core and backend, each output equal to its golden."""
    extra: dict = {"board": load_board(core)}
    if backend == "cmsis-nn":
        request.getfixturevalue("cmsis_env")
        extra |= {"backend": "cmsis-nn", "cmsis_path": CMSIS_NN}
    cases = []
    for b in DEFAULT:
        path, c, sample = compiled(b, work)
        cases.append(MergedCase(b.id, compile_model(path, replace(c.options, **extra)), sample))
    run = run_merged(cases, load_board(core), work / f"q_{core}_{backend}",
                     cmsis_nn=CMSIS_NN if backend == "cmsis-nn" else None, werror=True)
    assert run.run.exit_code == 0 and not run.failures, (run.run.exit_code, run.crashed_in, run.failures)
    for m, out in zip(cases, run.outputs, strict=True):
        assert out is not None, m.label
        for o, g in zip(out, golden_run(m.compiled, m.inputs), strict=True):
            np.testing.assert_array_equal(o, g, err_msg=f"{m.label} on {core} ({backend})")


# ---- the pieces the class token needs, alone ----------------------------------------------------------

def _tiny(op_nodes: list[onnx.NodeProto], inits: dict[str, np.ndarray], out_shape: list[int],
          tmp: Path, name: str) -> tuple[Path, Compiled, list[np.ndarray]]:
    nodes = [H.make_node("MatMul", ["x", "lead_W"], ["r"], name="lead"), *op_nodes]
    inits = {"lead_W": np.random.default_rng(4).standard_normal((5, 5)).astype(np.float32), **inits}
    graph = H.make_graph(nodes, name, [H.make_tensor_value_info("x", TP.FLOAT, [1, 6, 5])],
                         [H.make_tensor_value_info("y", TP.FLOAT, out_shape)],
                         [NH.from_array(v, k) for k, v in inits.items()])
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 13)])
    model.ir_version = 8
    rng = np.random.default_rng(3)
    calib = [{"x": rng.uniform(-1, 1, (1, 6, 5)).astype(np.float32)} for _ in range(8)]
    path = quantize(model, calib, fmt="qdq", out_path=tmp / f"{name}.onnx")
    c = compile_model(path, name=name)
    return path, c, int8_inputs(c, [calib[0]["x"]])


def _exact(path: Path, c: Compiled, sample: list[np.ndarray], tmp: Path, quanta: int) -> None:
    lib = build_library([emit(c, tmp / c.name)], tmp / f"lib{c.name}.so")
    gold = golden_run(c, sample)
    for h, want in zip(run_c(lib, c, sample), gold, strict=True):
        np.testing.assert_array_equal(h, want)
    d, n, mx = diff_stats([gold], ort_run(c, path, [sample]))
    assert mx <= quanta, f"golden vs onnxruntime: {d}/{n} differ, max {mx}"


def test_concat_of_a_constant_token(tmp_path):
    """Concat(class token, tokens): the DequantizeLinear'd constant, requantized into the output's
    scale at compile time, is a const array the kernel copies first (int8 rounding as onnxruntime's)."""
    cls = np.linspace(-2.0, 2.0, 5, dtype=np.float32).reshape(1, 1, 5)
    path, c, sample = _tiny([H.make_node("Concat", ["cls", "r"], ["y"], name="cat", axis=1)], {"cls": cls},
                            [1, 7, 5], tmp_path, "cat")
    assert [p.kernel for p in c.prepared if p.kernel][-1] == "mcu_concat_s8"
    _exact(path, c, sample, tmp_path, 0)


@pytest.mark.parametrize("index,shape", [(0, [1, 5]), (-1, [1, 5]), ([1, 3, 5], [1, 3, 5])])
def test_gather_of_constant_indices_is_a_slice(index, shape, tmp_path):
    """x[:, 0] (a scalar index: slice then a view dropping the axis), x[:, -1], x[:, 1::2]."""
    path, c, sample = _tiny([H.make_node("Gather", ["r", "i"], ["y"], name="pick", axis=1)],
                            {"i": np.array(index, np.int64)}, shape, tmp_path, "pick")
    assert "mcu_slice_s8" in [p.kernel for p in c.prepared], [p.kernel for p in c.prepared]
    _exact(path, c, sample, tmp_path, 0)


def test_mul_by_a_constant_follows_onnxruntime(tmp_path):
    """A LayerNorm's gamma (Mul by a per-channel constant) in onnxruntime's numerics: one rounding
    of the exact product, half to even (TFLite's double rounding missed onnxruntime by a quantum on
    ~0.5 % of the elements, 5 quanta after a decomposed-LayerNorm block). Exact on every sample."""
    gamma = np.linspace(-1.5, 2.5, 5, dtype=np.float32)
    path, c, _ = _tiny([H.make_node("Mul", ["r", "g"], ["y"], name="gamma")], {"g": gamma}, [1, 6, 5],
                       tmp_path, "gamma")
    (mul,) = [p for p in c.prepared if p.kernel == "mcu_mul_s8"]
    assert mul.params.rounding == ROUND_NEAREST_EVEN
    lib = build_library([emit(c, tmp_path / c.name)], tmp_path / "libgamma.so")
    rng = np.random.default_rng(5)
    xs = [[rng.integers(-128, 128, (1, 6, 5)).astype(np.int8)] for _ in range(64)]
    gold = [golden_run(c, s) for s in xs]
    for s, g in zip(xs, gold, strict=True):
        np.testing.assert_array_equal(run_c(lib, c, s)[0], g[0])
    d, n, mx = diff_stats(gold, ort_run(c, path, xs))
    assert mx == 0, f"golden vs onnxruntime: {d}/{n} differ, max {mx}"
