"""Memory plans on random chains and branches: every plan kind, run on the host with the arena
poisoned before every run, is bit-exact with the whole-layer golden; the inputs may be written in
place in the arena. Plans never beat physics: each is at least the largest single tensor."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from emitter.compiler import Compiled, compile_model, golden_run
from emitter.plan.search import activation_ram
from tests.harness.bundles import build_library, emit
from tests.memory.chains import head_chain, random_chain

SEEDS = range(14)
KINDS = ("layer", "inplace", "overlap", "stream", "stream_any")  # stream_any: planned for any core (so
#   conv/depthwise rows may take the lean generic call with less scratch), run with the host's kernels


@pytest.fixture(scope="module")
def chains(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[tuple[int, str], Compiled], ctypes.CDLL]:
    work = tmp_path_factory.mktemp("chains")
    compiled, bundles = {}, []
    for seed in SEEDS:
        path = random_chain(seed, work)
        for kind in KINDS:
            c = compile_model(path, name=f"c{seed}_{kind}", memory=kind.removesuffix("_any"),
                              isa="any" if kind.endswith("_any") else "c")
            compiled[seed, kind] = c
            bundles.append(emit(c, work / c.name))
    return compiled, build_library(bundles, work / "libchains.so")


def arena(lib: ctypes.CDLL, c: Compiled) -> np.ndarray:
    size = max(c.plan.arena_size, 1)
    raw = (ctypes.c_uint8 * size).in_dll(lib, f"{c.name}_arena")
    return np.ctypeslib.as_array(raw)


def run(lib: ctypes.CDLL, c: Compiled, x: np.ndarray, poison: int, in_place: bool) -> np.ndarray:
    mem = arena(lib, c)
    mem[:] = poison
    ins = [np.ascontiguousarray(x, np.int8)]
    off = c.plan.offset_of(c.graph.inputs[0])
    if in_place and off is not None:  # the caller writes the input at <NAME>_INPUT0_BUFFER
        mem[off:off + x.size] = x.ravel().view(np.uint8)
        ptr = ctypes.c_void_p(mem.ctypes.data + off)
    else:
        ptr = ctypes.c_void_p(ins[0].ctypes.data)
    y = np.zeros(c.output_shapes[0], np.int8)
    status = getattr(lib, f"{c.name}_run_multi")((ctypes.c_void_p * 1)(ptr),
                                                 (ctypes.c_void_p * 1)(y.ctypes.data))
    assert status == 0, (c.name, status)
    return y


@pytest.mark.parametrize("seed", SEEDS)
def test_every_plan_is_bit_exact(chains: tuple[dict[tuple[int, str], Compiled], ctypes.CDLL], seed: int) -> None:
    compiled, lib = chains
    rng = np.random.default_rng(100 + seed)
    for kind in KINDS:
        c = compiled[seed, kind]
        for sample in range(3):
            x = rng.integers(-128, 128, c.input_shapes[0], dtype=np.int8)
            want = golden_run(c, [x])[0]
            for poison, in_place in ((0x00, False), (0xA5, True), (0x7F, False)):
                got = run(lib, c, x, poison, in_place)
                assert np.array_equal(got, want), (c.name, sample, poison, in_place)


@pytest.mark.parametrize("seed", SEEDS)
def test_plans_only_shrink(chains: tuple[dict[tuple[int, str], Compiled], ctypes.CDLL], seed: int) -> None:
    compiled, _ = chains
    g = compiled[seed, "layer"].graph
    ram = {k: activation_ram(g, compiled[seed, k].plan) for k in KINDS}
    assert ram["inplace"] <= ram["layer"]
    for kind in KINDS:  # a plan holds at least its largest whole tensor (streamed ones live in rings)
        p = compiled[seed, kind].plan
        whole = [t.nbytes for t in g.tensors.values()
                 if not t.is_const and p.location.get(p.root.get(t.name, ""), ("ring", 0))[0] != "ring"]
        assert ram[kind] >= max(whole), (kind, ram)
    for kind in ("overlap", "stream"):
        p = compiled[seed, kind].plan
        assert ram[kind] <= ram["inplace"] or p.schedule.kind != kind, (seed, ram)


def test_some_chains_stream_and_overlap(chains: tuple[dict[tuple[int, str], Compiled], ctypes.CDLL]) -> None:
    """The random cases exercise every mode (else the bit-exact test above proves little)."""
    compiled, _ = chains
    modes = {m for c in compiled.values() for m in c.plan.modes.values()}
    assert {"rows", "down", "up"} <= modes, modes
    segments = [s for c in compiled.values() for s in c.plan.schedule.segments if c.plan.modes.get(s.first) == "rows"]
    assert any(s.stages[-1].sink for s in segments), "no streamed chain ended in an accumulating head"
    assert any(s.lean for s in segments), "no streamed layer took the lean call"


def test_streamed_bundles_are_deterministic_and_cross_compile_warning_free(
        chains: tuple[dict[tuple[int, str], Compiled], ctypes.CDLL], tmp_path: Path) -> None:
    import shutil
    import subprocess

    from emitter.render.bundle import render_bundle
    from tests.harness.bundles import STRICT

    compiled, _ = chains
    c = next(c for (seed, kind), c in compiled.items() if kind == "stream" and "rows" in c.plan.modes.values())
    again = compile_model(c.model.path, name=c.name, memory="stream", isa="c")
    first, second = render_bundle(c, "", "host"), render_bundle(again, "", "host")
    assert first == second
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("arm-none-eabi-gcc is not installed")
    for rel, data in first.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    sources = [tmp_path / f"{c.name}.c", tmp_path / "mcu_runtime" / "support" / "mcu_band.c"]
    cmd = ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-O2", *STRICT, f"-I{tmp_path}",
           f"-I{tmp_path / 'mcu_runtime' / 'include'}", "-c", *map(str, sources)]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("kind", ["gap", "gap_fc", "fc"])
def test_heads_accumulate_streamed_rows(kind: str, tmp_path: Path) -> None:
    """A chain whose largest tensor is its last: the smallest plan streams it into the head (a
    global average pool or a fully connected layer adding each row into int32 sums), never whole,
    bit-exact with the whole-layer golden with the arena poisoned."""
    c = compile_model(head_chain(kind, tmp_path), name=f"h_{kind}", memory="stream")
    layer = compile_model(head_chain(kind, tmp_path), name=f"h_{kind}_layer")
    sinks = [s.stages[-1].kernel for s in c.plan.schedule.segments if s.stages[-1].sink]
    assert sinks == [{"gap": "mcu_avgpool_requant_s8", "gap_fc": "mcu_avgpool_requant_s8",
                      "fc": "mcu_fully_connected_s8"}[kind]] or sinks == ["mcu_avgpool_s8"], sinks
    assert activation_ram(c.graph, c.plan) < activation_ram(layer.graph, layer.plan) - 11 * 9 * 24 // 2
    lib = build_library([emit(c, tmp_path / c.name)], tmp_path / "lib.so")
    rng = np.random.default_rng(5)
    for poison in (0x00, 0xA5):
        x = rng.integers(-128, 128, c.input_shapes[0], dtype=np.int8)
        assert np.array_equal(run(lib, c, x, poison, True), golden_run(c, [x])[0])


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m55"])
def test_fully_connected_head_bit_exact_in_qemu(core: str, tmp_path: Path) -> None:
    """The fully connected sink on the cores' dot products (mcu_fully_connected_s8_acc: a block of four
    rows a call of mcu_dot4_s8, rows past the last block alone): each streamed row's features start
    inside a 16-feature chunk of the weights and end inside another, and the outputs are not a whole
    number of blocks; bit-exact with the golden in QEMU."""
    from emitter.boards import load_board
    from emitter.target.toolchain import missing_tools
    from emitter.verify.harness import write_glue
    from tests.memory.qemu import qemu_outputs

    if missing_tools():
        pytest.skip("needs missing tools: " + "; ".join(missing_tools()))
    board = load_board(core)
    c = compile_model(head_chain("fc", tmp_path), name="h_fc", board=board, memory="stream", io_nhwc=True)
    seg = next(s for s in c.plan.schedule.segments if s.stages[-1].sink)
    fc = c.prepared[seg.last].params
    row = seg.stages[-1].in_row_bytes[0]
    assert row % 16 and fc.out_features % 4 and fc.in_features % 16, (row, fc.out_features, fc.in_features)
    rng = np.random.default_rng(9)
    samples = [[rng.integers(-128, 128, c.input_shapes[0]).astype(np.int8)] for _ in range(3)]
    write_glue(c, tmp_path / "glue")
    got = qemu_outputs(c, board, samples, tmp_path / "glue", tmp_path)
    for k, (x,) in enumerate(samples):
        assert np.array_equal(np.asarray(got[k][0]).ravel(), np.asarray(golden_run(c, [x])[0]).ravel()), (core, k)
