"""`mcugen debug`: emit (or take) the bundle, dump every layer on the host and in QEMU, compare."""
from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from emitter.compiler import Compiled, compile_model, golden_tensors
from emitter.errors import ModelError, OutputError, UsageError
from emitter.quant import NUMERICS
from emitter.report.names import short_name
from emitter.verify.debug.layers import debug_layers, run_host_layers, run_qemu_layers, write_layer_glue
from emitter.verify.debug.ort import ort_layers
from emitter.verify.debug.report import DebugReport, LayerRow, diff
from emitter.verify.harness import Samples

if TYPE_CHECKING:
    from emitter.boards import Board


def run_debug(c: Compiled, bundle: Path, board: Board, samples: Samples, qemu: bool = True,
              work: Path | None = None) -> DebugReport:
    """Build, run and compare; the report holds one row per kernel call."""
    layers = debug_layers(c)
    gold = [golden_tensors(c, s) for s in samples]
    other = next(n for n in NUMERICS if n != c.graph.numerics)
    rep = DebugReport(board.name, len(samples), c.name, qemu=qemu, numerics=(c.graph.numerics, other))
    # the other rounding contract's golden, side by side against onnxruntime (same graph and names)
    twin = compile_model(c.model.path, replace(c.options, name=c.name, numerics=other))
    gold_other = [golden_tensors(twin, s) for s in samples]
    with tempfile.TemporaryDirectory(prefix="mcugen-debug-") as tmp:
        w = Path(work) if work is not None else Path(tmp)
        glue = w / "glue"
        write_layer_glue(c, glue)
        host, note = run_host_layers(bundle, glue, layers, samples, w)
        if note:
            rep.notes.append(note)
        target = None
        if qemu:
            target, note = run_qemu_layers(bundle, glue, board, layers, samples, w)
            if note:
                rep.notes.append(note)
    try:
        ort_vals = ort_layers(c, layers, samples)
    except Exception as exc:  # noqa: BLE001 - onnxruntime refusing the model is reported, not fatal
        ort_vals = None
        rep.notes.append(f"note: onnxruntime could not run the model ({type(exc).__name__}: "
                         f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}); "
                         "no onnxruntime column")
    for lay in layers:
        want = [gold[s][lay.tensor] for s in range(len(samples))]
        row = LayerRow(lay, diff([(host.get((s, lay.index)), want[s]) for s in range(len(samples))]))
        if target is not None:
            row.qemu = diff([(target.get((s, lay.index)), want[s]) for s in range(len(samples))])
        if ort_vals is not None and all(lay.tensor in v for v in ort_vals):
            row.ort = diff([(want[s], ort_vals[s][lay.tensor]) for s in range(len(samples))])
            row.ort_other = diff([(gold_other[s][lay.tensor], ort_vals[s][lay.tensor])
                                  for s in range(len(samples))])
        rep.rows.append(row)
    worst = next((r for r in rep.rows if r.ort is not None and r.ort.max_diff > 1), None)
    if ort_vals is not None:
        rep.notes.append(f"golden ({c.graph.numerics} numerics) vs onnxruntime (its float QDQ "
                         "reference; reported, not an error): "
                         + (f"first layer off by more than one quantum: #{worst.layer.index} "
                            f"'{short_name(worst.layer.name)}'" if worst is not None
                            else "every compared layer within one quantum"))
        rep.notes.extend(_ort_optimized(c, samples))
    return rep


def _ort_optimized(c: Compiled, samples: Samples) -> list[str]:
    """The graph outputs of onnxruntime's optimized session against its QDQ reference (the column
    above): a line when they differ by more than one quantum (emitter/verify/run.py)."""
    from emitter.verify.run import ort_optimized_lines, ort_run

    try:
        reference = ort_run(c, c.model.path, samples)
    except Exception:  # noqa: BLE001 - e.g. --io-layout nhwc: the layers above are compared already
        return []
    return ort_optimized_lines(c, c.model.path, samples, reference)


def _bundle_report(folder: Path) -> dict:
    try:
        return json.loads((folder / "report.json").read_text())
    except (OSError, ValueError):
        raise OutputError(f"--bundle '{folder}' is not an mcugen bundle (no readable report.json)") from None


def cmd_debug(args: argparse.Namespace) -> int:
    """`mcugen debug` (options in emitter/cli.py): 0 every layer bit-exact, 1 a layer diverges."""
    from emitter.boards import load_board
    from emitter.onnx.load import parse_input_shapes
    from emitter.render.bundle import render_bundle
    from emitter.render.write import write_bundle
    from emitter.verify.run import load_inputs

    if args.samples < 1:
        raise UsageError(f"--samples {args.samples}: give at least 1")
    if args.bundle and args.output:
        raise UsageError("give either --bundle (debug an emitted bundle) or -o (where to emit one)")
    board = load_board(args.board)
    name = args.name
    existing = None
    if args.bundle:
        existing = _bundle_report(Path(args.bundle))
        name = name or existing.get("name")
        if existing.get("backend", "portable") != "portable":
            raise UsageError(f"--bundle '{args.bundle}' uses the {existing.get('backend')} backend; mcugen debug "
                             "compares portable bundles layer by layer: debug the model without --bundle (it "
                             "emits a portable one), or use `mcugen verify --profile` for this bundle")
    numerics = None if args.numerics == "auto" else args.numerics
    if existing is not None and numerics is None:
        numerics = existing.get("numerics")  # the bundle's contract
    compiled = compile_model(args.model, name=name, input_shapes=parse_input_shapes(args.input_shape),
                             io_nhwc=args.io_layout == "nhwc", numerics=numerics)
    if existing is not None and existing.get("model_sha256") != compiled.model.sha256:
        raise ModelError(f"--bundle '{args.bundle}' was emitted from another model "
                         f"({existing.get('model')}), not from '{args.model}'")
    samples = load_inputs(compiled, args.inputs, args.samples)[:args.samples]
    if not samples:
        raise UsageError("no reference inputs to run")
    with tempfile.TemporaryDirectory(prefix="mcugen-debug-bundle-") as tmp:
        if args.bundle:
            bundle = Path(args.bundle)
        else:
            bundle = Path(args.output) if args.output else Path(tmp) / compiled.name
            write_bundle(render_bundle(compiled, " ".join(board.cflags), board.name), bundle,
                         force=args.force)
        where = bundle if args.bundle or args.output else "in a temporary folder"
        print(f"mcugen debug: {Path(args.model).name} on {board.name}, bundle {where}, "
              f"{len(samples)} sample{'s' if len(samples) != 1 else ''}"
              + ("" if args.inputs is None else f" from {args.inputs}"))
        work = Path(args.work) if args.work else None
        rep = run_debug(compiled, bundle, board, samples, qemu=not args.no_qemu, work=work)
    print(rep.text())
    return 0 if rep.ok else 1


