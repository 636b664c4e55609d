"""cmsis_problem() (emitter/kernels/mcu_transpose_conv_s8.py) against the user's CMSIS-NN: over a sweep
of transposed-convolution geometries (kernels 1..5, strides 1..3, pads 0..3, output_padding, C_in on
both sides of the reverse-conv threshold), every geometry it accepts runs bit-exactly in
arm_transpose_conv_wrapper_s8 (host build, CMSIS-NN's C path, both scratch buffers sized by
CMSIS-NN's own functions), and the geometries it refuses include ones CMSIS-NN gets wrong."""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from emitter.backends.cmsis_nn import sources
from emitter.kernels.common import Dims, QuantIO
from emitter.kernels.mcu_transpose_conv_s8 import TransposeConvParams, cmsis_problem, mcu_transpose_conv_s8
from emitter.quant import ROUND_TFLITE
from tests.harness.ckernels import build_lib, realistic_multipliers
from tests.harness.cmsis import CMSIS_NN

CMSIS = CMSIS_NN
pytestmark = pytest.mark.skipif(CMSIS is None, reason="CMSIS_NN_PATH is not set")


class NnDims(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int32), ("h", ctypes.c_int32), ("w", ctypes.c_int32), ("c", ctypes.c_int32)]


class Tile(ctypes.Structure):
    _fields_ = [("w", ctypes.c_int32), ("h", ctypes.c_int32)]


class Activation(ctypes.Structure):
    _fields_ = [("min", ctypes.c_int32), ("max", ctypes.c_int32)]


class TConvParams(ctypes.Structure):
    _fields_ = [("input_offset", ctypes.c_int32), ("output_offset", ctypes.c_int32), ("stride", Tile),
                ("padding", Tile), ("padding_offsets", Tile), ("dilation", Tile), ("activation", Activation)]


class Context(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("size", ctypes.c_int32)]


class Quant(ctypes.Structure):
    _fields_ = [("multiplier", ctypes.POINTER(ctypes.c_int32)), ("shift", ctypes.POINTER(ctypes.c_int32))]


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    assert CMSIS is not None
    flags = ("-std=c99", "-O1", "-fPIC", "-shared", "-w", f"-I{Path(CMSIS) / 'Include'}")
    return build_lib(tuple(str(p) for p in sources(Path(CMSIS))), "cmsis_nn_host", flags)


def ptr(a: np.ndarray, ctype: type) -> ctypes._Pointer:  # type: ignore[type-arg]
    return a.ctypes.data_as(ctypes.POINTER(ctype))


def run_cmsis(lib: ctypes.CDLL, p: TransposeConvParams, x: np.ndarray, f: np.ndarray, b: np.ndarray) -> np.ndarray:
    i, fl, o = p.input, p.filter, p.output
    params = TConvParams(p.q.input_offset, p.q.output_offset, Tile(p.stride_w, p.stride_h), Tile(p.pad_left, p.pad_top),
                         Tile(0, 0), Tile(1, 1), Activation(p.q.act_min, p.q.act_max))
    dims = [NnDims(i.n, i.h, i.w, i.c), NnDims(fl.n, fl.h, fl.w, fl.c), NnDims(1, 1, 1, o.c),
            NnDims(o.n, o.h, o.w, o.c)]
    size = lib.arm_transpose_conv_s8_get_buffer_size(ctypes.byref(params), ctypes.byref(dims[0]),
                                                     ctypes.byref(dims[1]), ctypes.byref(dims[3]))
    rsize = lib.arm_transpose_conv_s8_get_reverse_conv_buffer_size(ctypes.byref(params), ctypes.byref(dims[0]),
                                                                   ctypes.byref(dims[1]))
    buf, rbuf = np.zeros(max(size, 4) // 4 + 4, np.int32), np.zeros(max(rsize, 4) // 4 + 4, np.int32)
    ctx, rctx = Context(buf.ctypes.data, size), Context(rbuf.ctypes.data, rsize)
    mult, shift = np.ascontiguousarray(p.multiplier, np.int32), np.ascontiguousarray(p.shift, np.int32)
    quant = Quant(ptr(mult, ctypes.c_int32), ptr(shift, ctypes.c_int32))
    # room past the output: the direct path writes `stride` rows per input row whatever output.h says
    out = np.full((o.n, o.h + p.stride_h * i.h + fl.h, o.w, o.c), 0x5A, np.int8)
    status = lib.arm_transpose_conv_wrapper_s8(
        ctypes.byref(ctx), ctypes.byref(rctx), ctypes.byref(params), ctypes.byref(quant), ctypes.byref(dims[0]),
        ptr(x, ctypes.c_int8), ctypes.byref(dims[1]), ptr(f, ctypes.c_int8), ctypes.byref(dims[2]),
        ptr(b, ctypes.c_int32), ctypes.byref(dims[3]), ptr(out, ctypes.c_int8))
    assert status == 0
    return out[:, :o.h]


def geometries():
    for c_in in (4, 20):
        for size in (3, 4):
            for k in range(1, 6):
                for s in range(1, 4):
                    for pad in range(4):
                        for out_pad in range(s):
                            yield c_in, size, k, s, pad, out_pad


def test_accepted_geometries_are_bit_exact_in_cmsis_nn(lib):
    accepted = wrong_refused = 0
    for n, (c_in, size, k, s, pad, out_pad) in enumerate(geometries()):
        oh = s * (size - 1) + k + out_pad - 2 * pad
        ow = s * size + k + out_pad - 2 * pad
        if min(oh, ow) < 1:
            continue
        rng = np.random.default_rng(n)
        c_out = 3
        mult, shift = realistic_multipliers(rng, c_out, k * k * c_in)
        q = QuantIO(int(rng.integers(-127, 129)), int(rng.integers(-128, 128)), -128, 127, ROUND_TFLITE)
        p = TransposeConvParams(Dims(1, size, size + 1, c_in), Dims(c_out, k, k, c_in), Dims(1, oh, ow, c_out),
                                s, s, 1, 1, pad, pad, q, mult, shift)
        x = rng.integers(-128, 128, (1, size, size + 1, c_in), dtype=np.int8)
        f = rng.integers(-127, 128, (c_out, k, k, c_in), dtype=np.int8)
        b = rng.integers(-3000, 3000, c_out).astype(np.int32)
        exact = np.array_equal(run_cmsis(lib, p, x, f, b), mcu_transpose_conv_s8(p, x, f, b))
        if cmsis_problem(p, "c") is None:
            accepted += 1
            assert exact, f"accepted but not bit-exact: C_in {c_in}, {size}x{size + 1}, k{k} s{s} pad{pad} op{out_pad}"
        elif not exact:
            wrong_refused += 1
    print(f"accepted and exact: {accepted}; refused and wrong in CMSIS-NN: {wrong_refused}")
    assert accepted > 150 and wrong_refused > 50, (accepted, wrong_refused)
