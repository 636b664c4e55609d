"""Host test harness for the portable C kernels: build them into one shared library, call them
through ctypes with the Python parameter dataclasses of emitter/kernel_params.py.

    lib = build_kernel_lib()                      # every mcu_runtime/kernels/*.c, UBSan on
    out = call_kernel("mcu_conv2d_s8", params, [x, w, bias], out_shape)   # asserts MCU_OK
    status = call_raw("mcu_lut_s8", 256, table, x, out)                   # plain arguments

The library is built once per process (per pytest session) in a temporary directory.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import glob
import os
import shutil
import subprocess
import tempfile
import typing
from pathlib import Path
from typing import Any

import numpy as np

from emitter.quant import multipliers

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "mcu_runtime" / "include"
KERNELS = ROOT / "mcu_runtime" / "kernels"

MCU_OK = 0
MCU_ERR_ARG = 1
MCU_ERR_SCRATCH = 2

CFLAGS = ("-std=c99", "-O1", "-fPIC", "-shared", "-Wall", "-Wextra", "-Wshadow", "-Wconversion",
          "-Wstrict-prototypes", "-Wmissing-prototypes", "-Werror",
          "-fsanitize=undefined", "-fno-sanitize-recover=undefined")


@functools.cache
def build_lib(sources: tuple[str, ...], name: str) -> ctypes.CDLL:
    """Compile `sources` with CFLAGS into lib<name>.so in a fresh temp dir and load it."""
    cc = os.environ.get("CC", "gcc")
    if shutil.which(cc) is None:
        raise RuntimeError(f"C compiler {cc!r} not found")
    out_dir = Path(tempfile.mkdtemp(prefix="mcugen-ckernels-"))
    lib_path = out_dir / f"lib{name}.so"
    cmd = [cc, *CFLAGS, f"-I{INCLUDE}", "-o", str(lib_path), *sources]
    res = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"C build failed ({' '.join(cmd)}):\n{res.stderr}")
    return ctypes.CDLL(str(lib_path))


def build_kernel_lib() -> ctypes.CDLL:
    """Every mcu_runtime/kernels/*.c in one shared library (cached per session)."""
    sources = tuple(sorted(glob.glob(str(KERNELS / "*.c"))))
    if not sources:
        raise RuntimeError(f"no kernel sources in {KERNELS}")
    return build_lib(sources, "mcu_kernels")


# ---------------------------------------------------------------------------------------------
# dataclass -> ctypes.Structure

_STRUCTS: dict[tuple[type, tuple[Any, ...]], type] = {}


def _layout(obj: Any) -> tuple[Any, ...]:
    """What a dataclass instance adds to its type to fix the C layout: the length of each tuple
    field and, recursively, the layout of each nested dataclass field."""
    out: list[tuple[str, Any]] = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, tuple):
            out.append((f.name, len(value)))
        elif dataclasses.is_dataclass(value):
            out.append((f.name, _layout(value)))
    return tuple(out)


def _struct_type(cls: Any, layout: tuple[Any, ...]) -> type:
    """The ctypes Structure mirroring dataclass `cls` (field order = dataclasses.fields order),
    cached per (type, layout).

    int -> c_int32; nested dataclass -> nested Structure; np.ndarray -> POINTER(c_int32);
    tuple -> c_int32 * len (lengths come from the instance, as the C arrays are fixed size).
    """
    key = (cls, layout)
    if key in _STRUCTS:
        return _STRUCTS[key]
    hints = typing.get_type_hints(cls)
    lengths = dict(layout)
    fields: list[tuple[str, Any]] = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        origin = typing.get_origin(hint)
        if hint is int:
            fields.append((f.name, ctypes.c_int32))
        elif hint is np.ndarray:
            fields.append((f.name, ctypes.POINTER(ctypes.c_int32)))
        elif origin is tuple or hint is tuple:
            fields.append((f.name, ctypes.c_int32 * lengths[f.name]))
        elif dataclasses.is_dataclass(hint):
            fields.append((f.name, _struct_type(hint, lengths.get(f.name, ()))))
        else:
            raise TypeError(f"{cls.__name__}.{f.name}: no ctypes mapping for {hint!r}")
    _STRUCTS[key] = type(f"c_{cls.__name__}", (ctypes.Structure,), {"_fields_": fields})
    return _STRUCTS[key]


def _int32(value: Any, where: str) -> int:
    v = int(value)
    if not -(1 << 31) <= v < (1 << 31):
        raise OverflowError(f"{where}={v} does not fit int32")
    return v


def _fill(obj: Any, keep: list[Any]) -> ctypes.Structure:
    cls = type(obj)
    struct = _struct_type(cls, _layout(obj))()
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        where = f"{cls.__name__}.{f.name}"
        if dataclasses.is_dataclass(value):
            setattr(struct, f.name, _fill(value, keep))
        elif isinstance(value, np.ndarray):
            if value.dtype != np.int32:
                raise TypeError(f"{where}: expected an int32 array, found {value.dtype}")
            arr = np.ascontiguousarray(value)
            keep.append(arr)
            setattr(struct, f.name, arr.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)))
        elif value is None:
            setattr(struct, f.name, None)  # NULL pointer
        elif isinstance(value, tuple):
            setattr(struct, f.name, type(getattr(struct, f.name))(
                *(_int32(v, where) for v in value)))
        else:
            setattr(struct, f.name, _int32(value, where))
    return struct


def to_c(params: Any) -> ctypes.Structure:
    """Any dataclass of emitter/kernel_params.py -> the matching ctypes Structure.

    Arrays the struct points to are kept alive on the returned object (`_keep`).
    """
    if not dataclasses.is_dataclass(params) or isinstance(params, type):
        raise TypeError(f"expected a kernel_params dataclass instance, found {type(params)!r}")
    keep: list[Any] = []
    struct = _fill(params, keep)
    struct._keep = keep  # type: ignore[attr-defined]
    return struct


# ---------------------------------------------------------------------------------------------
# calls

def _arg(value: Any, keep: list[Any]) -> Any:
    """One C argument: None -> NULL, ndarray -> pointer to its (contiguous) data, list/tuple of
    ndarrays -> array of pointers, dataclass -> pointer to its Structure, int -> int32_t."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value)
        keep.append(arr)
        return ctypes.c_void_p(arr.ctypes.data)
    if isinstance(value, (list, tuple)):
        ptrs = (ctypes.c_void_p * len(value))(*(_arg(v, keep) for v in value))
        keep.append(ptrs)
        return ptrs
    if dataclasses.is_dataclass(value):
        struct = to_c(value)
        keep.append(struct)
        return ctypes.byref(struct)
    if isinstance(value, (int, np.integer)):
        return ctypes.c_int32(_int32(value, "argument"))
    return value  # already a ctypes object


def call_raw(name: str, *args: Any) -> int:
    """lib.<name>(*args) with the conversions of _arg; returns the mcu_status_t as an int.

    An ndarray passed as an output must already be C-contiguous (it is written in place).
    """
    fn = getattr(build_kernel_lib(), name)
    fn.restype = ctypes.c_int
    keep: list[Any] = []
    for a in args:
        if isinstance(a, np.ndarray) and not a.flags.c_contiguous:
            raise ValueError(f"{name}: array arguments must be C-contiguous")
    status = fn(*(_arg(a, keep) for a in args))
    return int(status)


def call_status(name: str, params: Any, inputs: list[np.ndarray | None], out_shape: Any,
                out_dtype: Any = np.int8) -> tuple[int, np.ndarray]:
    """lib.<name>(&params, *inputs, output) -> (status, output). The output starts filled with a
    0x5A pattern so elements the kernel forgets to write show up in comparisons."""
    out = np.empty(out_shape, dtype=out_dtype)
    out.view(np.uint8)[...] = 0x5A
    status = call_raw(name, params, *inputs, out)
    return status, out


def call_kernel(name: str, params: Any, inputs: list[np.ndarray | None], out_shape: Any,
                out_dtype: Any = np.int8) -> np.ndarray:
    """lib.<name>(&params, *inputs, output); asserts MCU_OK and returns the output."""
    status, out = call_status(name, params, inputs, out_shape, out_dtype)
    assert status == MCU_OK, f"{name} returned status {status}, expected MCU_OK (0)"
    return out


# ---------------------------------------------------------------------------------------------
# case-building helpers shared by the kernel tests

def conv_out_size(size: int, k: int, stride: int, dilation: int, pad_before: int,
                  pad_after: int) -> int:
    """Output length of a convolution/pooling window along one axis (at least 1)."""
    return max(1, (size + pad_before + pad_after - dilation * (k - 1) - 1) // stride + 1)


def realistic_multipliers(rng: np.random.Generator, channels: int,
                          taps: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (multiplier, shift) from float scales as a quantizer would pick them:
    in_scale * w_scale[c] / out_scale, with out_scale sized to the accumulator spread of `taps`."""
    in_scale = rng.uniform(0.005, 0.05)
    w_scale = rng.uniform(0.002, 0.02, channels)
    out_scale = in_scale * float(np.mean(w_scale)) * 150.0 * np.sqrt(taps)
    return multipliers(in_scale * w_scale / out_scale)


def wide_multipliers(rng: np.random.Generator, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (multiplier, shift) spanning every shift from -31 to +5 (first and last channel
    pinned to the extremes)."""
    exps = rng.uniform(-32.0, 5.0, channels)
    exps[0] = -31.5
    if channels > 1:
        exps[-1] = 4.5
    return multipliers(2.0 ** exps)
