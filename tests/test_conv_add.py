"""The residual Add fused into the producing conv (emitter/passes/fuse.py fuse_residual_adds,
emitter/ops/conv_add.py, mcu_runtime/kernels/mcu_conv2d_add_s8.c): QDQ models Conv -> Add built
with onnx.helper over odd shapes, strides, paddings, both operand orders, Sub, different scales and
zero points, ReLU on the conv value and on the sum. Per case: the pass fused it; the fused golden
equals the unfused golden bit for bit; the host C equals the golden; and in QEMU on cortex-m4,
cortex-m7 (DSP path and its generic fallback) and cortex-m55 (MVE path, the Add in its requantization
loop, and the generic fallback) too."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from emitter import compiler
from emitter.boards import load_board
from emitter.compiler import compile_model, golden_run
from emitter.kernels import kernel_path
from emitter.target.toolchain import missing_tools
from tests.harness.bundles import build_library, emit, int8_inputs, run_c
from tests.harness.qemu import MergedCase, run_merged


class Case(NamedTuple):
    id: str
    cin: int
    h: int
    w: int
    cout: int
    k: int
    stride: int
    pad: int
    skip_first: bool  # Add(skip, conv) rather than Add(conv, skip)
    op: str  # "Add" or "Sub"
    relu_conv: bool
    relu_add: bool
    skip_conv: bool = False  # the skip operand is another conv's output, not a graph input (an NCHW
    # graph input as the Add's first operand makes the Add run in NCHW: nothing to fuse)


CASES = [
    Case("k3_c3_odd", 3, 9, 7, 5, 3, 1, 1, False, "Add", False, True),
    Case("k3_s2_skipfirst", 8, 8, 8, 16, 3, 2, 1, True, "Add", True, False, True),
    Case("k3_k144_sub", 16, 6, 6, 12, 3, 1, 1, False, "Sub", False, False),
    Case("k3_k288_nopad", 32, 5, 5, 7, 3, 1, 0, True, "Add", True, True, True),
    Case("k3_k576", 64, 4, 4, 8, 3, 1, 1, False, "Add", False, True),
    Case("k3_k720_runs", 80, 5, 5, 6, 3, 1, 1, True, "Sub", False, False, True),
    Case("k1_contiguous", 16, 8, 8, 32, 1, 1, 0, False, "Add", False, True, True),
    Case("k5_s2_gather", 5, 11, 11, 9, 5, 2, 2, True, "Add", True, False, True),
]
QEMU_CORES = ("cortex-m4", "cortex-m7", "cortex-m55")


def out_size(n: int, c: Case) -> int:
    return (n + 2 * c.pad - c.k) // c.stride + 1


def case_model(c: Case, seed: int) -> onnx.ModelProto:
    """x [1, cin, h, w] (and s [1, cout, ho, wo] unless skip_conv) -> QDQ Conv (+Relu) -> Q/DQ ->
    Add/Sub with the skip (+Relu) -> Q/DQ -> y."""
    rng = np.random.default_rng(seed)
    ho, wo = out_size(c.h, c), out_size(c.w, c)
    inits, nodes = [], []

    def qparam(name: str, lo: float, hi: float) -> None:
        inits.append(NH.from_array(np.array(rng.uniform(lo, hi), np.float32), f"{name}_s"))
        inits.append(NH.from_array(np.array(rng.integers(-20, 21), np.int8), f"{name}_z"))

    def qdq(t: str, q: str) -> str:
        nodes.append(H.make_node("QuantizeLinear", [t, f"{q}_s", f"{q}_z"], [f"{t}_q"]))
        nodes.append(H.make_node("DequantizeLinear", [f"{t}_q", f"{q}_s", f"{q}_z"], [f"{t}_f"]))
        return f"{t}_f"

    def conv(x: str, x_s: float, cin: int, name: str, relu: bool) -> str:
        w = rng.integers(-127, 128, (c.cout, cin, c.k, c.k)).astype(np.int8)
        w_s = rng.uniform(0.002, 0.01, c.cout).astype(np.float32)
        b = rng.integers(-3000, 3000, c.cout).astype(np.int32)
        inits.extend([NH.from_array(w, f"{name}_w"), NH.from_array(w_s, f"{name}_ws"),
                      NH.from_array(np.zeros(c.cout, np.int8), f"{name}_wz"), NH.from_array(b, f"{name}_b"),
                      NH.from_array((w_s * np.float32(x_s)).astype(np.float32), f"{name}_bs"),
                      NH.from_array(np.zeros(c.cout, np.int32), f"{name}_bz")])
        nodes.extend([
            H.make_node("DequantizeLinear", [f"{name}_w", f"{name}_ws", f"{name}_wz"], [f"{name}_wf"], axis=0),
            H.make_node("DequantizeLinear", [f"{name}_b", f"{name}_bs", f"{name}_bz"], [f"{name}_bf"], axis=0),
            H.make_node("Conv", [x, f"{name}_wf", f"{name}_bf"], [f"{name}_out"], name=name,
                        pads=[c.pad] * 4, strides=[c.stride] * 2)])
        out = f"{name}_out"
        if relu:
            nodes.append(H.make_node("Relu", [out], [f"{name}_relu"]))
            out = f"{name}_relu"
        return out

    for q, lo, hi in (("x", 0.02, 0.05), ("s", 0.05, 0.3), ("c", 0.05, 0.3), ("y", 0.08, 0.4)):
        qparam(q, lo, hi)
    x_s = float(NH.to_array(inits[0]))
    xf = qdq("x", "x")
    ins = [H.make_tensor_value_info("x", TP.FLOAT, [1, c.cin, c.h, c.w])]
    if c.skip_conv:
        skip = qdq(conv(xf, x_s, c.cin, "skip_conv", False), "s")
    else:
        ins.append(H.make_tensor_value_info("s", TP.FLOAT, [1, c.cout, ho, wo]))
        skip = qdq("s", "s")
    main = qdq(conv(xf, x_s, c.cin, "conv", c.relu_conv), "c")
    pair = [skip, main] if c.skip_first else [main, skip]
    nodes.append(H.make_node(c.op, pair, ["sum"], name="residual"))
    out = "sum"
    if c.relu_add:
        nodes.append(H.make_node("Relu", [out], ["sum_relu"]))
        out = "sum_relu"
    nodes.append(H.make_node("QuantizeLinear", [out, "y_s", "y_z"], ["y_q"]))
    nodes.append(H.make_node("DequantizeLinear", ["y_q", "y_s", "y_z"], ["y"]))
    graph = H.make_graph(nodes, c.id, ins, [H.make_tensor_value_info("y", TP.FLOAT, [1, c.cout, ho, wo])], inits)
    m = H.make_model(graph, opset_imports=[H.make_opsetid("", 13)], producer_name="mcugen-tests")
    m.ir_version = 8
    return m


def float_inputs(c: Case, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed + 100)
    xs = [rng.uniform(-2.5, 2.5, (1, c.cin, c.h, c.w)).astype(np.float32)]
    if not c.skip_conv:
        xs.append(rng.uniform(-12, 12, (1, c.cout, out_size(c.h, c), out_size(c.w, c))).astype(np.float32))
    return xs


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, tuple[Path, list[np.ndarray]]]:
    tmp = tmp_path_factory.mktemp("conv_add")
    out = {}
    for k, c in enumerate(CASES):
        path = tmp / f"{c.id}.onnx"
        onnx.save(case_model(c, k), path)
        out[c.id] = (path, float_inputs(c, k))
    return out


@pytest.fixture(scope="module")
def host(models, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("conv_add_host")
    compiled = {cid: compile_model(path, name=f"fa{k}") for k, (cid, (path, _)) in enumerate(models.items())}
    lib = build_library([emit(c, tmp / c.name) for c in compiled.values()], tmp / "libfa.so")
    return compiled, lib


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fused_golden_equals_unfused(case, models, host, monkeypatch):
    path, xs = models[case.id]
    fused = host[0][case.id]
    assert [n.op for n in fused.graph.nodes].count("conv_add") == 1, "the pass did not fuse the residual add"
    node = next(n for n in fused.graph.nodes if n.op == "conv_add")
    assert node.attrs["mid"] not in fused.graph.tensors, "the intermediate tensor must disappear"
    monkeypatch.setattr(compiler, "fuse_residual_adds", lambda g, keep=None: g)
    plain = compile_model(path, name="plain")
    assert "conv_add" not in [n.op for n in plain.graph.nodes]
    rng = np.random.default_rng(7)
    for _ in range(3):  # the case's inputs, then random int8 ones over the whole range
        sample = int8_inputs(fused, xs) if _ == 0 else [
            rng.integers(-128, 128, fused.graph.t(n).shape).astype(np.int8) for n in fused.graph.inputs]
        for a, b in zip(golden_run(fused, sample), golden_run(plain, sample), strict=True):
            np.testing.assert_array_equal(a, b, err_msg="fused golden differs from the unfused golden")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_host_c_equals_golden(case, models, host):
    compiled, lib = host
    c = compiled[case.id]
    sample = int8_inputs(c, models[case.id][1])
    for g, h in zip(golden_run(c, sample), run_c(lib, c, sample), strict=True):
        np.testing.assert_array_equal(h, g, err_msg="host C differs from the golden model")


def test_skip_lives_until_the_fused_conv(models):
    """The planner sees the skip as an input of the fused layer: it is live up to it, and the fused
    output overlaps neither its input nor the skip."""
    c = compile_model(models["k1_contiguous"][0], name="fa_plan", memory="layer")
    node = next(n for n in c.graph.nodes if n.op == "conv_add")
    p = c.plan

    def span(name: str) -> tuple[int, int]:
        kind, off = p.location[p.root[name]]
        assert kind == "arena"
        return off, off + c.graph.t(name).nbytes

    out = span(node.outputs[0])
    for name in (node.inputs[0], node.inputs[3]):
        lo, hi = span(name)
        assert hi <= out[0] or lo >= out[1], f"{name} overlaps the fused output"


def test_overlap_plan_writes_only_over_the_skip(models):
    """In an overlap plan the fused output may lie exactly on the skip (read element by element just
    before each write), never on the conv's input."""
    c = compile_model(models["k1_contiguous"][0], name="fa_ovl", memory="inplace")
    node = next(n for n in c.graph.nodes if n.op == "conv_add")
    p = c.plan
    where = {n: p.location[p.root[n]] for n in (node.inputs[0], node.inputs[3], node.outputs[0])}
    assert where[node.outputs[0]] == where[node.inputs[3]], where
    assert where[node.outputs[0]] != where[node.inputs[0]], where


@pytest.mark.qemu
@pytest.mark.skipif(bool(missing_tools()), reason="the QEMU tier needs missing tools")
@pytest.mark.parametrize("core", QEMU_CORES)
def test_qemu_equals_golden(core, models, tmp_path, monkeypatch):
    """Every case fused, on each core's paths (M55: the MVE path, the Add on four lanes)."""
    monkeypatch.setattr(compiler, "residual_fusion", lambda *a: (lambda n, g: True))
    board = load_board(core)
    cases, golden, paths = [], {}, set()
    for k, (cid, (path, xs)) in enumerate(models.items()):
        c = compile_model(path, name=f"fq{k}", board=board)
        assert "conv_add" in [n.op for n in c.graph.nodes]
        paths |= {kernel_path(p.kernel, p.params, p.operands, c.plan_isa) for p in c.prepared
                  if p.kernel == "mcu_conv2d_add_s8"}
        sample = int8_inputs(c, xs)
        cases.append(MergedCase(cid, c, sample))
        golden[cid] = golden_run(c, sample)
    assert paths >= ({"mve"} if board.has_mve else {"dsp"}), paths
    run = run_merged(cases, board, tmp_path, werror=True)
    assert not run.failures, run.failures
    for m, got in zip(cases, run.outputs, strict=True):
        for g, h in zip(golden[m.label], got, strict=True):
            np.testing.assert_array_equal(np.asarray(h).reshape(g.shape), g, err_msg=f"{m.label} on {core}")
