"""Which mcu_runtime/ files a bundle ships (render.py copies them; the kernel benchmarks and tests list
them the same way)."""
from __future__ import annotations

import functools
import hashlib
import re

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
    out = [f"include/{h}" for h in RUNTIME_HEADERS + (("mcu_nn_s16.h",) if s16_kernels(kernels) else ())
           + (("mcu_nn_s4.h",) if s4_kernels(kernels) else ())]
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


def s4_kernels(kernels: list[str]) -> bool:
    """Does the bundle call a 4-bit-weight kernel (mcu_runtime/include/mcu_nn_s4.h)?"""
    return any(k.endswith("_s4") for k in kernels)


# A function or object defined with external linkage at the start of a line of a runtime .c file:
# `mcu_status_t mcu_conv2d_s8(`, `const int8_t mcu_table[...] =`; never `static ...`.
_DEFINITION = re.compile(r"^(?!static\b|extern\b|typedef\b|return\b)[A-Za-z_][\w \t*]*?\b(mcu_\w+)\s*[(\[=]",
                         re.MULTILINE)


@functools.cache
def runtime_symbols() -> tuple[str, ...]:
    """The external symbols the runtime's .c files define (sorted; all of them, whatever a bundle
    ships, so that bundles of one variant have the same mcu_config.h): what a variant renames."""
    rt = data_dir("mcu_runtime")
    names: set[str] = set()
    for p in sorted(p for d in ("kernels", "support") for p in (rt / d).glob("*.c")):
        if not p.stem.endswith("_ref"):  # the tests' reference kernels, never shipped
            text = re.sub(r"/\*.*?\*/", "", p.read_text(), flags=re.DOTALL)
            names.update(m.group(1) for m in _DEFINITION.finditer(text) if not m.group(1).endswith("_t"))
    return tuple(sorted(names))


@functools.cache
def runtime_digest() -> str:
    """sha256 of mcu_runtime's sources (include/, support/, kernels/): the runtime's code."""
    rt = data_dir("mcu_runtime")
    h = hashlib.sha256()
    for p in sorted(p for d in ("include", "support", "kernels") for p in (rt / d).rglob("*") if p.is_file()):
        h.update(p.relative_to(rt).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def variant_tag(optimize: str, isa: str, cpu_flags: str) -> str:
    """The runtime variant of a bundle: `<optimize>_<isa>_<6 hex>`, the hex digits a hash of what
    else makes the kernels' code differ (the board's CPU flags, the runtime's sources). Equal tags,
    equal code: the linker may keep either copy; different tags, different symbols."""
    h = hashlib.sha256(f"{optimize}\0{isa}\0{cpu_flags}\0{runtime_digest()}".encode()).hexdigest()
    return f"{optimize}_{isa}_{h[:6]}"


def variant_config(text: bytes, tag: str, symbols: tuple[str, ...]) -> bytes:
    """The bundle's mcu_config.h with the variant: every runtime symbol renamed to <name>_<tag>
    (mcu_nn.h includes mcu_config.h first, so the kernels, their headers and the model's code all
    see the new names; the repository's copy, used by mcugen's own tests and tools, renames nothing)."""
    lines = [f"/* Runtime variant {tag}: every external symbol of this copy of mcu_runtime ends in _{tag},",
             " * derived from what makes the kernels' code differ (--optimize, the board's instruction set",
             " * and CPU flags, the runtime's sources). Bundles of one variant ship the same code, and a",
             " * firmware linking several keeps one copy; bundles of different variants link side by side,",
             " * each calling its own kernels. A name defined before (-Dmcu_x=...) keeps its definition. */",
             f"#define MCU_VARIANT \"{tag}\""]
    lines += [f"#ifndef {s}\n#define {s} {s}_{tag}\n#endif" for s in symbols]
    end = b"#endif /* MCU_CONFIG_H */"
    assert text.count(end) == 1
    return text.replace(end, ("\n".join(lines) + "\n\n").encode() + end)
