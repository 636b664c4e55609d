"""Boards: compiler flags, budgets and the QEMU machine of every target, read from boards/*.toml.

Two kinds of board file, one per board, named `<name>.toml`:
  * a generic core (`core` equals its own `name`, e.g. cortex-m4) states everything: `arch`
    ("arm", the default, or "riscv": which cross toolchain and QEMU binary build and run it), `cflags`,
    `has_dsp`/`has_mve`/`has_fpu`, `ram_bytes`/`flash_bytes` (the QEMU machine's memory) and a
    `[qemu]` table (`machine`, extra `args`, test-image `code`/`data` regions as [origin, length]);
  * a named board (`core = "cortex-m4"`) states its real `ram_bytes`/`flash_bytes` and may override
    any other key (e.g. `cflags` for an M7 with a single-precision FPU); the rest, including the QEMU
    machine its test images run on, comes from its core's file.
Memory regions: arrays of tables `[[ram]]` and `[[flash]]`, each
`{ name = "dtcm", size = 131072, rank = 0, origin = 0x20000000 }` (rank 0 = fastest; `origin`
optional; names are lower-case C identifiers, unique within the array). They become
`Board.ram_pools` / `Board.flash_regions`, ordered by rank. A board without `[[ram]]` has one implicit
pool `Pool("ram", ram_bytes, 0)` (and without `[[flash]]` one `Pool("flash", flash_bytes, 0)`); a named
board inherits its core's regions unless it states its own.
Unknown keys, wrong types, duplicate names/aliases and a `core` that is not a generic board are
errors naming the file. Names and aliases are matched case-insensitively.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef,import-not-found]

from emitter.errors import UsageError
from emitter.resources import data_dir

# key -> expected Python type(s); `aliases`/`cflags` are lists of str, checked separately.
_TOP_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str, "aliases": list, "description": str, "core": str, "cflags": list,
    "has_dsp": bool, "has_mve": bool, "has_fpu": bool, "ram_bytes": int, "flash_bytes": int,
    "qemu": dict, "arch": str, "ram": list, "flash": list,
}
# key -> value when neither the board nor its core states it
_OPTIONAL_KEYS: dict[str, Any] = {"arch": "arm", "ram": [], "flash": []}
ARCHES = ("arm", "riscv")
_QEMU_KEYS: dict[str, type] = {"machine": str, "args": list, "code": list, "data": list}
_REGION_KEYS: dict[str, type] = {"name": str, "size": int, "rank": int, "origin": int}
POOL_NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")  # a lower-case C identifier


@dataclass(frozen=True)
class Pool:
    """One memory region: a RAM pool the activation buffers may be placed in, or a flash region.

    `rank` 0 is the fastest; `origin` is its base address where the board file states it.
    """

    name: str
    size: int
    rank: int
    origin: int | None = None


@dataclass(frozen=True)
class Board:
    """One target board. Sizes in bytes; `code_*`/`data_*` are where QEMU test images are linked."""

    name: str
    aliases: tuple[str, ...]
    description: str
    core: str
    cflags: tuple[str, ...]
    has_dsp: bool
    has_mve: bool
    has_fpu: bool
    ram_bytes: int
    flash_bytes: int
    qemu_machine: str
    qemu_args: tuple[str, ...]
    code_origin: int
    code_length: int
    data_origin: int
    data_length: int
    arch: str = "arm"  # "arm" (Cortex-M: arm-none-eabi, qemu-system-arm) or "riscv" (rv32)
    # RAM pools and flash regions, fastest (lowest rank) first; never empty (see the module docstring)
    ram_pools: tuple[Pool, ...] = ()
    flash_regions: tuple[Pool, ...] = ()

    @property
    def isa(self) -> str:
        """The code path the kernels (mcugen's and CMSIS-NN's) take on this core: "mve", "dsp" or "c"."""
        return "mve" if self.has_mve else ("dsp" if self.has_dsp else "c")

    @property
    def is_generic(self) -> bool:
        """True for a generic core (cortex-m4), False for a named board (nucleo-l4r5zi)."""
        return self.name == self.core


def load_board(name_or_alias: str) -> Board:
    """The board called `name_or_alias` (case-insensitive); UsageError listing valid names if none."""
    boards = _load_all(data_dir("boards"))
    key = name_or_alias.strip().lower()
    for board in boards:
        if key == board.name.lower() or key in (alias.lower() for alias in board.aliases):
            return board
    raise UsageError(
        f"unknown board '{name_or_alias}'. Valid boards: {', '.join(b.name for b in boards)} "
        f"(aliases: {', '.join(a for b in boards for a in b.aliases)})")


def list_boards() -> list[Board]:
    """Every board: generic cores first (cortex-m0plus ... cortex-m55), then named boards by name."""
    return list(_load_all(data_dir("boards")))


def format_board_table() -> str:
    """A plain-text table: name, core, RAM, flash, QEMU machine, description."""
    header = ("board", "core", "RAM", "flash", "QEMU machine", "description")
    rows = [header] + [
        (b.name, b.core, _human(b.ram_bytes), _human(b.flash_bytes), b.qemu_machine, b.description)
        for b in list_boards()]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
             for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _human(size: int) -> str:
    """4194304 -> '4 MiB', 655360 -> '640 KiB', 1000 -> '1000 B'."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


@functools.cache
def _load_all(folder: Path) -> tuple[Board, ...]:
    if not folder.is_dir():
        raise UsageError(f"board folder {folder} is missing: reinstall mcugen")
    raw: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in sorted(folder.glob("*.toml")):
        with path.open("rb") as handle:
            try:
                data = tomllib.load(handle)
            except tomllib.TOMLDecodeError as error:
                raise UsageError(f"{path}: not valid TOML: {error}") from None
        _check_keys(path, data)
        if data["name"] != path.stem:
            raise UsageError(f"{path}: name '{data['name']}' must match the file name '{path.stem}'")
        raw[path.stem] = (path, data)

    boards: list[Board] = []
    for path, data in raw.values():
        core = data["core"]
        base = raw.get(core)
        if base is None or base[1]["core"] != core:
            generic = sorted(n for n, (_, d) in raw.items() if d["core"] == n)
            raise UsageError(f"{path}: core '{core}' is not a generic core board; "
                             f"expected one of {', '.join(generic)}")
        boards.append(_build(path, {**base[1], **data}))
    boards.sort(key=lambda b: (not b.is_generic, _natural(b.name)))

    seen: dict[str, str] = {}
    for board in boards:
        for key in (board.name, *board.aliases):
            other = seen.setdefault(key.lower(), board.name)
            if other != board.name:
                raise UsageError(f"board name or alias '{key}' is used by both '{other}' and "
                                 f"'{board.name}' (boards/{board.name}.toml)")
    return tuple(boards)


def _natural(name: str) -> tuple[tuple[int, str], ...]:
    """Sort key putting cortex-m4 before cortex-m33."""
    return tuple((int(part), "") if part.isdigit() else (-1, part)
                 for part in re.split(r"(\d+)", name))


def _check_keys(path: Path, data: dict[str, Any]) -> None:
    for table, schema in ((data, _TOP_KEYS), (data.get("qemu", {}), _QEMU_KEYS)):
        for key, value in table.items():
            expected = schema.get(key)
            if expected is None:
                raise UsageError(f"{path}: unknown key '{key}'; known keys: {', '.join(schema)}")
            # bool is an int in Python: reject True where a size is expected.
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise UsageError(f"{path}: '{key}' must be {getattr(expected, '__name__', expected)}"
                                 f", found {value!r}")
    for key in ("name", "core"):
        if key not in data:
            raise UsageError(f"{path}: missing key '{key}'")


def _build(path: Path, data: dict[str, Any]) -> Board:
    data = {**_OPTIONAL_KEYS, **data}
    missing = [key for key in _TOP_KEYS if key not in data]
    missing += [f"qemu.{key}" for key in _QEMU_KEYS if key not in data.get("qemu", {})]
    if missing:
        raise UsageError(f"{path}: missing key(s) {', '.join(missing)} (in it or its core's file)")
    qemu = data["qemu"]
    for key in ("aliases", "cflags"):
        if not all(isinstance(item, str) for item in data[key]):
            raise UsageError(f"{path}: '{key}' must be a list of strings")
    if not all(isinstance(item, str) for item in qemu["args"]):
        raise UsageError(f"{path}: 'qemu.args' must be a list of strings")
    regions = []
    for key in ("code", "data"):
        region = qemu[key]
        if len(region) != 2 or not all(isinstance(v, int) and v >= 0 for v in region):
            raise UsageError(f"{path}: 'qemu.{key}' must be [origin, length], found {region!r}")
        regions += region
    if data["arch"] not in ARCHES:
        raise UsageError(f"{path}: 'arch' must be one of {', '.join(ARCHES)}, found {data['arch']!r}")
    for key in ("ram_bytes", "flash_bytes"):
        if data[key] <= 0:
            raise UsageError(f"{path}: '{key}' must be positive, found {data[key]}")
    ram_pools = _regions(path, "ram", data["ram"]) or (Pool("ram", data["ram_bytes"], 0),)
    flash_regions = _regions(path, "flash", data["flash"]) or (Pool("flash", data["flash_bytes"], 0),)
    return Board(
        name=data["name"], aliases=tuple(data["aliases"]), description=data["description"],
        core=data["core"], cflags=tuple(data["cflags"]), has_dsp=data["has_dsp"],
        has_mve=data["has_mve"], has_fpu=data["has_fpu"], ram_bytes=data["ram_bytes"],
        flash_bytes=data["flash_bytes"], qemu_machine=qemu["machine"],
        qemu_args=tuple(qemu["args"]), code_origin=regions[0], code_length=regions[1],
        data_origin=regions[2], data_length=regions[3], arch=data["arch"],
        ram_pools=ram_pools, flash_regions=flash_regions)


def _regions(path: Path, key: str, tables: list[Any]) -> tuple[Pool, ...]:
    """The `[[ram]]` or `[[flash]]` tables of one board file, checked, ordered by rank."""
    pools: list[Pool] = []
    for table in tables:
        if not isinstance(table, dict):
            raise UsageError(f"{path}: '{key}' must be an array of tables ([[{key}]]), found {table!r}")
        for name, value in table.items():
            expected = _REGION_KEYS.get(name)
            if expected is None:
                raise UsageError(f"{path}: [[{key}]]: unknown key '{name}'; known keys: "
                                 f"{', '.join(_REGION_KEYS)}")
            if not isinstance(value, expected) or isinstance(value, bool):
                raise UsageError(f"{path}: [[{key}]] '{name}' must be {expected.__name__}, found {value!r}")
        missing = [name for name in ("name", "size", "rank") if name not in table]
        if missing:
            raise UsageError(f"{path}: [[{key}]] {table!r} is missing {', '.join(missing)}")
        name = table["name"]
        if not POOL_NAME.match(name):
            raise UsageError(f"{path}: [[{key}]] name '{name}' must be a lower-case C identifier "
                             f"(letters a-z, digits, '_'; not starting with a digit)")
        if any(pool.name == name for pool in pools):
            raise UsageError(f"{path}: [[{key}]] name '{name}' is listed twice")
        if table["size"] <= 0 or table["rank"] < 0 or table.get("origin", 0) < 0:
            raise UsageError(f"{path}: [[{key}]] '{name}': size must be positive, rank and origin "
                             f"not negative, found {table!r}")
        pools.append(Pool(name, table["size"], table["rank"], table.get("origin")))
    return tuple(sorted(pools, key=lambda pool: pool.rank))


_SIZE = re.compile(r"(0x[0-9a-f]+|[0-9]+)([km]?)\Z", re.IGNORECASE)


def parse_pool_option(text: str) -> tuple[str, int]:
    """`--pool NAME=SIZE` text -> (name, bytes); SIZE is 32768, 32K, 32KiB's '32k', 1M or 0x8000.

    Raises ValueError with a sentence saying what is wrong (the CLI names the flag).
    """
    name, sep, size_text = text.partition("=")
    name, size_text = name.strip(), size_text.strip()
    if not sep or not POOL_NAME.match(name):
        raise ValueError(f"expected NAME=SIZE with NAME a lower-case C identifier, found {text!r}")
    match = _SIZE.match(size_text)
    if match is None:
        raise ValueError(f"size {size_text!r} of pool '{name}' is not a byte count "
                         "(32768, 32K, 1M or 0x8000)")
    number, unit = match.groups()
    size = int(number, 16 if number.lower().startswith("0x") else 10)
    size <<= {"": 0, "k": 10, "m": 20}[unit.lower()]
    if size <= 0:
        raise ValueError(f"size of pool '{name}' must be positive, found {size_text!r}")
    return name, size


def pools_with_overrides(pools_: tuple[Pool, ...], overrides: tuple[tuple[str, int], ...]) -> tuple[Pool, ...]:
    """RAM pools (a board's) with `--pool` overrides: a listed name gets the new size, a new name is
    added ranked after the others (in the order given). The last override of a name wins."""
    pools = list(pools_)
    for name, size in overrides:
        index = next((i for i, pool in enumerate(pools) if pool.name == name), None)
        if index is None:
            pools.append(Pool(name, size, max((pool.rank for pool in pools), default=-1) + 1))
        else:
            pools[index] = Pool(name, size, pools[index].rank, pools[index].origin)
    return tuple(sorted(pools, key=lambda pool: pool.rank))
