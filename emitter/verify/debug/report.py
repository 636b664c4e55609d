"""The `mcugen debug` report: one row per kernel call, its differences from the golden model on
the host, in QEMU and against onnxruntime, and a verdict naming the first divergent layer."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from emitter.report.names import NAME_WIDTH, short_name
from emitter.verify.debug.layers import DebugLayer


@dataclass(frozen=True)
class Diff:
    differ: int
    elements: int
    max_diff: int
    missing: bool = False  # no layers.bin record (the run stopped before this layer)

    @property
    def exact(self) -> bool:
        return not self.missing and self.differ == 0

    def cell(self) -> str:
        if self.missing:
            return "missing"
        if self.differ == 0:
            return "bit-exact"
        share = 100.0 * self.differ / max(self.elements, 1)
        return f"{self.differ}/{self.elements} ({share:.1f}%) max {self.max_diff}"


@dataclass
class LayerRow:
    layer: DebugLayer
    host: Diff
    qemu: Diff | None = None
    ort: Diff | None = None
    ort_other: Diff | None = None  # the other numerics mode's golden vs onnxruntime


@dataclass
class DebugReport:
    board: str
    samples: int
    prefix: str = "model"
    rows: list[LayerRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    qemu: bool = False
    numerics: tuple[str, str] = ("tflite", "onnxruntime")  # (the bundle's mode, the other one)

    @property
    def first_divergent(self) -> LayerRow | None:
        for row in self.rows:
            if not row.host.exact or (row.qemu is not None and not row.qemu.exact):
                return row
        return None

    @property
    def ok(self) -> bool:
        return self.first_divergent is None

    def table(self, name_width: int = NAME_WIDTH) -> str:
        head = ["#", "layer", "op", "kernel", "host vs golden"]
        if self.qemu:
            head.append(f"QEMU {self.board} vs golden")
        head.append(f"golden vs onnxruntime ({self.numerics[0]}, this bundle)")
        other = any(r.ort_other is not None for r in self.rows)
        if other:
            head.append(f"{self.numerics[1]} golden vs onnxruntime")
        body = []
        for r in self.rows:
            lay = r.layer
            name = short_name(lay.name, name_width)
            cells = [str(lay.index), name, lay.op, lay.kernel, r.host.cell()]
            if self.qemu:
                cells.append(r.qemu.cell() if r.qemu is not None else "-")
            cells.append(r.ort.cell() if r.ort is not None else "-")
            if other:
                cells.append(r.ort_other.cell() if r.ort_other is not None else "-")
            body.append(cells)
        widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [head] + body]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def verdict(self) -> str:
        row = self.first_divergent
        where = "host" + (f" and QEMU {self.board}" if self.qemu else "")
        if row is None:
            which = f"all {len(self.rows)} layers are" if len(self.rows) != 1 else "the one layer is"
            return (f"{which} bit-exact with the golden model on {where} "
                    f"({self.samples} sample{'s' if self.samples != 1 else ''})")
        lay = row.layer
        parts = [f"host vs golden: {row.host.cell()}"]
        if row.qemu is not None:
            parts.append(f"QEMU {self.board} vs golden: {row.qemu.cell()}")
        output = "" if lay.tensor in lay.name else f", output '{lay.tensor}'"
        hint = (f"every earlier layer is bit-exact, so its inputs were right: see 'Layer {lay.index}' "
                f"in {self.prefix}.c, kernel {lay.kernel}, constants {self.prefix}_l{lay.index}_* in "
                f"{self.prefix}_weights.c")
        return "\n".join([
            f"first divergent layer: #{lay.index} '{lay.name}' ({lay.op}, kernel {lay.kernel}{output})",
            "  " + "; ".join(parts), "  " + hint])

    def text(self) -> str:
        out = [self.table(), ""]
        out += self.notes
        out.append(self.verdict())
        return "\n".join(out)


def diff(pairs: list[tuple[np.ndarray | None, np.ndarray]]) -> Diff:
    """(got, want) per sample; got None = no record."""
    d = n = mx = 0
    missing = False
    for got, want in pairs:
        if got is None:
            missing = True
            continue
        delta = np.abs(got.astype(np.int32) - want.astype(np.int32))
        n += delta.size
        d += int((delta > 0).sum())
        mx = max(mx, int(delta.max(initial=0)))
    return Diff(d, n, mx, missing)


