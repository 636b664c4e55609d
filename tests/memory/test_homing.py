"""Homing calls (emitter/plan/stream.py InPlace.home): a layer written over its input in its own whole
call starts `down` bytes below the input, as its path's order of writes needs, then
mcu_move_up_s8() (mcu_runtime/support/mcu_band.c) moves the output up onto the input. A chain of
such layers (depthwise -> pointwise -> ...) then stays in one place instead of sinking by each
layer's offset: the arena holds one tensor, the largest offset and a scratch. The output's buffer
leads with those bytes, so the call is right wherever the planner puts it; the tests check the
chain stays put, that the lean depthwise call (no row pairs: nearer its input, less scratch) is
taken for the smallest plan, and that every bundle is bit-exact in QEMU and built for the host."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest

from emitter.boards import load_board
from emitter.compiler import Compiled, compile_model
from emitter.resources import data_dir
from emitter.target.toolchain import missing_tools
from emitter.verify.run import run_host
from tests.harness.bundles import STRICT, emit
from tests.memory.chains import same_size_convs
from tests.memory.qemu import qemu_outputs
from tests.memory.test_pointwise_in_place import board_bundle_on_host

MISSING = missing_tools()
RT = data_dir("mcu_runtime")
LEAN_DW = "mcu_depthwise_conv2d_s8_lean"


def dw_pw_chain(tmp_path: Path, c: int = 32, h: int = 9, w: int = 5) -> Path:
    """Depthwise 3x3 and pointwise convolutions in turn, c channels (a DS-CNN's body)."""
    return same_size_convs(c, h, w, (3, 1, 3, 1, 3, 1), (True, False) * 3, tmp_path)


def homes(c: Compiled) -> dict[int, object]:
    sched = c.plan.schedule
    return {k: call for k in sched.exact if (call := sched.call_at(k)) is not None and call.home}


def data_at(c: Compiled, name: str) -> int | None:
    return c.plan.offset_of(name)


def test_moves_against_numpy(tmp_path: Path) -> None:
    """mcu_move_up_s8 moves size bytes up by `by`, mcu_move_down_s8 down by `by` (a ring's held rows:
    mcu_ring_push_rows), overlapping, on word-aligned and odd layouts."""
    lib_path = tmp_path / "libband.so"
    res = subprocess.run(["gcc", "-O2", "-shared", "-fPIC", *STRICT, f"-I{RT / 'include'}", f"-I{RT / 'support'}",
                          str(RT / "support" / "mcu_band.c"), "-o", str(lib_path)], capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0, res.stderr
    lib = ctypes.CDLL(str(lib_path))
    rng = np.random.default_rng(3)
    for size, by, start in [(8000, 384, 0), (8000, 256, 128), (64, 4, 0), (20, 16, 4), (36, 8, 0), (13, 3, 1),
                            (4, 4, 0), (17, 5, 2), (1, 1, 0), (0, 4, 0)] + \
            [(int(rng.integers(0, 300)), int(rng.integers(1, 40)), int(rng.integers(0, 8))) for _ in range(100)]:
        buf = rng.integers(-128, 128, start + size + by + 8).astype(np.int8)
        want = buf.copy()
        want[start + by:start + by + size] = buf[start:start + size]
        lib.mcu_move_up_s8(ctypes.c_void_p(buf.ctypes.data + start), ctypes.c_int32(size), ctypes.c_int32(by))
        assert np.array_equal(buf, want), (size, by, start)
        want = buf.copy()
        want[start:start + size] = buf[start + by:start + by + size]
        lib.mcu_move_down_s8(ctypes.c_void_p(buf.ctypes.data + start + by), ctypes.c_int32(size),
                             ctypes.c_int32(by))
        assert np.array_equal(buf, want), (size, by, start, "down")


@pytest.mark.parametrize("core", ["cortex-m4", "cortex-m7", "cortex-m55"])
def test_chain_stays_in_place(core: str, tmp_path: Path) -> None:
    """The free default plan homes the chain's layers: every one of them keeps its output exactly on
    its input (the chain does not sink), and the arena is the tensor, the largest lead and a scratch
    at most."""
    c = compile_model(dw_pw_chain(tmp_path), name="net", board=load_board(core), memory="auto", io_nhwc=True)
    got = homes(c)
    assert got, "no homing call"
    for k in got:
        node = c.graph.nodes[k]
        assert data_at(c, node.outputs[0]) == data_at(c, node.inputs[0]), k
    tensor = 32 * 9 * 5
    leads = max(b.lead for b in c.plan.buffers)
    scratch = max((b.size for b in c.plan.buffers if b.kind == "scratch"), default=0)
    assert c.plan.arena_size <= tensor + leads + scratch + 4, (c.plan.arena_size, leads, scratch)


@pytest.mark.skipif(bool(MISSING), reason="needs missing tools: " + "; ".join(MISSING))
@pytest.mark.parametrize(("core", "memory", "w"), [("cortex-m4", "inplace", 5), ("cortex-m7", "auto", 5),
                                                   ("cortex-m55", "inplace", 5), ("cortex-m7", "inplace", 5),
                                                   ("cortex-m4", "inplace", 3), ("cortex-m7", "inplace", 11)])
def test_homing_bit_exact_in_qemu_and_on_host(core: str, memory: str, w: int, tmp_path: Path) -> None:
    """The smallest in-place plan (DSP cores: the lean depthwise call, its 3x3 variant's shifted
    windows, homing; rows w wide) and the free default one, bit-exact with the golden model's plain
    build in QEMU and as the board's bundle built for the host (the generic paths under the DSP/MVE
    plan)."""
    board = load_board(core)
    onnx_path = dw_pw_chain(tmp_path, w=w)
    c = compile_model(onnx_path, name="net", board=board, memory=memory, io_nhwc=True)
    got_homes = homes(c)
    assert got_homes
    if memory == "inplace" and board.isa == "dsp":  # the smallest: the lean call, nearer its input
        assert any(getattr(call, "call", "") == LEAN_DW for call in got_homes.values())
    rng = np.random.default_rng(4)
    samples = [[rng.integers(-128, 128, c.input_shapes[0]).astype(np.int8)] for _ in range(3)]
    host_c = compile_model(onnx_path, name="net", memory="layer", isa="c", io_nhwc=True)
    want = run_host(host_c, emit(host_c, tmp_path / "host_bundle"), samples, tmp_path / "host")
    got = qemu_outputs(c, board, samples, tmp_path / "host" / "glue", tmp_path)
    assert "mcu_move_up_s8(" in "".join(p.read_text() for p in (tmp_path / "bundle").glob("*.c"))
    on_host = board_bundle_on_host(c, samples, tmp_path)
    for k in range(len(samples)):
        assert np.array_equal(np.asarray(got[k][0]).ravel(), np.asarray(want[k][0]).ravel()), (core, k)
        assert np.array_equal(np.asarray(on_host[k][0]).ravel(), np.asarray(want[k][0]).ravel()), (core, k, "host")
