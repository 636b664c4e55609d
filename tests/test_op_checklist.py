"""README.md's "Adding an op" list, proved on the tree: every op module and every kernel twin has
the files that section names. An exception is listed below with its reason; a new op or kernel
without its files fails here, not in review."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from emitter import ops
from emitter.kernels import KERNELS, twin
from emitter.kernels.base import Kernel
from tests.models.ops import ALL_CASES

ROOT = Path(__file__).resolve().parent.parent
HEADERS = ("mcu_runtime/include/mcu_nn.h", "mcu_runtime/include/mcu_nn_s16.h", "mcu_runtime/include/mcu_nn_s4.h")

# Op modules no ONNX op lowers to: the passes make their IR ops (a case of the ops they fuse stands).
FUSED = {"conv_add": "conv + residual Add, fused by emitter/passes/fuse.py (tests/test_conv_add.py)"}

# Kernels without a params dataclass of their own (CTYPE): their C takes plain arguments.
NO_CTYPE = {
    "mcu_concat_s8": "mcu_concat_s8(num_inputs, inputs, chunk, outer, output): no struct",
    "mcu_lut_s8": "mcu_lut_s8(size, table, input, output): no struct",
}

# Kernels whose C == golden test is not in tests/kernels/ (file, reason).
TESTED_ELSEWHERE = {
    "mcu_conv2d_add_s8": ("tests/test_conv_add.py", "the fused conv + residual add, tested with its fusion pass"),
    **{k: ("tests/test_a16w8.py", "int16 activations: every int16 kernel through its int8 twin's Prepare")
       for k in ("mcu_add_s16", "mcu_avgpool_s16", "mcu_avgpool_requant_s16", "mcu_conv2d_s16",
                 "mcu_depthwise_conv2d_s16", "mcu_fully_connected_s16", "mcu_maxpool_s16", "mcu_mul_s16",
                 "mcu_requantize_s16", "mcu_requantize_s16_s8", "mcu_requantize_s8_s16", "mcu_transpose_s16")},
    **{k: ("tests/test_a16w8_lut.py", "int16 table kernels (TFLite's LOGISTIC/TANH/SOFTMAX int16)")
       for k in ("mcu_sigmoid_s16", "mcu_tanh_s16", "mcu_softmax_s16")},
    **{k: ("tests/test_int4_conv.py", "4-bit weights: C == golden over random shapes, every path in QEMU")
       for k in ("mcu_conv2d_s4", "mcu_depthwise_conv2d_s4", "mcu_transpose_conv_s4")},
    "mcu_fully_connected_s4": ("tests/test_int4.py",
                               "4-bit weights: C == golden over a shape sweep, every path in QEMU"),
}


def ctypes_of(k: str) -> set[str]:
    """The C structs a twin's params dataclasses name (defined in the twin or imported: common.py's
    PoolParams, an s16 kernel's int8 params)."""
    m = twin(k)
    assert m is not None
    return {v.CTYPE for v in vars(m).values() if isinstance(v, type) and hasattr(v, "CTYPE")}


def kernel_tests(k: str) -> list[Path]:
    """tests/kernels/test_<op>.py files that name the kernel (test_conv2d.py for mcu_conv2d_s8)."""
    return [p for p in sorted((ROOT / "tests" / "kernels").glob("test_*.py")) if re.search(rf"\b{k}\b", p.read_text())]


@pytest.mark.parametrize("name", ops.OP_MODULES)
def test_op_module(name: str) -> None:
    assert (ROOT / "emitter" / "ops" / f"{name}.py").is_file()
    m = importlib.import_module(f"emitter.ops.{name}")
    assert m.IR_OPS and all(ops.REGISTRY[op] is m for op in m.IR_OPS), f"{name}: its IR ops in the registry"
    assert callable(m.prepare)
    if name in FUSED:
        assert not m.ONNX_OPS and (ROOT / "tests" / "test_conv_add.py").is_file()
        return
    assert callable(m.lower)
    cases = {c.op_type for c in ALL_CASES}
    assert cases & set(m.ONNX_OPS), f"emitter/ops/{name}.py: no case of {m.ONNX_OPS} in tests/models/ops.py"


def test_every_op_module_registered() -> None:
    """Every module in emitter/ops/ with IR ops is in OP_MODULES (the helpers have none)."""
    on_disk = {p.stem for p in (ROOT / "emitter" / "ops").glob("*.py") if not p.stem.startswith("_")}
    with_ops = {n for n in on_disk if hasattr(importlib.import_module(f"emitter.ops.{n}"), "IR_OPS")}
    assert with_ops == set(ops.OP_MODULES)


@pytest.mark.parametrize("k", KERNELS)
def test_kernel_files(k: str) -> None:
    m = twin(k)
    assert m is not None and isinstance(m.KERNEL, Kernel) and m.KERNEL.name == k, f"{k}: KERNEL = Kernel({k!r}, ...)"
    assert callable(getattr(m, k, None)), f"emitter/kernels/{k}.py: its golden named as the C function"
    if k in NO_CTYPE:
        assert not ctypes_of(k), f"{k} is listed in NO_CTYPE but has a CTYPE now"
    else:
        assert ctypes_of(k), f"emitter/kernels/{k}.py: a params dataclass with CTYPE"
    assert (ROOT / "mcu_runtime" / "kernels" / f"{k}.c").is_file()
    headers = "".join((ROOT / h).read_text() for h in HEADERS)
    assert re.search(rf"^\S.*\b{k}\s*\(", headers, re.M), f"{k}: its prototype in mcu_nn.h, mcu_nn_s16.h or mcu_nn_s4.h"
    if k in TESTED_ELSEWHERE:
        path, _why = TESTED_ELSEWHERE[k]
        assert not kernel_tests(k), f"{k} has a tests/kernels/ test now: drop it from TESTED_ELSEWHERE"
        assert (ROOT / path).is_file()
    else:
        assert kernel_tests(k), f"{k}: a C == golden test in tests/kernels/"


def test_exceptions_are_kernels() -> None:
    assert set(FUSED) <= set(ops.OP_MODULES)
    assert set(NO_CTYPE) <= set(KERNELS) and set(TESTED_ELSEWHERE) <= set(KERNELS)
