"""Memory pools (issue 25): board `[[ram]]`/`[[flash]]` regions, `--pool`, placement by access
counts, one C array per pool."""
from __future__ import annotations

from pathlib import Path

import pytest

from emitter.boards import Pool, _load_all, load_board, parse_pool_option, pools_with_overrides
from emitter.errors import UsageError

# ---- boards --------------------------------------------------------------------------------------


def test_board_regions() -> None:
    m55 = load_board("cortex-m55")
    assert m55.ram_pools == (Pool("dtcm", 512 << 10, 0, 0x30000000), Pool("isram", 4 << 20, 1, 0x31000000))
    h7 = load_board("nucleo-h743zi2")
    assert h7.name == "stm32h743" and h7.core == "cortex-m7"
    assert [p.name for p in h7.ram_pools] == ["dtcm", "axisram", "sram123", "sram4"]
    assert sum(p.size for p in h7.ram_pools) == h7.ram_bytes
    assert h7.flash_regions == (Pool("flash", 2 << 20, 0, 0x08000000),)
    rt = load_board("imxrt1060")
    assert [(p.name, p.size >> 10, p.origin) for p in rt.ram_pools] == [
        ("dtcm", 128, 0x20000000), ("ocram", 256, 0x20200000), ("ocram2", 512, 0x20280000)]
    # no [[ram]]: one implicit pool of ram_bytes
    f411 = load_board("blackpill-f411")
    assert f411.ram_pools == (Pool("ram", 128 << 10, 0),)
    assert f411.flash_regions == (Pool("flash", 512 << 10, 0),)


def _write(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.toml").write_text(text)


_CORE = """name = "core-x"
aliases = []
description = "x"
core = "core-x"
cflags = []
has_dsp = false
has_mve = false
has_fpu = false
ram_bytes = 0x10000
flash_bytes = 0x10000
[qemu]
machine = "m"
args = []
code = [0, 0x10000]
data = [0x20000000, 0x10000]
"""


def test_named_board_inherits_or_states_regions(tmp_path: Path) -> None:
    _write(tmp_path, "core-x", _CORE + '[[ram]]\nname = "fast"\nsize = 1024\nrank = 0\n'
           '[[ram]]\nname = "slow"\nsize = 4096\nrank = 1\n')
    _write(tmp_path, "inherits", 'name = "inherits"\naliases = []\ndescription = "i"\ncore = "core-x"\n')
    _write(tmp_path, "own", 'name = "own"\naliases = []\ndescription = "o"\ncore = "core-x"\n'
           '[[ram]]\nname = "tcm"\nsize = 2048\nrank = 0\norigin = 0x1000\n')
    boards = {b.name: b for b in _load_all(tmp_path)}
    assert [p.name for p in boards["inherits"].ram_pools] == ["fast", "slow"]
    assert boards["own"].ram_pools == (Pool("tcm", 2048, 0, 0x1000),)


@pytest.mark.parametrize(("ram", "message"), [
    ('[[ram]]\nname = "a"\nsize = 1\nrank = 0\nspeed = 3\n', "unknown key 'speed'"),
    ('[[ram]]\nname = "a"\nsize = 1\nrank = 0\n[[ram]]\nname = "a"\nsize = 2\nrank = 1\n', "listed twice"),
    ('[[ram]]\nname = "DTCM"\nsize = 1\nrank = 0\n', "lower-case C identifier"),
    ('[[ram]]\nname = "9a"\nsize = 1\nrank = 0\n', "lower-case C identifier"),
    ('[[ram]]\nname = "a"\nsize = "1"\nrank = 0\n', "'size' must be int"),
    ('[[ram]]\nname = "a"\nsize = 0\nrank = 0\n', "size must be positive"),
    ('[[ram]]\nname = "a"\nrank = 0\n', "missing size"),
    ('ram = 3\n', "'ram' must be list"),
])
def test_region_errors_name_the_file(tmp_path: Path, ram: str, message: str) -> None:
    core = _CORE.replace("[qemu]", ram + "[qemu]") if ram.startswith("ram") else _CORE + ram
    _write(tmp_path, "core-x", core)
    with pytest.raises(UsageError, match=message) as error:
        _load_all(tmp_path)
    assert "core-x.toml" in str(error.value)


# ---- --pool --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("dtcm=32768", ("dtcm", 32768)), ("dtcm=32K", ("dtcm", 32768)), ("dtcm=32k", ("dtcm", 32768)),
    ("dtcm=0x8000", ("dtcm", 32768)), ("sram_2=1M", ("sram_2", 1 << 20)), (" a = 16 ", ("a", 16)),
])
def test_pool_option(text: str, expected: tuple[str, int]) -> None:
    assert parse_pool_option(text) == expected


@pytest.mark.parametrize("text", ["dtcm", "dtcm=", "=32K", "DTCM=1", "dtcm=32KB", "dtcm=-1", "dtcm=0",
                                  "dtcm=0x", "dtcm=1.5K"])
def test_pool_option_errors(text: str) -> None:
    with pytest.raises(ValueError):
        parse_pool_option(text)


def test_pool_overrides() -> None:
    m55 = load_board("cortex-m55")
    pools = pools_with_overrides(m55.ram_pools, (("dtcm", 32768), ("extra", 1024), ("dtcm", 65536)))
    assert pools == (Pool("dtcm", 65536, 0, 0x30000000), Pool("isram", 4 << 20, 1, 0x31000000),
                     Pool("extra", 1024, 2))
    assert pools_with_overrides(load_board("cortex-m4").ram_pools, (("ram", 100),)) == (Pool("ram", 100, 0),)
    assert pools_with_overrides((), (("a", 100), ("b", 200))) == (Pool("a", 100, 0), Pool("b", 200, 1))
