"""Host test harness for the portable C kernels: build them into one shared library, call them
through ctypes with the Python parameter dataclasses of emitter/kernels/.

    lib = build_kernel_lib()                      # every mcu_runtime/kernels/*.c, UBSan on
    out = call_kernel("mcu_conv2d_s8", params, [x, w, bias], out_shape)   # asserts MCU_OK
    status = call_raw("mcu_lut_s8", 256, table, x, out)                   # plain arguments

The library is built once per process (per pytest session) in a temporary directory, removed as
soon as the library is loaded (the loaded library stays mapped): nothing is left in /tmp.
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
import pytest

from emitter.boards import load_board
from emitter.quant import multipliers
from emitter.target import build_firmware, missing_tools, run_qemu

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "mcu_runtime" / "include"
KERNELS = ROOT / "mcu_runtime" / "kernels"
SUPPORT = ROOT / "mcu_runtime" / "support"

MCU_OK = 0
MCU_ERR_ARG = 1
MCU_ERR_SCRATCH = 2

CFLAGS = ("-std=c99", "-O1", "-fPIC", "-shared", "-Wall", "-Wextra", "-Wshadow", "-Wconversion",
          "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wvla", "-Werror",
          "-fsanitize=undefined", "-fno-sanitize-recover=undefined")


@functools.cache
def _lib_dir() -> Path:
    """One temp folder per test session for the built libraries: they stay on disk while the
    session runs (tests read them back, e.g. with objdump) and go when it ends."""
    holder = tempfile.TemporaryDirectory(prefix="mcugen-ckernels-")
    _HOLDERS.append(holder)  # removed at interpreter exit by its finalizer
    return Path(holder.name)


_HOLDERS: list[tempfile.TemporaryDirectory] = []  # type: ignore[type-arg]


@functools.cache
def build_lib(sources: tuple[str, ...], name: str,
              flags: tuple[str, ...] = CFLAGS) -> ctypes.CDLL:
    """Compile `sources` with `flags` (default CFLAGS; others must include -fPIC -shared) into
    lib<name>.so in the session's temp folder and load it."""
    cc = os.environ.get("CC", "gcc")
    if shutil.which(cc) is None:
        raise RuntimeError(f"C compiler {cc!r} not found")
    lib_path = _lib_dir() / f"lib{name}.so"
    cmd = [cc, *flags, f"-I{INCLUDE}", "-o", str(lib_path), *sources, "-lm"]  # sqrtf
    res = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"C build failed ({' '.join(cmd)}):\n{res.stderr}")
    return ctypes.CDLL(str(lib_path))


def build_kernel_lib() -> ctypes.CDLL:
    """Every mcu_runtime/kernels/*.c (path files and _ref.c references included) and
    mcu_runtime/support/*.c in one shared library (cached per session)."""
    sources = tuple(sorted(glob.glob(str(KERNELS / "*.c")) + glob.glob(str(SUPPORT / "*.c"))))
    if not sources:
        raise RuntimeError(f"no kernel sources in {KERNELS}")
    return build_lib(sources, "mcu_kernels")


# ---------------------------------------------------------------------------------------------
# dataclass -> ctypes.Structure

_STRUCTS: dict[tuple[type, tuple[Any, ...]], type] = {}


# element ctype of an ndarray field, by numpy dtype name
_POINTEE: dict[str, Any] = {"int32": ctypes.c_int32, "float32": ctypes.c_float}


def _layout(obj: Any) -> tuple[Any, ...]:
    """What a dataclass instance adds to its type to fix the C layout: the length of each tuple
    field, the dtype of each non-int32 ndarray field and, recursively, the layout of each nested
    dataclass field."""
    out: list[tuple[str, Any]] = []
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, tuple):
            out.append((f.name, len(value)))
        elif isinstance(value, np.ndarray) and value.dtype != np.int32:
            out.append((f.name, str(value.dtype)))
        elif dataclasses.is_dataclass(value):
            out.append((f.name, _layout(value)))
    return tuple(out)


def _struct_type(cls: Any, layout: tuple[Any, ...]) -> type:
    """The ctypes Structure mirroring dataclass `cls` (field order = dataclasses.fields order),
    cached per (type, layout).

    int -> c_int32; float -> c_float; nested dataclass -> nested Structure;
    np.ndarray (or np.ndarray | None) -> POINTER(c_int32), POINTER(c_float) for a float32 array;
    tuple -> c_int32 * len (lengths and array dtypes come from the instance, as the C arrays are
    fixed size).
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
        elif hint is float:
            fields.append((f.name, ctypes.c_float))
        elif hint is np.ndarray or hint == np.ndarray | None:
            pointee = _POINTEE.get(lengths.get(f.name, "int32"), ctypes.c_int32)
            fields.append((f.name, ctypes.POINTER(pointee)))
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
            if str(value.dtype) not in _POINTEE:
                raise TypeError(f"{where}: expected an int32 or float32 array, found {value.dtype}")
            arr = np.ascontiguousarray(value)
            keep.append(arr)
            setattr(struct, f.name,
                    arr.ctypes.data_as(ctypes.POINTER(_POINTEE[str(value.dtype)])))
        elif value is None:
            setattr(struct, f.name, None)  # NULL pointer
        elif isinstance(getattr(struct, f.name), float):  # a c_float field
            setattr(struct, f.name, float(np.float32(value)))  # exact: a float32 value
        elif isinstance(value, tuple):
            setattr(struct, f.name, type(getattr(struct, f.name))(
                *(_int32(v, where) for v in value)))
        else:
            setattr(struct, f.name, _int32(value, where))
    return struct


def to_c(params: Any) -> ctypes.Structure:
    """Any dataclass of emitter/kernels/ -> the matching ctypes Structure.

    Arrays the struct points to are kept alive on the returned object (`_keep`).
    """
    if not dataclasses.is_dataclass(params) or isinstance(params, type):
        raise TypeError(f"expected a params dataclass of emitter/kernels/, found {type(params)!r}")
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


class Context(ctypes.Structure):
    """mcu_context_t: the scratch of one kernel call."""
    _fields_ = [("buf", ctypes.c_void_p), ("size", ctypes.c_int32)]


def scratch_context(size: int) -> tuple[Context, np.ndarray]:
    """A context of `size` bytes (8-byte aligned) and the array that owns them (keep it alive)."""
    buf = np.zeros(max(size, 1) // 8 + 1, np.int64)
    return Context(buf.ctypes.data if size > 0 else None, size), buf


def call_raw(name: str, *args: Any, lib: ctypes.CDLL | None = None) -> int:
    """lib.<name>(*args) with the conversions of _arg; returns the mcu_status_t as an int.
    `lib` defaults to build_kernel_lib().

    An ndarray passed as an output must already be C-contiguous (it is written in place).
    """
    fn = getattr(build_kernel_lib() if lib is None else lib, name)
    fn.restype = ctypes.c_int
    keep: list[Any] = []
    for a in args:
        if isinstance(a, np.ndarray) and not a.flags.c_contiguous:
            raise ValueError(f"{name}: array arguments must be C-contiguous")
    status = fn(*(_arg(a, keep) for a in args))
    return int(status)


def call_status(name: str, params: Any, inputs: list[np.ndarray | None], out_shape: Any,
                out_dtype: Any = np.int8, *,
                lib: ctypes.CDLL | None = None) -> tuple[int, np.ndarray]:
    """lib.<name>(&params, *inputs, output) -> (status, output). The output starts filled with a
    0x5A pattern so elements the kernel forgets to write show up in comparisons."""
    out = np.empty(out_shape, dtype=out_dtype)
    out.view(np.uint8)[...] = 0x5A
    status = call_raw(name, params, *inputs, out, lib=lib)
    return status, out


def call_kernel(name: str, params: Any, inputs: list[np.ndarray | None], out_shape: Any,
                out_dtype: Any = np.int8, *, lib: ctypes.CDLL | None = None) -> np.ndarray:
    """lib.<name>(&params, *inputs, output); asserts MCU_OK and returns the output."""
    status, out = call_status(name, params, inputs, out_shape, out_dtype, lib=lib)
    assert status == MCU_OK, f"{name} returned status {status}, expected MCU_OK (0)"
    return out


# ---------------------------------------------------------------------------------------------
# Cortex-M: cross-compiling one kernel, running a hand-written bundle in QEMU

ARM_STRICT = ("-std=c99", "-Wall", "-Wextra", "-Wshadow", "-Wconversion", "-Wstrict-prototypes",
              "-Wmissing-prototypes", "-Wvla", "-Werror")
ARM_CPUS = {
    "cortex-m0plus": ("-mcpu=cortex-m0plus", "-mthumb", "-mfloat-abi=soft"),
    "cortex-m7": ("-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-d16"),
}


def cross_compile_kernel(name: str, cpu: str, out_dir: Path, opt: str = "-O2") -> str:
    """arm-none-eabi-gcc -c mcu_runtime/kernels/<name>.c for ARM_CPUS[cpu] with ARM_STRICT;
    returns `arm-none-eabi-objdump -dr` of the object (relocations name the calls).
    AssertionError quoting the compiler's output on any warning or error; pytest.skip when the
    toolchain is absent."""
    for tool in ("arm-none-eabi-gcc", "arm-none-eabi-objdump"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found (apt-get install gcc-arm-none-eabi)")
    obj = out_dir / f"{name}.{cpu}{opt}.o"
    cmd = ["arm-none-eabi-gcc", *ARM_CPUS[cpu], opt, *ARM_STRICT, f"-I{INCLUDE}", "-c",
           str(KERNELS / f"{name}.c"), "-o", str(obj)]
    res = subprocess.run(cmd, check=False, capture_output=True, text=True)
    assert res.returncode == 0 and not res.stderr, f"{' '.join(cmd)}:\n{res.stderr}"
    return subprocess.run(["arm-none-eabi-objdump", "-dr", str(obj)], check=True,
                          capture_output=True, text=True).stdout


def run_bundle_on_qemu(core: str, kernels: list[str], net_c: str, in_sizes: list[int],
                       out_sizes: list[int], data: bytes, tmp: Path, opt: str = "-O2") -> bytes:
    """Build a hand-written bundle for board `core` and run it on `data` in QEMU; returns
    output.bin.

    The bundle is `net_c` (which must define `int net_run_multi(const int8_t *const *inputs,
    int8_t *const *outputs)`) plus the public headers, mcu_runtime/support/ and, for each of
    `kernels`, mcu_runtime/kernels/<k>.c with its path files and private header, built at `opt`;
    the harness (mcu_runtime/harness/harness_main.c) streams samples of `in_sizes`
    bytes from data through it. pytest.skip with the reason when a tool is missing."""
    missing = missing_tools()
    if missing:
        pytest.skip("missing tools: " + "; ".join(missing))
    bundle, glue, run = tmp / "net", tmp / "glue", tmp / "run"
    for d in (bundle / "mcu_runtime" / "include", bundle / "mcu_runtime" / "kernels",
              bundle / "mcu_runtime" / "support", glue, run):
        d.mkdir(parents=True, exist_ok=True)
    for h in INCLUDE.glob("*.h"):
        shutil.copy(h, bundle / "mcu_runtime" / "include" / h.name)
    for s in SUPPORT.glob("*.[ch]"):
        shutil.copy(s, bundle / "mcu_runtime" / "support" / s.name)
    for k in kernels:
        for f in [KERNELS / f"{k}.c", *(KERNELS / f"{k}_{part}" for part in (
                "common.c", "generic.c", "dsp.c", "dsp1d.c", "mve.c", "mve_ring.c", "internal.h"))]:
            if f.is_file():
                shutil.copy(f, bundle / "mcu_runtime" / "kernels" / f.name)
    (bundle / "net.c").write_text(net_c)
    (glue / "model_glue.h").write_text(
        "#include <stdint.h>\n"
        "int net_run_multi(const int8_t *const *inputs, int8_t *const *outputs);\n"
        f"#define GLUE_NUM_INPUTS {len(in_sizes)}\n#define GLUE_NUM_OUTPUTS {len(out_sizes)}\n"
        f"#define GLUE_INPUT_BYTES {sum(in_sizes)}\n#define GLUE_OUTPUT_BYTES {sum(out_sizes)}\n"
        "static const unsigned long glue_input_sizes[GLUE_NUM_INPUTS] = "
        f"{{{', '.join(map(str, in_sizes))}}};\n"
        "static const unsigned long glue_output_sizes[GLUE_NUM_OUTPUTS] = "
        f"{{{', '.join(map(str, out_sizes))}}};\n"
        "static int glue_run(const int8_t *const *inputs, int8_t *const *outputs)\n"
        "{\n    return net_run_multi(inputs, outputs);\n}\n")
    board = load_board(core)
    firmware = build_firmware(bundle, glue, board, tmp / "build", opt, werror=True)
    (run / "input.bin").write_bytes(data)
    run_qemu(firmware.elf, board, run, count_instructions=False)
    return (run / "output.bin").read_bytes()


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
