"""One way to shorten a layer name for the printed tables (the summary after generation, the
`--profile` table and the `mcugen debug` table): the head and the tail of the name are kept, the
middle becomes "...", at one width everywhere. report.json keeps the full names."""
from __future__ import annotations

NAME_WIDTH = 32


def short_name(name: str, width: int = NAME_WIDTH) -> str:
    """`name` if it fits in `width` characters, else its first third and last two thirds around
    "..." (the end of an exported name, e.g. "dense_1/BiasAdd", usually says most)."""
    if len(name) <= width:
        return name
    head = (width - 3) // 3
    return name[:head] + "..." + name[len(name) - (width - 3 - head):]
