"""--optimize speed|size: what each mode changes in a bundle, in one place.

speed (the default): each kernel dispatcher takes its fastest path for the layer's shape (the
DSP/MVE specialisations), the bundle compiles at -O2 and CMSIS-NN at -Ofast.
size: the bundle's mcu_runtime/include/mcu_config.h defines MCU_OPTIMIZE_SIZE, under which every
dispatcher plans its generic path as on plain C (MCU_ISA_PLAN in mcu_nn.h; the shared dot products
keep the target's instructions), so the twins are asked with isa "c" and the scratch is planned
for that path; the bundle compiles at -Os, CMSIS-NN too, and the cmsis-nn backend calls CMSIS-NN
for every layer it supports (mcugen's kernels have no fast path left to prefer). docs/code_size.md
has the figures.
"""
from __future__ import annotations

OPTIMIZE = ("speed", "size")
OPT_FLAGS = {"speed": "-O2", "size": "-Os"}  # the bundle's compiler optimisation
CMSIS_OPT_FLAGS = {"speed": "-Ofast", "size": "-Os"}  # CMSIS-NN's, where the bundle's build compiles it
CONFIG = "mcu_runtime/include/mcu_config.h"  # the bundle's copy of mcu_runtime's build options
PLAN_ISA = "c"  # size: the instruction set every dispatcher plans its path for


def config_header(text: bytes, optimize: str, isa: str) -> bytes:
    """The bundle's mcu_config.h: the repository's copy, with MCU_OPTIMIZE_SIZE defined for size, and
    MCU_PLANNED_FOR_C where the plan is for the plain C paths (size, or a core without DSP/MVE:
    Board.isa "c"), which leaves out the code that runs a DSP/MVE core's plan on them."""
    defines = (b"#define MCU_OPTIMIZE_SIZE 1\n" if optimize == "size" else b"") + (
        b"#define MCU_PLANNED_FOR_C 1\n" if optimize == "size" or isa == PLAN_ISA else b"")
    if not defines:
        return text
    guard = b"#define MCU_CONFIG_H\n"
    return text.replace(guard, guard + b"\n" + defines, 1)
