"""Twin of mcu_runtime/kernels/mcu_fully_connected_s8.c: its code path and scratch size per
instruction set (mcu_fully_connected_s8_path() / _get_buffer_size(); compared with the C by
tests/kernels/test_conv2d_dispatch.py)."""
from __future__ import annotations

from typing import Any

import numpy as np


def path(p: Any, bias: np.ndarray | None, isa: str) -> str:
    """The one algorithm, its dot products in the instructions of `isa`."""
    return {"mve": "mve", "dsp": "dsp"}.get(isa, "generic")


def buffer_size(p: Any, bias: np.ndarray | None, isa: str) -> int:
    """No scratch on any instruction set."""
    return 0
