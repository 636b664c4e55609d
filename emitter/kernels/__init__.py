"""Python twins of the C kernels: emitter/kernels/mcu_<k>.py beside mcu_runtime/kernels/mcu_<k>.c.

A twin holds what the C kernel does at run time, and nothing the op's Prepare computes:
  <Name>Params  the params dataclass, the single Python copy of its C struct (CTYPE names it;
                tests/test_kernel_structs.py checks every field against mcu_runtime/include/mcu_nn.h)
  mcu_<k>(...)  the bit-exact numpy golden, named as the C function
  to_cmsis(conv, p)   its CMSIS-NN call (emitter/backends/cmsis_nn.py dispatches here by kernel name)
Shared struct twins (Dims, QuantIO, Bcast, PoolParams) and golden helpers live in common.py.
"""
from __future__ import annotations

import importlib
from types import ModuleType

KERNELS = ("mcu_add_s8", "mcu_avgpool_s8", "mcu_avgpool_requant_s8", "mcu_concat_s8", "mcu_conv2d_s8",
           "mcu_depthwise_conv2d_s8", "mcu_eltwise_f32_s8", "mcu_fully_connected_s8",
           "mcu_layernorm_f32_s8", "mcu_lut_s8", "mcu_maxpool_s8", "mcu_minmax_s8", "mcu_mul_s8",
           "mcu_pad_s8", "mcu_requantize_s8", "mcu_resize_bilinear_s8", "mcu_resize_nearest_s8",
           "mcu_slice_s8", "mcu_softmax_s8", "mcu_transpose_s8")


def twin(kernel: str) -> ModuleType | None:
    """The twin module of a portable kernel (None for another name, e.g. a CMSIS-NN function)."""
    if kernel not in KERNELS:
        return None
    return importlib.import_module(f"emitter.kernels.{kernel}")
