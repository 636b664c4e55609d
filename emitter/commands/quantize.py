"""`mcugen quantize`: a float ONNX model -> the INT8 model mcugen runs best, plus an accuracy check.

    mcugen quantize model_fp32.onnx --calibration data.npz -o model_int8.onnx
                    [--labels labelled.npz] [--board cortex-m7] [--no-qemu] [--debug]

1. Constant folding (Constant nodes and shape arithmetic of torch's exporter become initializers,
   as onnxruntime's quant_pre_process or onnxsim would do).
2. onnxruntime quantize_static with MinMax calibration on data.npz: QDQ form, symmetric per-channel
   int8 weights, int8 activations, reduce_range off, every op type of the model quantized (so ops
   outside onnxruntime's default list, e.g. Tanh or HardSwish, get Q/DQ and no float island).
   data.npz holds one array per graph input name, or for a one-input model a single array named
   `inputs`, `images` or `x`; the first axis runs over samples.
3. mcugen compiles the result (the summary line says so, or the error says why not).
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
                        out_path: str | Path) -> Path:
    """onnxruntime quantize_static with the settings of SETTINGS; returns out_path."""
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
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_static's "consider pre-processing" hint
    try:
        quantize_static(work, str(out_path), Reader(), quant_format=QuantFormat.QDQ,
                        op_types_to_quantize=op_types, per_channel=True, reduce_range=False,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        extra_options={"ForceQuantizeNoInputCheck": True,
                                       "WeightSymmetric": True, "ActivationSymmetric": False})
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
                   labels: np.ndarray, c: Compiled, board: Board, qemu: bool, source: str
                   ) -> tuple[str, bool]:
    """Build, run and tabulate; returns (text, every int8 run bit-exact with the golden)."""
    from emitter.render.bundle import render_bundle
    from emitter.render.write import write_bundle
    from emitter.verify.run import run_verify

    rows = [("float model (onnxruntime)", ort_predictions(float_model, labelled)),
            ("int8 model (onnxruntime)", ort_predictions(int8_model, labelled))]
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
    rows.append(("int8 mcugen golden model", int8_predictions(rep.outputs["golden"])))
    rows.append(("int8 generated C, host gcc", int8_predictions(rep.outputs["host"])))
    if "qemu" in rep.outputs:
        rows.append((f"int8 generated C, QEMU {board.name}", int8_predictions(rep.outputs["qemu"])))
    lines = [rep.text(), "", f"top-1 accuracy on {len(labels)} labelled samples ({source}):"]
    for what, pred in rows:
        lines.append(f"  {what:<36} {100.0 * float(np.mean(pred == labels)):6.2f}%")
    return "\n".join(lines), rep.ok


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

    folded = fold_constants(model)
    quantize_for_mcugen(folded, calib, out)
    n_calib = len(next(iter(calib.values())))
    print(f"wrote {out} ({SETTINGS}; {n_calib} calibration samples from {args.calibration})")

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
                              not args.no_qemu, Path(args.labels).name)
    print(text)
    if not ok:
        raise VerifyError("the generated C does not match mcugen's golden model bit for bit "
                          "(see above)")
    return 0
