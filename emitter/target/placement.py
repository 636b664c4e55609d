"""Memory pools in the QEMU test image: where each pool's arena is linked, and where it ended up.

A multi-pool bundle defines `<prefix>_arena_<pool>` in section `.bss.mcugen_<pool>`. The test image
links everything into the board's CODE and DATA regions (boards/<board>.toml [qemu]); on a generic
core whose `[[ram]]` regions describe its QEMU machine (cortex-m55: mps3-an547's DTCM and ISRAM), a
pool with an `origin` outside DATA gets its own MEMORY region at that origin and its section is
linked there (`linker_script`: cortex_m.ld with the regions and sections filled in). A pool whose
origin lies in DATA stays in DATA's `.bss`. A named board (stm32h743, imxrt1060) runs on its
generic core's QEMU machine, which does not model its RAMs: everything stays in DATA there.

`arena_ranges` reads the arrays' addresses and sizes back from the linked ELF (`nm -S`), for the
instruction-count plugin's per-range access counts.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from emitter.boards import Board, Pool
from emitter.errors import ToolchainError
from emitter.resources import data_dir
from emitter.target import toolchain


def pool_regions(board: Board) -> tuple[Pool, ...]:
    """The pools linked into their own MEMORY region at their origin (see the module docstring)."""
    if board.arch != "arm" or not board.is_generic:
        return ()
    data = range(board.data_origin, board.data_origin + board.data_length)
    code = range(board.code_origin, board.code_origin + board.code_length)
    return tuple(p for p in board.ram_pools
                 if p.origin is not None and p.origin not in data and p.origin not in code)


REGIONS_MARK = "    /* mcugen pool regions */\n"
SECTIONS_MARK = "    /* mcugen pool sections */\n"


def linker_script(board: Board) -> str | None:
    """mcu_runtime/target/cortex_m.ld with one MEMORY region and one NOLOAD output section (before
    .data, so it takes `.bss.mcugen_<pool>` before .bss's wildcard does) per pool of pool_regions;
    None when there is none (cortex_m.ld serves as it is). QEMU zeroes RAM at reset, which is all
    the start-up code's .bss clearing would do for these sections."""
    pools = pool_regions(board)
    if not pools:
        return None
    text = (data_dir("mcu_runtime") / "target" / "cortex_m.ld").read_text()
    if REGIONS_MARK not in text or SECTIONS_MARK not in text:
        raise ToolchainError("mcu_runtime/target/cortex_m.ld lost its 'mcugen pool' marker comments")
    regions = "".join(f"    POOL_{p.name} (rw) : ORIGIN = 0x{p.origin:x}, LENGTH = 0x{p.size:x}\n"
                      for p in pools)
    sections = "".join(f"    .mcugen_{p.name} (NOLOAD) : ALIGN(16)\n"
                       f"    {{\n        *(.bss.mcugen_{p.name} .bss.mcugen_{p.name}.*)\n    }} > POOL_{p.name}\n\n"
                       for p in pools)
    return text.replace(REGIONS_MARK, regions).replace(SECTIONS_MARK, sections)


def pool_of_section(board: Board, vma: int) -> Pool | None:
    """The pool of pool_regions holding address `vma`, if any."""
    for p in pool_regions(board):
        assert p.origin is not None
        if p.origin <= vma < p.origin + p.size:
            return p
    return None


def arena_ranges(elf: Path | str, board: Board, prefix: str) -> dict[str, tuple[int, int]]:
    """Pool name -> (address, bytes) of the bundle's arena arrays in the linked ELF: one entry
    "<pool>" per `<prefix>_arena_<pool>`, or the single `<prefix>_arena` under the fastest pool's
    name (a plan that fits the fastest pool keeps one arena). Empty when neither is defined (an
    arena supplied by the caller)."""
    result = subprocess.run([str(toolchain.find_tool(toolchain.cross_prefix(board.arch) + "nm")),
                             "-S", str(elf)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ToolchainError(f"nm -S {elf} failed: {result.stderr.strip()}")
    names = {p.name for p in board.ram_pools}
    pattern = re.compile(rf"^([0-9a-fA-F]+) ([0-9a-fA-F]+) [bBdD] {re.escape(prefix)}_arena(?:_(\w+))?$")
    ranges: dict[str, tuple[int, int]] = {}
    single: tuple[int, int] | None = None
    for line in result.stdout.splitlines():
        match = pattern.match(line.strip())
        if match is None:
            continue
        span = (int(match.group(1), 16), int(match.group(2), 16))
        if match.group(3) is None:
            single = span
        elif match.group(3) in names:
            ranges[match.group(3)] = span
    if not ranges and single is not None:
        ranges[_pool_at(board, single[0])] = single
    return ranges


def _pool_at(board: Board, address: int) -> str:
    """The name of the board's pool whose [origin, origin + size) holds `address`; else the fastest
    pool's (a board without origins). The single arena has no section: on cortex-m55 it is linked
    in DATA, the ISRAM, whatever pool the plan had in mind."""
    for p in board.ram_pools:
        if p.origin is not None and p.origin <= address < p.origin + p.size:
            return p.name
    return board.ram_pools[0].name if board.ram_pools else "ram"
