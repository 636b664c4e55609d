"""mcu_runtime/tools/kernel_info.c (emitter/kernels/kernel_info.py): the twins' path() and
buffer_size() are the C dispatchers' own answers.

Before the twins' Python formulas were removed, the tool's answers equalled them on 1500 seeded
conv, depthwise and FC calls per ISA and the MVE ring sweep (the commit that added the tool). Here:
the answers equal the C called in-process (tests/harness/ckernels.py) on the roundings and shift
edges the dispatch tests do not sweep, a malformed line stops the tool, and the twins hold no
copy of a dispatcher constant or of mcu_requant2_ok()."""
from __future__ import annotations

import subprocess
from dataclasses import replace

import numpy as np
import pytest

from emitter.kernels import ISAS, kernel_info
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels import mcu_depthwise_conv2d_s8 as dw_twin
from emitter.kernels import mcu_fully_connected_s8 as fc_twin
from emitter.kernels.common import QuantIO
from emitter.kernels.mcu_fully_connected_s8 import FCParams
from tests.harness.ckernels import ROOT, call_raw, realistic_multipliers
from tests.kernels.test_conv_fc_dispatch import random_conv
from tests.kernels.test_depthwise_conv2d_dispatch import random_call

SWEEP = 300


def test_every_rounding_as_the_c() -> None:
    rng = np.random.default_rng(29)
    for _ in range(SWEEP):
        p, bias = random_conv(rng)
        p = replace(p, q=replace(p.q, rounding=int(rng.integers(0, 3))))  # TFLITE, NEAREST_EVEN, NO_TIE
        d, dbias = random_call(rng)
        d = replace(d, q=replace(d.q, rounding=int(rng.integers(0, 3))))
        for isa in ISAS:
            i = ISAS.index(isa)
            assert (conv_twin.path(p, bias, isa), conv_twin.buffer_size(p, bias, isa)) == (
                kernel_info.PATHS[call_raw("mcu_conv2d_s8_path", p, bias, i)],
                call_raw("mcu_conv2d_s8_get_buffer_size", p, bias, i)), (isa, p)
            assert (dw_twin.path(d, dbias, isa), dw_twin.buffer_size(d, dbias, isa)) == (
                kernel_info.PATHS[call_raw("mcu_depthwise_conv2d_s8_path", d, dbias, i)],
                call_raw("mcu_depthwise_conv2d_s8_get_buffer_size", d, dbias, i)), (isa, d)


def test_fc_shift_edges_and_roundings_as_the_c() -> None:
    rng = np.random.default_rng(31)
    for _ in range(SWEEP):
        n_out, k = int(rng.integers(1, 64)), int(rng.integers(1, 2000))
        per_channel = bool(rng.random() < 0.5)
        mult, shift = realistic_multipliers(rng, n_out if per_channel else 1, k)
        if rng.random() < 0.5:
            shift[int(rng.integers(0, shift.size))] = int(rng.choice([-32, -21, -20, -1, 0, 31]))
        p = FCParams(int(rng.integers(1, 5)), k, n_out,
                     QuantIO(int(rng.integers(-127, 129)), 0, -128, 127, int(rng.integers(0, 3))),
                     int(per_channel), mult, shift)
        for isa in ISAS:
            assert fc_twin.path(p, None, isa) == kernel_info.PATHS[
                call_raw("mcu_fully_connected_s8_path", p, None, ISAS.index(isa))], (isa, p)


@pytest.mark.parametrize("line", ["conv 0 1 2 3", "gemm 0 1", "conv x"])
def test_a_malformed_line_stops_the_tool(line: str) -> None:
    res = subprocess.run([str(kernel_info.tool())], input=line + "\n", capture_output=True, text=True,
                         timeout=10, check=False)
    assert res.returncode == 2 and res.stdout == ""


@pytest.mark.parametrize("twin", ["mcu_conv2d_s8", "mcu_depthwise_conv2d_s8", "mcu_fully_connected_s8"])
def test_twins_hold_no_dispatcher_formula(twin: str) -> None:
    text = (ROOT / "emitter" / "kernels" / f"{twin}.py").read_text()
    assert "kernel_info.ask(" in text
    for copied in ("requant2_ok", "_internal.h", "MAX_TAPS", "OC_BLOCK", "-20"):
        assert copied not in text, f"{twin}.py copies {copied} of the C"
    assert "mcu_requant2_ok" not in (ROOT / "emitter" / "kernels" / "common.py").read_text()


def test_lean_room_as_the_c_and_its_rule() -> None:
    """The lean call's fast-by-room answer (kernel_info "room", conv_twin.lean_fast) is the C's own
    (mcu_conv2d_s8_lean_fast called in-process), and its rule holds: never with less room than
    the fast call's scratch; always with it on MVE and where the fast path is the generic one; on
    DSP only with four positions a pass and no more positions computed in fours than 19/17 of
    those in twos (the channel pairs win a narrow call)."""
    rng = np.random.default_rng(37)
    for _ in range(SWEEP):
        p, bias = random_conv(rng)
        for isa in ISAS:
            i = ISAS.index(isa)
            need = conv_twin.buffer_size(p, bias, isa)
            for room in (0, max(0, need - 1), need, need + 64):
                got = conv_twin.lean_fast(p, bias, isa, room)
                assert got == bool(call_raw("mcu_conv2d_s8_lean_fast", p, bias, i, room)), (isa, room, p)
                path = conv_twin.path(p, bias, isa)
                if room < need:
                    assert not got, (isa, room, p)
                elif path in ("mve", "generic"):
                    assert got, (isa, room, p)
                elif conv_twin.lean_path(p, bias, "dsp") == "generic":
                    assert got, (isa, room, p)  # the fast call beats the generic loops
                else:  # DSP, its lean call the channel pairs
                    n, k = p.input.n * p.output.h * p.output.w, p.filter.h * p.filter.w * p.input.c
                    if got:
                        assert 17 * (-(-n // 4) * 4) <= 19 * (-(-n // 2) * 2), (n, p)
                    if k <= 144 and n >= 4 and n % 4 == 0:  # four positions a pass, none wasted
                        assert got, (n, p)
