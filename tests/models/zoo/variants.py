"""Quantization variants of the zoo, made at test time with onnxruntime quantize_static (no torch).

A variant = a float model of the zoo + the settings a user picked: QDQ or QOperator, per-channel
or per-tensor weights, int8 or uint8 activations, reduce_range on or off, uint8 weights
(onnxruntime makes them symmetric around 128 per channel, and asymmetric per tensor, whose zero
point mcugen folds, depthwise convolutions included), and whether the model is quantized as torch
exported it ("export": Constant nodes, shape subgraphs) or after constant folding ("folded": what onnxruntime's
quant_pre_process or onnxsim give; the default here).

The full cross product is 16 settings x 14 models (`FULL`); CI runs a covering subset
(`VARIANTS`): every model in QDQ and in QOperator with per-channel int8 (folded), every model that
has Constant nodes as exported, and all 16 settings plus per-channel uint8 weights on the
REPRESENTATIVE models. `ASYMMETRIC` variants (asymmetric uint8 weights, depthwise ones included)
run exactly; `REJECTED` (none left since issue 26 item 3b) would have to fail with a QuantError that
says how to re-quantize.
"""
from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from pathlib import Path

import onnx

from emitter.commands.quantize import fold_constants
from tests.models.ops import quantize
from tests.models.zoo.catalog import BY_NAME, CATALOG, ZooModel


@dataclass(frozen=True)
class Quant:
    fmt: str = "qdq"  # "qdq" | "qop"
    per_channel: bool = True
    act: str = "int8"  # activation type
    reduce_range: bool = False
    weight: str = "int8"
    prep: str = "folded"  # "folded" | "export"

    @property
    def tag(self) -> str:
        parts = [self.fmt, "pc" if self.per_channel else "pt", "s8" if self.act == "int8" else "u8"]
        if self.reduce_range:
            parts.append("rr")
        if self.weight != "int8":
            parts.append("w" + ("u8" if self.weight == "uint8" else self.weight))
        if self.prep != "folded":
            parts.append(self.prep)
        return "-".join(parts)

    def describe(self) -> str:
        return (f"{'QDQ' if self.fmt == 'qdq' else 'QOperator'}, "
                f"{'per-channel' if self.per_channel else 'per-tensor'} {self.weight} weights, "
                f"{self.act} activations, reduce_range={'on' if self.reduce_range else 'off'}"
                + ("" if self.prep == "folded" else ", as exported (no constant folding)"))


@dataclass(frozen=True)
class Variant:
    model: ZooModel
    quant: Quant

    @property
    def id(self) -> str:
        return f"{self.model.name}-{self.quant.tag}"

    @property
    def c_name(self) -> str:
        return "z_" + self.id.replace("-", "_")

    def build(self, folder: Path) -> Path:
        """Quantize the float model into folder/<id>.onnx (cached: built once per folder)."""
        out = Path(folder) / f"{self.id}.onnx"
        if out.is_file():
            return out
        q = self.quant
        model = onnx.load(self.model.path)
        if q.prep == "folded":
            model = fold_constants(model)
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # quantize_static's "consider pre-processing" hints
        try:
            quantize(model, self.model.calib_feeds(), fmt=q.fmt, per_channel=q.per_channel,
                     activation_type=q.act, weight_type=q.weight, reduce_range=q.reduce_range,
                     out_path=out)
        finally:
            root.setLevel(level)
        return out


DEFAULT = Quant()
ALL_QUANTS = tuple(Quant(fmt, pc, act, rr) for fmt, pc, act, rr in itertools.product(
    ("qdq", "qop"), (True, False), ("int8", "uint8"), (False, True)))
REPRESENTATIVE = ("mbv2_blocks", "mlp_autoencoder", "se_sigmoid")


def has_constant_nodes(m: ZooModel) -> bool:
    return any(n.op_type == "Constant" for n in onnx.load(m.path).graph.node)


def _covering() -> tuple[Variant, ...]:
    out: list[Variant] = []
    for m in CATALOG:
        out.append(Variant(m, DEFAULT))
        out.append(Variant(m, Quant(fmt="qop")))
        # As exported (Constant nodes kept). Not the Resize models: there onnxruntime's quantizer
        # also quantizes the float `scales` constant, and the result (1.0 -> 0.94...) breaks the
        # model for onnxruntime itself ("Input channels C: 15 ... kernel channels: 16").
        if has_constant_nodes(m) and not m.name.startswith("resize"):
            out.append(Variant(m, Quant(prep="export")))
    for name in REPRESENTATIVE:
        out += [Variant(BY_NAME[name], q) for q in ALL_QUANTS]
        out.append(Variant(BY_NAME[name], Quant(act="uint8", weight="uint8")))  # symmetric u8
    seen: dict[str, Variant] = {}
    for v in out:
        seen.setdefault(v.id, v)
    return tuple(seen.values())


VARIANTS: tuple[Variant, ...] = _covering()
FULL: tuple[Variant, ...] = tuple(Variant(m, q) for m in CATALOG for q in ALL_QUANTS)
# onnxruntime only pairs uint8 weights with uint8 activations (its "U8U8" format). Per-tensor
# uint8 weights are asymmetric (zero point from min/max): mcugen folds the zero point for Conv,
# Gemm and MatMul, and depthwise convolutions over repeated input columns (emitter/ops/
# asym_weights.py, ASYMMETRIC). Per-channel uint8 weights come out symmetric (zero point 128 ->
# int8 zero point 0): mcugen accepts them.
REJECTED: tuple[Variant, ...] = ()
ASYMMETRIC: tuple[Variant, ...] = (
    Variant(BY_NAME["mbv2_blocks"], Quant(per_channel=False, act="uint8", weight="uint8")),
    Variant(BY_NAME["mbv2_blocks"], Quant(fmt="qop", per_channel=False, act="uint8",
                                          weight="uint8")),
    Variant(BY_NAME["mlp_autoencoder"], Quant(per_channel=False, act="uint8", weight="uint8")),
    Variant(BY_NAME["mlp_autoencoder"], Quant(fmt="qop", per_channel=False, act="uint8",
                                              weight="uint8")),
)
