"""Streamed segments whose layers make several rows a call (band heights, emitter/plan/stream.py
Segment.heights): random chains run on the host with the arena poisoned, bit-exact with the
whole-layer golden, at uniform and mixed heights; the replay's rings hold every band's window;
mcu_ring_push_rows() in C keeps exactly the rows the replay says; a shared model's multi-row plan
in QEMU is bit-exact with TFLM."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import emitter.plan.propose as propose
from emitter.compiler import Compiled, compile_model, golden_run
from emitter.plan import stream
from emitter.plan.search import activation_ram
from emitter.resources import data_dir
from tests.harness.bundles import STRICT, build_library, emit
from tests.memory.chains import random_chain
from tests.memory.test_plans import run

SEEDS = range(14)
RT = data_dir("mcu_runtime")


def mixed(h: int, steps: list[int]) -> tuple[int, ...]:
    """Varied per-layer heights 1..h+2 (a fixed function of the steps, so plans are reproducible)."""
    return tuple(1 + (7 * k + 3 * h) % (h + 2) for k in steps)


def heights_of(c: Compiled) -> list[tuple[int, ...]]:
    return [s.heights for s in c.plan.schedule.segments if s.heights]


@pytest.fixture(scope="module")
def banded(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[tuple[int, str], Compiled], ctypes.CDLL]:
    """Each chain's smallest streamed plan with every segment at one height (2, 3 or 5), and at
    mixed heights per layer."""
    work = tmp_path_factory.mktemp("heights")
    compiled, bundles = {}, []
    mp = pytest.MonkeyPatch()
    make = stream.make_segment
    try:
        for seed in SEEDS:
            path = random_chain(seed, work)
            h = (2, 3, 5)[seed % 3]
            for kind in ("uniform", "mixed"):
                def fake(st: Any, prep: Any, isa: str, slack: Any = lambda r: r, lean: bool = False,
                         hh: Any = 1, kind: str = kind, h: int = h) -> Any:
                    if kind == "mixed" and isinstance(hh, int) and hh > 1:
                        hh = mixed(h, [s.step for s in st])
                    return make(st, prep, isa, slack, lean, hh)
                mp.setattr(propose, "HEIGHTS", (h,))
                mp.setattr(propose, "make_segment", fake)
                c = compile_model(path, name=f"h{seed}_{kind}", memory="stream", isa="c")
                compiled[seed, kind] = c
                bundles.append(emit(c, work / c.name))
    finally:
        mp.undo()
    return compiled, build_library(bundles, work / "libheights.so")


def test_chains_take_several_rows_a_call(banded: tuple[dict[tuple[int, str], Compiled], ctypes.CDLL]) -> None:
    compiled, _ = banded
    tall = [k for k, c in compiled.items() if any(max(h) > 1 for h in heights_of(c))]
    assert len(tall) >= len(compiled) // 2, tall  # most chains stream a segment of several layers
    mixes = [c for (_, kind), c in compiled.items() if kind == "mixed" and any(len(set(h)) > 1 for h in heights_of(c))]
    assert mixes


@pytest.mark.parametrize("seed", SEEDS)
def test_band_heights_bit_exact(banded: tuple[dict[tuple[int, str], Compiled], ctypes.CDLL], seed: int) -> None:
    compiled, lib = banded
    rng = np.random.default_rng(300 + seed)
    for kind in ("uniform", "mixed"):
        c = compiled[seed, kind]
        for sample in range(2):
            x = rng.integers(-128, 128, c.input_shapes[0], dtype=np.int8)
            want = golden_run(c, [x])[0]
            for poison, in_place in ((0x00, False), (0xA5, True), (0x7F, False)):
                got = run(lib, c, x, poison, in_place)
                assert np.array_equal(got, want), (c.name, heights_of(c), sample, poison, in_place)


@pytest.mark.parametrize("seed", SEEDS)
def test_rings_hold_every_band(banded: tuple[dict[tuple[int, str], Compiled], ctypes.CDLL], seed: int) -> None:
    """Each segment's rings: the unbounded replay's most rows held, the bounded replay succeeds at
    the planned capacities and fails with one row less (a ring sized to its need), and the
    replay makes every layer's rows in bands of its height (the last may be shorter)."""
    compiled, _ = banded
    for kind in ("uniform", "mixed"):
        for seg in compiled[seed, kind].plan.schedule.segments:
            if len(seg.stages) < 2:
                continue
            st = list(seg.stages)
            sim = stream.simulate(st, list(seg.caps), seg.heights)
            assert sim is not None
            want_calls = sum(s.out_rows if s.sink else -(-s.out_rows // seg.height(i)) for i, s in enumerate(st))
            assert sim.calls == want_calls
            free = stream.simulate(st, None, seg.heights)
            assert free is not None
            for i, (cap, peak) in enumerate(zip(seg.caps, free.peak_rows, strict=True)):
                assert peak <= cap <= st[i].out_rows
                need = min(peak, st[i].out_rows)
                smaller = [*seg.caps]
                smaller[i] = need - 1
                if need - 1 >= 1:
                    assert stream.simulate(st, smaller, seg.heights) is None, (i, seg.caps, peak)


def test_ring_push_rows_against_the_replay(tmp_path: Path) -> None:
    """mcu_ring_push_rows() (mcu_band.h) drops rows below `keep` only when the band does not fit,
    as stream.simulate does; NULL when it still does not fit."""
    shim = tmp_path / "shim.c"
    shim.write_text('#include "mcu_band.h"\n'
                    "int8_t *push_rows(mcu_ring_t *ring, int32_t keep, int32_t n);\n"
                    "int8_t *push_rows(mcu_ring_t *ring, int32_t keep, int32_t n)\n"
                    "{\n    return mcu_ring_push_rows(ring, keep, n);\n}\n")
    lib_path = tmp_path / "libshim.so"
    res = subprocess.run(["gcc", "-O1", "-shared", "-fPIC", *STRICT, f"-I{RT / 'include'}",
                          f"-I{RT / 'support'}", str(shim), str(RT / "support" / "mcu_band.c"), "-o", str(lib_path)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    lib = ctypes.CDLL(str(lib_path))
    lib.push_rows.restype = ctypes.c_void_p

    class Ring(ctypes.Structure):
        _fields_ = [("buf", ctypes.c_void_p), ("row_bytes", ctypes.c_int32), ("cap", ctypes.c_int32),
                    ("base", ctypes.c_int32), ("count", ctypes.c_int32)]

    rng = np.random.default_rng(5)
    for _ in range(200):
        cap, rb = int(rng.integers(1, 9)), int(rng.integers(1, 4))
        buf = np.zeros(cap * rb, np.int8)
        ring = Ring(buf.ctypes.data, rb, cap, 0, 0)
        base = count = nxt = 0
        for _ in range(12):
            n = int(rng.integers(1, cap + 2))
            keep = int(rng.integers(base, nxt + n + 1))
            # the replay's rule (stream.simulate, bounded)
            ok = True
            b2, c2 = base, count
            if c2 + n > cap:
                drop = keep - b2
                if drop <= 0:
                    ok = False
                elif drop < c2:
                    c2, b2 = c2 - drop, keep
                else:
                    b2, c2 = b2 + c2, 0
                ok = ok and c2 + n <= cap
            ptr = lib.push_rows(ctypes.byref(ring), keep, n)
            if not ok:
                assert ptr is None
                break
            assert ptr == buf.ctypes.data + c2 * rb
            for j in range(n):
                ctypes.memset(ptr + j * rb, (nxt + j) % 128, rb)
            base, count, nxt = b2, c2 + n, nxt + n
            assert (ring.base, ring.count) == (base, count)
            held = [int(buf[k * rb]) for k in range(count)]
            assert held == [r % 128 for r in range(base, base + count)]


@pytest.mark.parametrize(("name", "core", "budget"), [("mlperf_kws_dscnn", "cortex-m4", 8_500)])
def test_shared_model_multi_row_plan_in_qemu(name: str, core: str, budget: int, tmp_path: Path) -> None:
    """The fastest plan within the budget takes bands of several rows, fits, and is bit-exact with
    TFLM on the host and in QEMU."""
    from emitter.boards import load_board
    from emitter.verify.run import run_host
    from tests.harness.bundles import SHARED_MODELS, shared_model
    from tests.memory.qemu import qemu_outputs
    from tests.memory.test_shared_plans import MISSING, reference

    if not SHARED_MODELS.is_dir():
        pytest.skip("../shared/models is not present")
    if MISSING:
        pytest.skip("needs missing tools: " + "; ".join(MISSING))
    board = load_board(core)
    samples, tflm = reference(name)
    c = compile_model(shared_model(name), name="net", board=board, memory="auto", ram_budget=budget)
    assert activation_ram(c.graph, c.plan) <= budget
    assert any(max(h) > 1 for h in heights_of(c)), "no band of several rows"
    host_c = compile_model(shared_model(name), name="net", memory="layer", isa="c")
    run_host(host_c, emit(host_c, tmp_path / "host_bundle"), samples, tmp_path / "host")
    got = qemu_outputs(c, board, samples, tmp_path / "host" / "glue", tmp_path)
    assert "mcu_ring_push_rows" in "".join(p.read_text() for p in (tmp_path / "bundle").glob("*.c"))
    for k, want in enumerate(tflm):
        assert np.array_equal(np.asarray(got[k][0]).ravel(), want.ravel().astype(np.int8)), (name, core, k)
