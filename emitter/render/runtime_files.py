"""Which mcu_runtime/ files a bundle ships (render.py copies them; the kernel benchmarks and tests list
them the same way)."""
from __future__ import annotations

from emitter.kernels import kernel
from emitter.resources import data_dir

PATH_FILES = ("common", "generic", "dsp", "dsp1d", "mve", "mve_ring", "internal")  # <kernel>_<path>.c / .h
# The path files a core can run, by Board.isa ("any": a bundle for no board in particular ships all):
# the DSP paths on Armv7E-M/Armv8-M Mainline, and on Armv8.1-M the MVE paths too; `_common` (what a
# kernel's paths share) everywhere.
ISA_PATHS = {"c": frozenset(("common", "generic", "internal")),
             "dsp": frozenset(("common", "generic", "internal", "dsp", "dsp1d")),
             "mve": frozenset(PATH_FILES), "any": frozenset(PATH_FILES)}
RUNTIME_HEADERS = ("mcu_nn.h", "mcu_math.h", "mcu_requant.h", "mcu_kernel_util.h", "mcu_config.h")


def runtime_files(kernels: list[str], bands: bool = False, isa: str = "any") -> list[str]:
    """The mcu_runtime/ files (relative to mcu_runtime/) a bundle calling `kernels` ships.

    A kernel is `kernels/<kernel>.c` (its dispatcher, or the whole kernel) plus its path files
    `kernels/<kernel>_<path>.c` (`_common`, `_generic`, `_dsp`, `_dsp1d`, `_mve`, `_mve_ring`; each wholly
    inside its `#if`) and its private header `kernels/<kernel>_internal.h`; its `_ref.c` reference
    is for the tests only; `isa` (Board.isa, or "any") leaves out the path files that core cannot
    run (ISA_PATHS). `support/` (code shared by several kernels) and the public headers always ship, but
    support/mcu_band.* (row bands and rings) and mcu_sink.* (accumulating segment ends) only when
    some layer runs by rows (`bands`)."""
    rt = data_dir("mcu_runtime")
    out = [f"include/{h}" for h in RUNTIME_HEADERS + (("mcu_nn_s16.h",) if s16_kernels(kernels) else ())]
    out += sorted(p.relative_to(rt).as_posix() for p in (rt / "support").glob("*.[ch]")
                  if bands or p.stem not in ("mcu_band", "mcu_sink"))
    paths = ISA_PATHS[isa]
    deps = [d for k in kernels for d in kernel(k).runtime_deps]  # a fused kernel's parts
    for kern in dict.fromkeys([*kernels, *deps]):
        out.append(f"kernels/{kern}.c")
        out += sorted(p.relative_to(rt).as_posix() for p in (rt / "kernels").glob(f"{kern}_*.[ch]")
                      if p.stem[len(kern) + 1:] in paths)
    return out


def s16_kernels(kernels: list[str]) -> bool:
    """Does the bundle call an int16-activation kernel (mcu_runtime/include/mcu_nn_s16.h)?"""
    return any("_s16" in k for k in kernels)
