"""Row bands: the C band functions (mcu_runtime/support/mcu_band.c) equal the Python twins'
band() over random geometries, and the ring keeps exactly the rows the replay says."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest

from emitter.kernels import mcu_add_s8, mcu_avgpool_requant_s8, mcu_conv2d_s8, mcu_depthwise_conv2d_s8
from emitter.kernels.common import Bcast, Dims, PoolParams, QuantIO
from emitter.resources import data_dir
from tests.harness.bundles import STRICT
from tests.harness.ckernels import to_c

RT = data_dir("mcu_runtime")


@pytest.fixture(scope="module")
def band_lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    lib = tmp_path_factory.mktemp("band") / "libband.so"
    cmd = ["gcc", "-O1", "-shared", "-fPIC", *STRICT, f"-I{RT / 'include'}", str(RT / "support" / "mcu_band.c"),
           "-o", str(lib)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    return ctypes.CDLL(str(lib))


def geometry(rng: np.random.Generator) -> dict[str, int]:
    k = int(rng.integers(1, 8))
    d = int(rng.integers(1, 3))
    s = int(rng.integers(1, 4))
    h = int(rng.integers(1, 20)) + (k - 1) * d
    pt = int(rng.integers(0, k))
    pb = int(rng.integers(0, k))
    out_h = (h + pt + pb - (k - 1) * d - 1) // s + 1
    return {"k": k, "d": d, "s": s, "h": h, "pt": pt, "out_h": max(out_h, 1)}


def conv_params(g: dict[str, int], depthwise: bool) -> object:
    i, o = Dims(1, g["h"], 3, 4), Dims(1, g["out_h"], 2, 4)
    q = QuantIO(0, 0, -128, 127)
    m, sh = np.ones(4, np.int32), np.zeros(4, np.int32)
    if depthwise:
        return mcu_depthwise_conv2d_s8.DepthwiseConvParams(i, Dims(1, g["k"], 2, 4), o, 1, g["s"], 1, g["d"], 1,
                                                           g["pt"], 0, q, m, sh)
    return mcu_conv2d_s8.ConvParams(i, Dims(4, g["k"], 2, 4), o, g["s"], 1, g["d"], 1, g["pt"], 0, q, m, sh)


def c_band(lib: ctypes.CDLL, fn: str, params: object, o0: int, o1: int, extra: tuple[int, ...] = ()
           ) -> tuple[int, dict[str, int], tuple[int, int]]:
    src = to_c(params)
    dst = to_c(params)  # the band holds a copy of the layer's params (mcu_band.h), reused band after band:
    rows = (ctypes.c_int32 * 2)()  # the band before this one left its fields in it
    getattr(lib, fn)(ctypes.byref(src), *extra, max(0, o1 - 1), o1, ctypes.byref(dst), rows)
    status = getattr(lib, fn)(ctypes.byref(src), *extra, o0, o1, ctypes.byref(dst), rows)
    return status, dst, (rows[0], rows[1])


@pytest.mark.parametrize("seed", range(4))
def test_window_bands_match_twins(band_lib: ctypes.CDLL, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(150):
        g = geometry(rng)
        o0 = int(rng.integers(0, g["out_h"]))
        o1 = int(rng.integers(o0 + 1, g["out_h"] + 1))
        for twin, depthwise in ((mcu_conv2d_s8, False), (mcu_depthwise_conv2d_s8, True)):
            p = conv_params(g, depthwise)
            status, dst, rows = c_band(band_lib, twin.BAND_C, p, o0, o1)
            try:
                bp, lo, hi = twin.band(p, o0, o1)
            except ValueError:
                assert status != 0, (g, o0, o1)
                continue
            assert status == 0 and rows == (lo, hi), (g, o0, o1, rows, lo, hi)
            assert (dst.input.h, dst.output.h, dst.pad_top) == (bp.input.h, bp.output.h, bp.pad_top)
        pool = PoolParams(Dims(1, g["h"], 3, 4), Dims(1, g["out_h"], 2, 4), g["k"], 2, g["s"], 1, g["pt"], 0,
                          -128, 127)
        ap = mcu_avgpool_requant_s8.AvgPoolRequantParams(pool, 0, 0, 1 << 30, 0)
        status, dst, rows = c_band(band_lib, mcu_avgpool_requant_s8.BAND_C, ap, o0, o1)
        try:
            bp, lo, hi = mcu_avgpool_requant_s8.band(ap, o0, o1)
        except ValueError:
            assert status != 0
            continue
        assert status == 0 and rows == (lo, hi)
        assert (dst.pool.input.h, dst.pool.output.h, dst.pool.pad_top) == (bp.pool.input.h, bp.pool.output.h,
                                                                           bp.pool.pad_top)


def test_band_rows_cover_the_window_and_nothing_else() -> None:
    """Every output row's window lies inside its band's input rows (a dilated window reaching into
    the padding may take a row between its taps), and the kernel sees the same taps."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        g = geometry(rng)
        p = conv_params(g, False)
        for y in range(g["out_h"]):
            try:
                bp, lo, hi = mcu_conv2d_s8.band(p, y, y + 1)
            except ValueError:
                continue
            taps = [y * g["s"] - g["pt"] + t * g["d"] for t in range(g["k"])]
            inside = [t for t in taps if 0 <= t < g["h"]]
            assert inside and lo <= min(inside) and max(inside) < hi <= g["h"]
            assert lo == min(inside) or taps[0] < 0  # a dilated window over the top padding
            assert hi == max(inside) + 1 or taps[-1] >= g["h"]  # ... or the bottom padding
            seen = [-bp.pad_top + t * g["d"] for t in range(g["k"])]
            assert [t - lo for t in inside] == [t for t in seen if 0 <= t < bp.input.h]


def test_add_band(band_lib: ctypes.CDLL) -> None:
    p = mcu_add_s8.AddParams(60, Bcast(1, 60), Bcast(1, 60), 0, 0, 0, 20, 1 << 30, -1, 1 << 30, -1, 1 << 30, -1,
                             -128, 127)
    status, dst, rows = c_band(band_lib, "mcu_add_s8_band", p, 2, 4, (12,))
    bp, lo, hi = mcu_add_s8.band_rows(p, 12, 2, 4)
    assert status == 0 and rows == (lo, hi) == (2, 4) and dst.size == bp.size == 24 == dst.in1.period
    broadcast = mcu_add_s8.AddParams(60, Bcast(1, 60), Bcast(1, 12), 0, 0, 0, 20, 1 << 30, -1, 1 << 30, -1,
                                     1 << 30, -1, -128, 127)
    assert c_band(band_lib, "mcu_add_s8_band", broadcast, 0, 1, (12,))[0] != 0
    with pytest.raises(ValueError):
        mcu_add_s8.band_rows(broadcast, 12, 0, 1)


def test_ring_push_drops_only_passed_rows(band_lib: ctypes.CDLL, tmp_path: Path) -> None:
    """mcu_ring_push() in C against the replay's ring (emitter/plan/stream.simulate's rule)."""
    class Ring(ctypes.Structure):
        _fields_ = [("buf", ctypes.c_void_p), ("row_bytes", ctypes.c_int32), ("cap", ctypes.c_int32),
                    ("base", ctypes.c_int32), ("count", ctypes.c_int32)]

    band_lib.mcu_ring_push.restype = ctypes.c_void_p
    buf = np.zeros(4 * 3, np.int8)
    ring = Ring(buf.ctypes.data, 3, 4, 0, 0)
    rows = {}
    for r, keep in enumerate([0, 0, 0, 0, 2, 2, 3, 6, 7]):
        ptr = band_lib.mcu_ring_push(ctypes.byref(ring), keep)
        assert ptr is not None
        ctypes.memmove(ptr, bytes([r] * 3), 3)
        rows[r] = True
        held = [int(buf[k * 3]) for k in range(ring.count)]
        assert held == list(range(ring.base, ring.base + ring.count)), (r, keep, held)
    full = Ring(buf.ctypes.data, 3, 2, 5, 2)
    assert band_lib.mcu_ring_push(ctypes.byref(full), 5) is None  # nothing may be dropped: planning error
