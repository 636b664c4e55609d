"""mcu_runtime/tools/kernel_info.c (emitter/kernels/kernel_info.py) answers the path and scratch
questions as the twins' Python formulas did, over the dispatch tests' seeded sweeps of geometries
and requantization constants, on every instruction set."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from emitter.kernels import ISAS, kernel_info
from emitter.kernels import mcu_conv2d_s8 as conv_twin
from emitter.kernels import mcu_depthwise_conv2d_s8 as dw_twin
from emitter.kernels import mcu_fully_connected_s8 as fc_twin
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_fully_connected_s8 import FCParams
from tests.harness.ckernels import conv_out_size, realistic_multipliers
from tests.kernels.test_conv_fc_dispatch import random_conv
from tests.kernels.test_depthwise_conv2d_dispatch import random_call

SWEEP = 1500


def test_conv_answers_equal_the_python_formulas() -> None:
    rng = np.random.default_rng(29)
    for _ in range(SWEEP):
        p, bias = random_conv(rng)
        p = replace(p, q=replace(p.q, rounding=int(rng.integers(0, 3))))  # ROUND_TFLITE, _NEAREST_EVEN, _NO_TIE
        for isa in ISAS:
            assert kernel_info.ask("conv", p, bias, isa) == (conv_twin.path(p, bias, isa),
                                                             conv_twin.buffer_size(p, bias, isa)), (isa, p)


def test_depthwise_answers_equal_the_python_formulas() -> None:
    rng = np.random.default_rng(30)
    for _ in range(SWEEP):
        p, bias = random_call(rng)
        p = replace(p, q=replace(p.q, rounding=int(rng.integers(0, 3))))
        for isa in ISAS:
            assert kernel_info.ask("dw", p, bias, isa) == (dw_twin.path(p, bias, isa),
                                                           dw_twin.buffer_size(p, bias, isa)), (isa, p)


def test_fc_answers_equal_the_python_formulas() -> None:
    rng = np.random.default_rng(31)
    for _ in range(SWEEP):
        n_out, k = int(rng.integers(1, 64)), int(rng.integers(1, 2000))
        per_channel = bool(rng.random() < 0.5)
        mult, shift = realistic_multipliers(rng, n_out if per_channel else 1, k)
        if rng.random() < 0.3:
            shift[int(rng.integers(0, shift.size))] = int(rng.choice([-32, -21, -20, -1, 0, 31]))
        p = FCParams(int(rng.integers(1, 5)), k, n_out,
                     QuantIO(int(rng.integers(-127, 129)), 0, -128, 127, int(rng.integers(0, 3))),
                     int(per_channel), mult, shift)
        for isa in ISAS:
            assert kernel_info.ask("fc", p, None, isa) == (fc_twin.path(p, None, isa),
                                                           fc_twin.buffer_size(p, None, isa)), (isa, p)


def test_depthwise_mve_ring_answers_equal_the_python_formulas() -> None:
    """3x3 depthwise layers of 8 to 136 channels over the ring's width limits (MVE)."""
    rng = np.random.default_rng(32)
    for w in range(1, 40):
        for sw in (1, 2, 3):
            c = int(rng.choice([8, 12, 16, 64, 120, 128, 136]))
            pads = [int(v) for v in rng.integers(0, 3, 4)]
            mult, shift = realistic_multipliers(rng, c, 9)
            h = int(rng.integers(1, 9))
            p = dw_twin.DepthwiseConvParams(
                input=Dims(1, h, w, c), filter=Dims(1, 3, 3, c),
                output=Dims(1, conv_out_size(h, 3, 1, 1, pads[0], pads[1]),
                                    conv_out_size(w, 3, sw, 1, pads[2], pads[3]), c),
                depth_multiplier=1, stride_h=1, stride_w=sw, dilation_h=1, dilation_w=1,
                pad_top=pads[0], pad_left=pads[2], q=QuantIO(int(rng.integers(-127, 129)), 0, -128, 127),
                multiplier=mult.astype(np.int32), shift=shift.astype(np.int32))
            for isa in ISAS:
                assert kernel_info.ask("dw", p, None, isa) == (dw_twin.path(p, None, isa),
                                                               dw_twin.buffer_size(p, None, isa)), (isa, p)
