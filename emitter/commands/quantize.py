"""`mcugen quantize`: a float ONNX model -> the INT8 model mcugen runs best, plus an accuracy check.

    mcugen quantize model_fp32.onnx --calibration data.npz -o model_int8.onnx
                    [--weights int8|int4|auto] [--accuracy-budget 1.0]
                    [--labels labelled.npz] [--board cortex-m7] [--no-qemu] [--debug]

1. Constant folding (Constant nodes and shape arithmetic of torch's exporter become initializers,
   as onnxruntime's quant_pre_process or onnxsim would do).
2. onnxruntime quantize_static with MinMax calibration on data.npz: QDQ form, symmetric per-channel
   int8 weights, int8 activations, reduce_range off, every op type of the model quantized (so ops
   outside onnxruntime's default list, e.g. Tanh or HardSwish, get Q/DQ and no float island).
   data.npz holds one array per graph input name, or for a one-input model a single array named
   `inputs`, `images` or `x`; the first axis runs over samples.
3. mcugen compiles the result (the summary line says so, or the error says why not).
   --weights int4: every Conv/ConvTranspose/Gemm/MatMul weight INT4 per-channel (symmetric; the
   model's opset raised to 21, onnxruntime's TensorQuantOverrides per weight), activations int8,
   biases int32. --weights auto: per layer, int4 where top-1 stays within --accuracy-budget
   percentage points of the all-int8 model (choose_int4: each layer's
   damage alone, then layers added by least damage per byte saved, each step checked).
4. With --labels (keys `images`/`inputs` or the input names, plus `labels`): top-1 accuracy of the
   float model (onnxruntime), the int8 model (onnxruntime), mcugen's golden model, the generated C
   built with gcc on the host and, on a board with a QEMU machine, run in QEMU — one table.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from emitter.errors import McugenError, ModelError, UsageError, VerifyError

if TYPE_CHECKING:
    from emitter.boards import Board
    from emitter.compiler import Compiled

SINGLE_INPUT_KEYS = ("inputs", "images", "x")
SETTINGS = ("QDQ, symmetric per-channel int8 weights, int8 activations, MinMax calibration, "
            "reduce_range off")


# -- model and data --------------------------------------------------------------------------------


def load_float_model(path: str | Path) -> onnx.ModelProto:
    try:
        model = onnx.load(str(path))
    except FileNotFoundError:
        raise UsageError(f"model '{path}' does not exist") from None
    except Exception as exc:  # noqa: BLE001 - protobuf raises several types for corrupt bytes
        raise UsageError(f"cannot read model '{path}' ({type(exc).__name__}); is it a complete "
                         ".onnx file?") from None
    if not model.graph.node:
        raise UsageError(f"'{path}' holds no ONNX graph")
    inits = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name not in inits and vi.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            raise UsageError(f"'{path}': input '{vi.name}' is not float32; `mcugen quantize` "
                             "takes a float model (an int8 model goes straight to `mcugen`)")
    if any(n.op_type in ("QuantizeLinear", "DequantizeLinear") or n.domain == "com.microsoft"
           for n in model.graph.node):
        raise UsageError(f"'{path}' is already quantized; give `mcugen` the model directly")
    return model


def graph_inputs(model: onnx.ModelProto) -> tuple[dict[str, tuple[int, ...]], bool]:
    """Input name -> static shape of one sample; a symbolic leading (batch) dim becomes 1, and
    the flag says whether that happened. Other symbolic dims are a UsageError."""
    inits = {i.name for i in model.graph.initializer}
    out, batch_fixed = {}, False
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = [int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else -1
                for d in vi.type.tensor_type.shape.dim]
        if dims and dims[0] == -1:
            dims[0], batch_fixed = 1, True
        if -1 in dims:
            raise UsageError(f"input '{vi.name}' has dynamic dims {dims} (-1) beyond the batch; "
                             "export the model with static shapes")
        out[vi.name] = tuple(dims)
    return out, batch_fixed


def load_samples(npz: str | Path, inputs: dict[str, tuple[int, ...]], what: str
                 ) -> dict[str, np.ndarray]:
    """Input name -> float32 array [samples, *shape] from an .npz (see the module doc)."""
    try:
        data = np.load(npz)
        files = list(data.files)
    except FileNotFoundError:
        raise UsageError(f"{what} '{npz}' does not exist") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {what} '{npz}' as .npz: {exc}") from None
    out: dict[str, np.ndarray] = {}
    for name, shape in inputs.items():
        keys = [name] + (list(SINGLE_INPUT_KEYS) if len(inputs) == 1 else [])
        key = next((k for k in keys if k in files), None)
        if key is None:
            raise UsageError(f"{what} '{npz}' has no array for input '{name}' (looked for "
                             f"{', '.join(repr(k) for k in keys)}; it has {files})")
        arr = np.asarray(data[key])
        if arr.dtype.kind not in "fiub":
            raise UsageError(f"{what} '{npz}': array '{key}' has dtype {arr.dtype}, not numbers")
        arr = arr.astype(np.float32)
        per = int(np.prod(shape))
        if arr.ndim == 0 or arr.size % per or arr.size == 0:
            raise UsageError(f"{what} '{npz}': array '{key}' of shape {arr.shape} does not hold "
                             f"whole samples of input '{name}' {shape}")
        arr = arr.reshape((-1,) + shape)
        if not np.all(np.isfinite(arr)):
            raise UsageError(f"{what} '{npz}': array '{key}' holds NaN or infinite values")
        out[name] = arr
    counts = {len(a) for a in out.values()}
    if len(counts) != 1:
        raise UsageError(f"{what} '{npz}': the inputs have different sample counts {sorted(counts)}")
    return out


def load_labels(npz: str | Path, count: int) -> np.ndarray:
    data = np.load(npz)
    if "labels" not in data.files:
        raise UsageError(f"--labels '{npz}' has no array 'labels' (it has {list(data.files)})")
    labels = np.asarray(data["labels"]).reshape(-1)
    if labels.dtype.kind not in "iu":
        raise UsageError(f"--labels '{npz}': 'labels' has dtype {labels.dtype}, not integers")
    if len(labels) != count:
        raise UsageError(f"--labels '{npz}': {len(labels)} labels for {count} samples")
    return labels.astype(np.int64)


# -- weight precision ------------------------------------------------------------------------------

WEIGHT_MODES = ("int8", "int4", "auto")
INT4_OPSET = 21  # INT4 QuantizeLinear/DequantizeLinear need opset 21


@dataclass(frozen=True)
class WeightLayer:
    """One quantizable weight: its node, op, initializer, per-channel axis and element count."""
    node: str
    op: str
    weight: str
    axis: int
    count: int

    @property
    def int8_bytes(self) -> int:
        return self.count

    @property
    def int4_bytes(self) -> int:
        return (self.count + 1) // 2  # two 4-bit values a byte (ONNX INT4 packing)


def weight_layers(model: onnx.ModelProto) -> list[WeightLayer]:
    """The Conv (and depthwise), ConvTranspose, Gemm and MatMul weights held as initializers, in
    graph order, with the channel axis onnxruntime quantizes them along (output channels)."""
    inits = {i.name: i for i in model.graph.initializer}
    out: list[WeightLayer] = []
    seen: set[str] = set()
    for k, node in enumerate(model.graph.node):
        if node.op_type not in ("Conv", "ConvTranspose", "Gemm", "MatMul") or len(node.input) < 2:
            continue
        w = node.input[1]
        if w not in inits or w in seen:
            continue
        dims = list(inits[w].dims)
        if node.op_type == "Conv":
            axis = 0
        elif node.op_type == "ConvTranspose":
            axis = 1
        elif node.op_type == "Gemm":
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            axis = 0 if trans_b else 1
        else:
            axis = len(dims) - 1
        if len(dims) < 2 or axis >= len(dims):
            continue
        seen.add(w)
        out.append(WeightLayer(node.name or f"{node.op_type}_{k}", node.op_type, w, axis,
                               int(np.prod(dims))))
    return out


def raise_opset(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model at opset 21 (INT4 Q/DQ), or a UsageError saying what to do."""
    version = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if version >= INT4_OPSET:
        return model
    from onnx import version_converter

    try:
        out = version_converter.convert_version(model, INT4_OPSET)
        onnx.checker.check_model(out)
    except Exception as exc:  # noqa: BLE001 - the converter raises several types
        msg = str(exc).strip().splitlines()
        raise UsageError(f"--weights int4/auto need opset {INT4_OPSET} (INT4 DequantizeLinear) and "
                         f"onnx cannot raise this model from opset {version}: "
                         f"{msg[0] if msg else type(exc).__name__}; export it at opset "
                         f"{INT4_OPSET} or use --weights int8") from None
    return out


# -- quantization --------------------------------------------------------------------------------


def fold_constants(model: onnx.ModelProto) -> onnx.ModelProto:
    """Evaluate every node whose inputs are all constant (Constant nodes, torch's shape
    arithmetic) with onnx's reference evaluator and keep its outputs as initializers."""
    from onnx.reference import ReferenceEvaluator

    g = model.graph
    consts: dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    original = set(consts)
    kept: list[onnx.NodeProto] = []
    for node in g.node:
        ins = [i for i in node.input if i]
        if node.domain in ("", "ai.onnx") and all(i in consts for i in ins) and (ins or node.op_type == "Constant"):
            try:
                outs = ReferenceEvaluator(node).run(None, {i: consts[i] for i in ins})
            except Exception:  # noqa: BLE001 - an op the reference evaluator cannot run stays
                kept.append(node)
                continue
            for name, value in zip(node.output, outs, strict=False):
                consts[name] = np.asarray(value)
        else:
            kept.append(node)
    used = {i for n in kept for i in n.input} | {o.name for o in g.output}
    inits = [i for i in g.initializer if i.name in used]
    inits += [numpy_helper.from_array(v, name=k) for k, v in consts.items()
              if k in used and k not in original]
    graph = helper.make_graph(kept, g.name, list(g.input), list(g.output), inits)
    out = helper.make_model(graph, opset_imports=list(model.opset_import),
                            producer_name=model.producer_name,
                            producer_version=model.producer_version)
    out.ir_version = model.ir_version
    try:
        out = onnx.shape_inference.infer_shapes(out, strict_mode=True)
        onnx.checker.check_model(out)
    except Exception as exc:  # noqa: BLE001 - onnx raises several types
        msg = str(exc).strip().splitlines()
        raise ModelError(f"the model fails the ONNX checker after constant folding: "
                         f"{msg[0] if msg else type(exc).__name__}") from None
    return out


def quantize_for_mcugen(model: onnx.ModelProto, calib: dict[str, np.ndarray],
                        out_path: str | Path, int4: Sequence[WeightLayer] = ()) -> Path:
    """onnxruntime quantize_static with the settings of SETTINGS, the weights of `int4` INT4
    per-channel (the model must then be opset 21); returns out_path."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry

    count = len(next(iter(calib.values())))

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.k = 0

        def get_next(self) -> dict[str, np.ndarray] | None:
            if self.k >= count:
                return None
            feed = {name: arr[self.k] for name, arr in calib.items()}
            self.k += 1
            return feed

    op_types = sorted(set(QDQRegistry) | set(QLinearOpsRegistry)
                      | {n.op_type for n in model.graph.node})
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    work = onnx.ModelProto()
    work.CopyFrom(model)
    extra: dict[str, Any] = {"ForceQuantizeNoInputCheck": True, "WeightSymmetric": True,
                             "ActivationSymmetric": False}
    if int4:
        extra["TensorQuantOverrides"] = {
            w.weight: [{"axis": w.axis, "quant_type": QuantType.QInt4, "symmetric": True}]
            for w in int4}
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_static's "consider pre-processing" hint
    try:
        quantize_static(work, str(out_path), Reader(), quant_format=QuantFormat.QDQ,
                        op_types_to_quantize=op_types, per_channel=True, reduce_range=False,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        extra_options=extra)
    except McugenError:
        raise
    except Exception as exc:  # noqa: BLE001 - report onnxruntime's failure as a model error
        raise ModelError(f"onnxruntime quantize_static failed: {type(exc).__name__}: "
                         f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}") from None
    finally:
        root.setLevel(level)
    return out_path


# -- accuracy --------------------------------------------------------------------------------------


def ort_predictions(model: str | Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """argmax of the first output of `model` (onnxruntime CPU) for every sample."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    count = len(next(iter(feeds.values())))
    preds = []
    for k in range(count):
        feed = {n: a[k] for n, a in feeds.items()}
        preds.append(int(np.argmax(np.asarray(sess.run(None, feed)[0]).reshape(-1))))
    return np.array(preds, dtype=np.int64)


def int8_predictions(outputs: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    return np.array([int(np.argmax(np.asarray(o[0]).reshape(-1))) for o in outputs], np.int64)


def accuracy_table(float_model: Path, int8_model: Path, labelled: dict[str, np.ndarray],
                   labels: np.ndarray, c: Compiled, board: Board, qemu: bool, source: str,
                   kind: str = "int8") -> tuple[str, bool]:
    """Build, run and tabulate; returns (text, every int8 run bit-exact with the golden)."""
    from emitter.render.bundle import render_bundle
    from emitter.render.write import write_bundle
    from emitter.verify.run import run_verify

    rows = [("float model (onnxruntime)", ort_predictions(float_model, labelled)),
            (f"{kind} model (onnxruntime)", ort_predictions(int8_model, labelled))]
    with tempfile.TemporaryDirectory(prefix="mcugen-quantize-") as tmp:
        work = Path(tmp)
        bundle = work / "bundle"
        write_bundle(render_bundle(c, " ".join(board.cflags), board.name), bundle)
        onnx_names = {c.graph.boundaries[n].onnx_name: n for n in c.graph.inputs}
        npz = work / "labelled_inputs.npz"
        arrays: dict[str, Any] = {name: labelled[name] for name in onnx_names}
        np.savez(npz, **arrays)
        use_qemu = qemu and bool(board.qemu_machine)
        rep = run_verify(c, bundle, board, int8_model, str(npz), len(labels), qemu=use_qemu,
                         work=work / "verify")
    rows.append((f"{kind} mcugen golden model", int8_predictions(rep.outputs["golden"])))
    rows.append((f"{kind} generated C, host gcc", int8_predictions(rep.outputs["host"])))
    if "qemu" in rep.outputs:
        rows.append((f"{kind} generated C, QEMU {board.name}", int8_predictions(rep.outputs["qemu"])))
    lines = [rep.text(), "", f"top-1 accuracy on {len(labels)} labelled samples ({source}):"]
    for what, pred in rows:
        lines.append(f"  {what:<36} {100.0 * float(np.mean(pred == labels)):6.2f}%")
    return "\n".join(lines), rep.ok


# -- weight precision search ---------------------------------------------------------------------


def choose_int4(model: onnx.ModelProto, calib: dict[str, np.ndarray], feeds: dict[str, np.ndarray],
                reference: np.ndarray, budget: float, source: str) -> tuple[list[WeightLayer], str]:
    """--weights auto: the layers to hold int4 weights, and the per-layer table.

    Top-1 (percent of `reference`: labels, or the float model's top-1) of the all-int8 model is
    the baseline. Each layer is measured int4 alone (its damage, in points); then layers are
    added in order of least damage per byte saved, each addition checked on the combined model
    and kept when top-1 stays within `budget` points of the baseline. Deterministic: onnxruntime's
    quantizer and CPU kernels are, and ties keep graph order."""
    layers = weight_layers(model)
    with tempfile.TemporaryDirectory(prefix="mcugen-int4-") as tmp:
        runs = [0]

        def top1(int4: Sequence[WeightLayer]) -> float:
            runs[0] += 1
            path = Path(tmp) / f"trial{runs[0]}.onnx"
            quantize_for_mcugen(model, calib, path, int4)
            return 100.0 * float(np.mean(ort_predictions(path, feeds) == reference))

        base = top1([])
        every = top1(layers)
        alone = {w.weight: base - top1([w]) for w in layers}
        index = {w.weight: k for k, w in enumerate(layers)}
        order = sorted(layers, key=lambda w: (alone[w.weight] / max(w.int8_bytes - w.int4_bytes, 1),
                                              index[w.weight]))
        chosen: list[WeightLayer] = []
        combined: dict[str, float] = {}
        auto = base
        for w in order:
            trial = sorted(chosen + [w], key=lambda x: index[x.weight])
            t = every if len(trial) == len(layers) else top1(trial)
            combined[w.weight] = t
            if t >= base - budget - 1e-9:
                chosen, auto = trial, t
    picked = {w.weight for w in chosen}
    width = max([5] + [len(w.node) for w in layers])
    lines = [f"weights per layer (--weights auto, budget {budget:g} point(s) of top-1 {source}):",
             f"  {'layer':<{width}} {'op':<13} {'weight bytes int8 -> int4':>26} {'alone':>9} "
             f"{'step':>8} {'bits':>4}"]
    for w in layers:
        lines.append(f"  {w.node:<{width}} {w.op:<13} {w.int8_bytes:>14,} -> {w.int4_bytes:>8,} "
                     f"{0.0 - alone[w.weight] + 0.0:>+8.2f}p {combined[w.weight]:>7.2f}% "
                     f"{4 if w.weight in picked else 8:>4}")
    b8 = sum(w.int8_bytes for w in layers)
    b_auto = sum(w.int4_bytes if w.weight in picked else w.int8_bytes for w in layers)
    b4 = sum(w.int4_bytes for w in layers)
    lines.append("  (alone: top-1 change with only that layer int4, in points; step: top-1 of the "
                 "combined model when the search tried it)")
    lines.append(f"top-1 int8 {base:.2f}% / int4 {every:.2f}% / auto {auto:.2f}%; weight bytes "
                 f"int8 {b8:,} / int4 {b4:,} / auto {b_auto:,} (auto saves {b8 - b_auto:,} B, "
                 f"{len(chosen)} of {len(layers)} layers int4)")
    return chosen, "\n".join(lines)


# -- command ---------------------------------------------------------------------------------------


def cmd_quantize(args: argparse.Namespace) -> int:
    """`mcugen quantize` (options in emitter/cli.py): 0 success, VerifyError when the C differs."""
    from emitter.boards import load_board
    from emitter.compiler import c_name, compile_model
    from emitter.render.bundle import render_bundle

    board = load_board(args.board)
    out = Path(args.output)
    if out.resolve() == Path(args.model).resolve():
        raise UsageError("-o would overwrite the float model; choose another file")
    if out.exists() and out.is_dir():
        raise UsageError(f"-o '{out}' is a folder; give the .onnx file to write")
    model = load_float_model(args.model)
    shapes, batch_fixed = graph_inputs(model)
    calib = load_samples(args.calibration, shapes, "--calibration")
    labelled = load_samples(args.labels, shapes, "--labels") if args.labels else None
    labels = load_labels(args.labels, len(next(iter(labelled.values())))) if labelled else None

    mode = getattr(args, "weights", "int8") or "int8"
    budget = getattr(args, "accuracy_budget", None)
    if mode not in WEIGHT_MODES:
        raise UsageError(f"--weights '{mode}' is not one of {', '.join(WEIGHT_MODES)}")
    if budget is not None and mode != "auto":
        raise UsageError("--accuracy-budget applies to --weights auto only; add --weights auto "
                         "or drop it")
    budget = 1.0 if budget is None else float(budget)
    if not np.isfinite(budget) or budget < 0:
        raise UsageError(f"--accuracy-budget {budget:g} must be a number of top-1 points >= 0 "
                         "(e.g. 1 for one percentage point)")

    folded = fold_constants(model)
    int4: list[WeightLayer] = []
    settings = SETTINGS
    if mode != "int8":
        layers = weight_layers(folded)
        if not layers:
            raise UsageError(f"--weights {mode}: '{args.model}' has no Conv, ConvTranspose, Gemm or "
                             "MatMul weight held as an initializer to make int4; use --weights int8")
        folded = raise_opset(folded)
        if mode == "int4":
            int4 = layers
        else:
            if labelled is not None and labels is not None:
                feeds, reference = labelled, labels
                source = f"on {len(labels)} labelled samples of {Path(args.labels).name}"
            else:
                feeds = calib
                reference = ort_predictions(args.model, calib)
                source = (f"as agreement with the float model on {len(reference)} calibration "
                          "samples (no --labels)")
            if len(reference) == 0:
                raise UsageError("--weights auto needs samples to measure top-1: give --labels "
                                 "LABELLED.npz or calibration data")
            int4, table = choose_int4(folded, calib, feeds, reference, budget, source)
            print(table)
        names = {w.weight for w in int4}
        settings = SETTINGS.replace("per-channel int8 weights",
                                    f"per-channel weights int4 in {len(int4)} of {len(layers)} "
                                    f"layers ({', '.join(w.node for w in int4)})"
                                    f"{', int8 in the rest' if len(int4) < len(layers) else ''}; "
                                    f"opset {INT4_OPSET}" if names else
                                    "per-channel int8 weights (auto kept every layer int8)")
    quantize_for_mcugen(folded, calib, out, int4)
    n_calib = len(next(iter(calib.values())))
    print(f"wrote {out} ({settings}; {n_calib} calibration samples from {args.calibration})")

    try:
        c = compile_model(out, name=c_name(out.stem), input_shapes=shapes if batch_fixed else None)
        report = json.loads(render_bundle(c, " ".join(board.cflags), board.name)["report.json"])
    except McugenError:
        print(f"mcugen cannot compile {out} (the file is kept for inspection):", file=sys.stderr)
        raise
    print(f"mcugen compiles it for {board.name}: {len(c.graph.nodes)} layers, arena "
          f"{c.plan.arena_size:,} B (lower bound {c.plan.lower_bound:,} B), weights "
          f"{report['weight_bytes']:,} B")
    if labelled is None or labels is None:
        return 0
    text, ok = accuracy_table(Path(args.model), out, labelled, labels, c, board,
                              not args.no_qemu, Path(args.labels).name,
                              "quantized" if int4 else "int8")
    print(text)
    if not ok:
        raise VerifyError("the generated C does not match mcugen's golden model bit for bit "
                          "(see above)")
    return 0
