"""The depthwise twin's path() / buffer_size() (emitter/kernels/mcu_depthwise_conv2d_s8.py) equal
the C dispatcher's mcu_depthwise_conv2d_s8_path() / _get_buffer_size(), compiled on the host, for
every ISA over a sweep of random geometries and requantization constants (in, at the edges of and
out of mcu_requant2_ok()'s range) and filters of more taps than the fast paths take."""
from __future__ import annotations

import numpy as np
import pytest

from emitter.kernels import ISAS, c_defines
from emitter.kernels import mcu_depthwise_conv2d_s8 as twin
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_depthwise_conv2d_s8 import DepthwiseConvParams
from tests.harness.ckernels import call_raw, conv_out_size, realistic_multipliers, wide_multipliers

PATHS = ("generic", "dsp", "mve")  # MCU_PATH_GENERIC, MCU_PATH_DSP, MCU_PATH_MVE
SWEEP = 600
# a prepared MVE group of a 3x3 filter (MCU_DW_MVE_GROUP_BYTES(9)): the constants, then 16 bytes a tap
MVE_GROUP_3X3_BYTES = c_defines("kernels/mcu_depthwise_conv2d_s8_internal.h")["MCU_DW_MVE_CONST_BYTES"] + 16 * 9


def random_call(rng: np.random.Generator) -> tuple[DepthwiseConvParams, np.ndarray | None]:
    c_in = int(rng.choice([1, 2, 3, 4, 5, 8, 12, 16]))
    dm = int(rng.choice([1, 1, 1, 2, 3]))
    c = c_in * dm
    kh, kw = int(rng.integers(1, 8)), int(rng.integers(1, 8))
    if rng.random() < 0.05:
        kh, kw = (26, 1) if rng.random() < 0.5 else (1, 30)
    h, w = int(rng.integers(1, 12)), int(rng.integers(1, 12))
    sh, sw, dh, dw = (int(v) for v in rng.integers(1, 4, 4))
    pads = [int(v) for v in rng.integers(0, 4, 4)]
    mode = rng.integers(0, 4)
    if mode == 0:
        mult, shift = realistic_multipliers(rng, c, kh * kw)
    elif mode == 1:
        mult, shift = wide_multipliers(rng, c)
    else:  # realistic, with one channel at or just past an edge of mcu_requant2_ok's range
        mult, shift = realistic_multipliers(rng, c, kh * kw)
        k = int(rng.integers(0, c))
        edge = int(rng.integers(0, 5))
        if edge == 0:
            shift[k] = int(rng.choice([-21, -20, -1, 0]))
        elif edge == 1:
            mult[k] = -int(rng.integers(1, 1 << 30))
    bias = None if rng.random() < 0.2 else rng.integers(-(1 << 13), 1 << 13, c).astype(np.int32)
    if bias is not None and mode == 3:
        bias[int(rng.integers(0, c))] = int(rng.choice([(1 << 29) - 1, 1 << 29, -(1 << 29) + 1,
                                                         -(1 << 29), (1 << 31) - 1, -(1 << 31)]))
    p = DepthwiseConvParams(
        input=Dims(1, h, w, c_in), filter=Dims(1, kh, kw, c),
        output=Dims(1, conv_out_size(h, kh, sh, dh, pads[0], pads[1]),
                    conv_out_size(w, kw, sw, dw, pads[2], pads[3]), c),
        depth_multiplier=dm, stride_h=sh, stride_w=sw, dilation_h=dh, dilation_w=dw,
        pad_top=pads[0], pad_left=pads[2], q=QuantIO(int(rng.integers(-127, 129)), 0, -128, 127),
        multiplier=mult.astype(np.int32), shift=shift.astype(np.int32))
    return p, bias


@pytest.mark.parametrize("isa", ISAS)
def test_twin_equals_c_dispatcher(isa: str) -> None:
    rng = np.random.default_rng(10 + ISAS.index(isa))
    seen: set[str] = set()
    for _ in range(SWEEP):
        p, bias = random_call(rng)
        c_path = call_raw("mcu_depthwise_conv2d_s8_path", p, bias, ISAS.index(isa))
        c_size = call_raw("mcu_depthwise_conv2d_s8_get_buffer_size", p, bias, ISAS.index(isa))
        assert twin.path(p, bias, isa) == PATHS[c_path], (isa, p, bias)
        assert twin.buffer_size(p, bias, isa) == c_size, (isa, p, bias)
        seen.add(PATHS[c_path])
    assert seen == ({"generic", isa} if isa != "c" else {"generic"}), seen



def test_mve_ring_scratch_equals_c() -> None:
    """The MVE path's ring (3x3, dilation 1, at least 8 channels, narrow outputs): the twin's
    scratch equals the C's across the edges of its width limit, and a row band needs no more."""
    rng = np.random.default_rng(31)
    ring = plain = 0
    for w in range(1, 40):
        for sw in (1, 2, 3):
            c = int(rng.choice([8, 12, 16, 64, 120, 128, 136]))
            pads = [int(v) for v in rng.integers(0, 3, 4)]
            mult, shift = realistic_multipliers(rng, c, 9)
            h = int(rng.integers(1, 9))
            p = DepthwiseConvParams(
                input=Dims(1, h, w, c), filter=Dims(1, 3, 3, c),
                output=Dims(1, conv_out_size(h, 3, 1, 1, pads[0], pads[1]),
                            conv_out_size(w, 3, sw, 1, pads[2], pads[3]), c),
                depth_multiplier=1, stride_h=1, stride_w=sw, dilation_h=1, dilation_w=1,
                pad_top=pads[0], pad_left=pads[2], q=QuantIO(int(rng.integers(-127, 129)), 0, -128, 127),
                multiplier=mult.astype(np.int32), shift=shift.astype(np.int32))
            size = call_raw("mcu_depthwise_conv2d_s8_get_buffer_size", p, None, ISAS.index("mve"))
            assert twin.buffer_size(p, None, "mve") == size, p
            assert twin.buffer_size(twin.band(p, 0, 1)[0], None, "mve") <= size
            ring += size > MVE_GROUP_3X3_BYTES
            plain += size == MVE_GROUP_3X3_BYTES
    assert ring > 20 and plain > 20, (ring, plain)
