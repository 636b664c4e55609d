"""Python twins of the C kernels: emitter/kernels/mcu_<k>.py beside mcu_runtime/kernels/mcu_<k>.c."""
from __future__ import annotations

import re
from functools import cache

from emitter.resources import data_dir

ISAS = ("c", "dsp", "mve")  # MCU_ISA_C, MCU_ISA_DSP, MCU_ISA_MVE in mcu_nn.h


@cache
def c_defines(rel: str) -> dict[str, int]:
    """The integer `#define NAME value` lines of mcu_runtime/<rel>: tuning constants have their one
    definition in the C, and the twins read them from there."""
    text = (data_dir("mcu_runtime") / rel).read_text()
    return {m[1]: int(m[2]) for m in re.finditer(r"^#define\s+(\w+)\s+\(?(-?\d+)\)?\s*$", text, re.M)}
