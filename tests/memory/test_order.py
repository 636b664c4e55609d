"""Memory-aware execution order (emitter/plan/order.py): a branching graph whose file order keeps two
wide branch tensors alive together is planned in a better order, bit-exact with the golden; a
chain keeps its one order."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from emitter.compiler import compile_model, golden_run
from emitter.plan.order import orders, topological
from emitter.plan.search import activation_ram
from tests.harness.bundles import build_library, emit
from tests.memory.chains import head_chain
from tests.memory.test_plans import run
from tests.models.ops import IR_VERSION, quantize


def two_branches(out: Path) -> Path:
    """x -> wide a1 -> narrow a2, x -> wide b1 -> narrow b2, concat(a2, b2); the file runs a1, b1,
    a2, b2 (both wide tensors alive at once)."""
    rng = np.random.default_rng(3)
    inits, nodes = [], []

    def conv(name: str, src: str, c_in: int, c_out: int) -> str:
        inits.append(numpy_helper.from_array(rng.normal(0, 0.4, (c_out, c_in, 3, 3)).astype(np.float32), f"{name}_w"))
        nodes.append(helper.make_node("Conv", [src, f"{name}_w"], [name], name=name, kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1]))
        return name

    conv("a1", "x", 2, 24)
    conv("b1", "x", 2, 24)
    conv("a2", "a1", 24, 2)
    conv("b2", "b1", 24, 2)
    nodes.append(helper.make_node("Concat", ["a2", "b2"], ["y"], name="cat", axis=1))
    graph = helper.make_graph(nodes, "branches", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 10, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mcugen-tests")
    model.ir_version = IR_VERSION
    calib = [{"x": rng.normal(0, 1, (1, 2, 10, 8)).astype(np.float32)} for _ in range(8)]
    return quantize(onnx.shape_inference.infer_shapes(model), calib, out_path=out / "branches.onnx")


def test_a_better_order_is_found_and_runs_bit_exact(tmp_path: Path) -> None:
    path = two_branches(tmp_path)
    layer = compile_model(path, name="file_order")
    c = compile_model(path, name="searched", memory="inplace")
    assert [n.name for n in layer.graph.nodes] != [n.name for n in c.graph.nodes]  # reordered
    wide = 10 * 8 * 24
    assert activation_ram(c.graph, c.plan) <= activation_ram(layer.graph, layer.plan) - wide, \
        (activation_ram(c.graph, c.plan), activation_ram(layer.graph, layer.plan))
    lib = build_library([emit(c, tmp_path / c.name)], tmp_path / "lib.so")
    x = np.random.default_rng(1).integers(-128, 128, c.input_shapes[0], dtype=np.int8)
    assert np.array_equal(run(lib, c, x, 0xA5, False), golden_run(layer, [x])[0])


def test_orders_are_topological_and_a_chain_has_one(tmp_path: Path) -> None:
    g = compile_model(two_branches(tmp_path)).graph
    for order in orders(g):
        made = set(g.inputs)
        for k in order:
            assert all(i in made or g.t(i).is_const for i in g.nodes[k].inputs if i), order
            made |= set(g.nodes[k].outputs)
    assert topological(g, lambda ready, done: ready[0]) == list(range(len(g.nodes)))
    assert len(orders(compile_model(head_chain("fc", tmp_path)).graph)) == 1
