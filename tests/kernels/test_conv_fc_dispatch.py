"""The Python twins' path() and buffer_size() (emitter/kernels/mcu_conv2d_s8.py,
mcu_fully_connected_s8.py) equal the C dispatchers' mcu_<k>_path() / mcu_<k>_get_buffer_size(),
compiled for the host, on every instruction set over a seeded sweep of geometries and
requantization constants; and kernel_choice asks the twin instead of copying C constants."""
from __future__ import annotations

import re

import numpy as np
import pytest

from emitter.kernels import ISAS, c_defines
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels import mcu_fully_connected_s8 as fc_twin
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_conv2d_s8 import ConvParams
from emitter.kernels.mcu_fully_connected_s8 import FCParams
from tests.harness.ckernels import ROOT, call_raw, conv_out_size, realistic_multipliers, wide_multipliers

ISA = {"c": 0, "dsp": 1, "mve": 2}  # MCU_ISA_* in mcu_nn.h
PATH = {0: "generic", 1: "dsp", 2: "mve"}  # MCU_PATH_*
CASES = 600


def test_isa_and_path_numbers_match_the_header() -> None:
    h = c_defines("include/mcu_nn.h")
    assert {isa: h[f"MCU_ISA_{isa.upper()}"] for isa in ISAS} == ISA
    assert {h[f"MCU_PATH_{name.upper()}"]: name for name in PATH.values()} == PATH


def random_conv(rng: np.random.Generator) -> tuple[ConvParams, np.ndarray | None]:
    kh, kw = int(rng.integers(1, 8)), int(rng.integers(1, 8))
    c_in = int(rng.choice([1, 2, 3, 4, 8, 12, 16, 20, 32, 40, 64, 80]))
    c_out = int(rng.integers(1, 80))
    h, w = int(rng.integers(1, 12)), int(rng.integers(1, 12))
    sh, sw, dh, dw = (int(v) for v in rng.integers(1, 4, 4))
    pads = [int(v) for v in rng.integers(0, 3, 4)] if rng.random() < 0.6 else [0, 0, 0, 0]
    out_h = conv_out_size(h, kh, sh, dh, pads[0], pads[1])
    out_w = conv_out_size(w, kw, sw, dw, pads[2], pads[3])
    mult, shift = (realistic_multipliers(rng, c_out, kh * kw * c_in) if rng.random() < 0.8
                   else wide_multipliers(rng, c_out))
    n = int(rng.integers(1, 3))
    p = ConvParams(Dims(n, h, w, c_in), Dims(c_out, kh, kw, c_in), Dims(n, out_h, out_w, c_out),
                   sh, sw, dh, dw, pads[0], pads[2], QuantIO(int(rng.integers(-127, 129)), 0, -128, 127),
                   mult, shift)
    r = rng.random()
    bias = (None if r < 0.2 else rng.integers(-(1 << 14), 1 << 14, c_out).astype(np.int32) if r < 0.9
            else rng.integers(-(1 << 31), (1 << 31) - 1, c_out).astype(np.int32))  # |bias| >= 2^29 too
    return p, bias


def test_conv_path_and_buffer_size_equal_the_c() -> None:
    rng = np.random.default_rng(2026)
    seen: set[tuple[str, str]] = set()
    for _ in range(CASES):
        p, bias = random_conv(rng)
        for isa in ISAS:
            c_path = PATH[call_raw("mcu_conv2d_s8_path", p, bias, ISA[isa])]
            c_size = call_raw("mcu_conv2d_s8_get_buffer_size", p, bias, ISA[isa])
            assert (conv_twin.path(p, bias, isa), conv_twin.buffer_size(p, bias, isa)) == (c_path, c_size), \
                (isa, p)
            seen.add((isa, c_path))
    # the sweep reaches every path the C can take
    assert seen == {("c", "generic"), ("dsp", "generic"), ("dsp", "dsp"), ("mve", "generic"), ("mve", "mve")}


def test_fc_path_and_buffer_size_equal_the_c() -> None:
    rng = np.random.default_rng(7)
    for _ in range(CASES):
        n_out, k = int(rng.integers(1, 64)), int(rng.integers(1, 2000))
        per_channel = bool(rng.random() < 0.5)
        mult, shift = realistic_multipliers(rng, n_out if per_channel else 1, k)
        p = FCParams(int(rng.integers(1, 5)), k, n_out, QuantIO(int(rng.integers(-127, 129)), 0, -128, 127),
                     int(per_channel), mult, shift)
        bias = rng.integers(-(1 << 14), 1 << 14, n_out).astype(np.int32) if rng.random() < 0.8 else None
        for isa in ISAS:
            assert fc_twin.path(p, bias, isa) == PATH[call_raw("mcu_fully_connected_s8_path", p, bias, ISA[isa])]
            assert fc_twin.buffer_size(p, bias, isa) == call_raw("mcu_fully_connected_s8_get_buffer_size",
                                                                 p, bias, ISA[isa])


@pytest.mark.parametrize("name", ["MCU_CONV_PATCH_BYTES", "MCU_CONV_DSP_WORDS", "MCU_CONV_FAST_MAX_K"])
def test_no_c_constant_copied_into_python(name: str) -> None:
    """The tuning constants have one definition, the C header; Python reads them."""
    value = c_defines("kernels/mcu_conv2d_s8_internal.h")[name]
    for rel in ("emitter/backends/kernel_choice.py", "emitter/kernels/mcu_conv2d_s8.py"):
        text = (ROOT / rel).read_text()
        assert not re.search(rf"=\s*{value}\b", text), f"{rel} copies {name} = {value}"
