"""Compile, emit and run zoo variants: shared by tests/test_zoo.py and scripts/zoo_report.py."""
from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

from emitter.compiler import Compiled, compile_model
from emitter.errors import McugenError, UnsupportedError
from emitter.verify.run import quantize as quantize_float
from tests.harness.bundles import emit
from tests.models.zoo.variants import Variant

QDQ_OPS = {"QuantizeLinear", "DequantizeLinear"}


@dataclass
class Outcome:
    """One variant after compile_model: a Compiled (and its emitted bundle) or the error."""
    variant: Variant
    path: Path
    compiled: Compiled | None = None
    error: McugenError | None = None
    bundle: Path | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.compiled is not None

    @property
    def report(self) -> dict:
        assert self.bundle is not None
        return json.loads((self.bundle / "report.json").read_text())

    def failing_ops(self) -> list[str]:
        """The op types an UnsupportedError names (its root causes), sorted."""
        if not isinstance(self.error, UnsupportedError):
            return []
        return sorted({op for _, op, _, _ in self.error.problems})


def quant_ops(path: Path) -> list[str]:
    """Op types of the quantized model, without QuantizeLinear/DequantizeLinear."""
    return sorted({n.op_type for n in onnx.load(path).graph.node} - QDQ_OPS)


def compile_variants(variants: Iterable[Variant], folder: Path, emit_bundles: bool = True
                     ) -> dict[str, Outcome]:
    """Quantize (cached in folder), compile and emit every variant; errors are recorded."""
    folder = Path(folder)
    out: dict[str, Outcome] = {}
    for v in variants:
        t0 = time.perf_counter()
        path = v.build(folder / "models")
        t1 = time.perf_counter()
        o = Outcome(v, path)
        try:
            o.compiled = compile_model(path, name=v.c_name)
        except McugenError as exc:
            o.error = exc
        t2 = time.perf_counter()
        if o.compiled is not None and emit_bundles:
            o.bundle = emit(o.compiled, folder / "bundles" / v.c_name)
        o.seconds = {"quantize": t1 - t0, "compile": t2 - t1, "emit": time.perf_counter() - t2}
        out[v.id] = o
    return out


def int8_samples(c: Compiled, v: Variant, n: int) -> list[list[np.ndarray]]:
    """n seeded evaluation inputs of the variant's model, quantized with the graph input's
    scale and zero point (one list of int8 arrays per sample)."""
    xs = v.model.eval_inputs(n)
    (name,) = c.graph.inputs
    t = c.graph.t(name)
    assert t.quant is not None
    return [[quantize_float(x.astype(np.float64), t.quant.s, t.quant.zp).reshape(t.shape)]
            for x in xs]


def top1_agreement(a: list[list[np.ndarray]], b: list[list[np.ndarray]]) -> float:
    """Share of samples whose first output has the same argmax in a and b."""
    same = [int(np.argmax(x[0])) == int(np.argmax(y[0])) for x, y in zip(a, b, strict=True)]
    return float(np.mean(same)) if same else float("nan")
