"""mcugen command line.

    mcugen MODEL.onnx --board=cortex-m7 [-o DIR] [--name NAME] [--backend portable] [--verify]
    mcugen verify MODEL.onnx --board=B [--inputs x.npz]      (same as --verify)
    mcugen debug MODEL.onnx --board=B [--inputs x.npz]       (per-layer host/QEMU/golden/ORT table)
    mcugen quantize FP32.onnx --calibration data.npz -o INT8.onnx [--labels test.npz]
    mcugen boards                                             (list the boards)

Any McugenError ends with one clear message and exit code 2 (verification mismatches: 1), and
nothing half-written is left behind; a traceback only with --debug.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

from emitter import __version__
from emitter.errors import BudgetError, McugenError, UsageError, VerifyError

SUBCOMMANDS = ("boards", "verify", "debug", "quantize")


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]i?[bB]?|[bB])?\s*", text)
    if not m:
        raise UsageError(f"size '{text}' is not a number with an optional K or M suffix (e.g. 256K, 1M)")
    unit = (m.group(2) or "").upper()[:1]
    return int(float(m.group(1)) * {"K": 1024, "M": 1024 * 1024}.get(unit, 1))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mcugen", description="INT8 ONNX model -> C bundle for a Cortex-M board.")
    p.add_argument("model", help="the INT8 ONNX model (QDQ or QOperator form)")
    p.add_argument("--board", default="cortex-m7", help="board or core name (see `mcugen boards`)")
    p.add_argument("-o", "--output", help="output folder (default: a folder named after the model)")
    p.add_argument("--name", help="C prefix of every public symbol (default: the file stem)")
    p.add_argument("--backend", default="auto", choices=["auto", "portable", "cmsis-nn"],
                   help="kernel backend: cmsis-nn (direct calls into your CMSIS-NN, needs "
                        "CMSIS_NN_PATH), portable (mcugen's C99 int8 kernels); auto: cmsis-nn on an Arm "
                        "Cortex-M board when CMSIS_NN_PATH is set, else portable (the summary says why)")
    p.add_argument("--cmsis-everywhere", action="store_true",
                   help="cmsis-nn backend: call CMSIS-NN for every layer it supports, also where "
                        "mcugen's kernel was measured faster on this core (kept by default; the "
                        "summary lists those layers and why)")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="static shape for an input with symbolic dims (repeatable)")
    p.add_argument("--io-layout", choices=["onnx", "nhwc"], default="onnx",
                   help="layout of 4-D inputs/outputs at the C API (default: as the ONNX graph declares)")
    p.add_argument("--ram-budget", help="fail if the arena exceeds this (e.g. 256K)")
    p.add_argument("--flash-budget", help="fail if the weights exceed this (e.g. 1M)")
    p.add_argument("--verify", action="store_true",
                   help="build and run the bundle (host gcc, and QEMU when the board has a machine) "
                        "and compare with the golden model and onnxruntime")
    p.add_argument("--inputs", help="reference inputs (.npz) for --verify (default: 8 random samples)")
    p.add_argument("--samples", type=int, default=8, help="random samples for --verify (default 8)")
    p.add_argument("--no-qemu", action="store_true", help="with --verify: host build only")
    p.add_argument("--profile", action="store_true",
                   help="with --verify: also count instructions per layer in QEMU (a second build with "
                        "a marker after every layer) and print where they go")
    p.add_argument("--force", action="store_true", help="replace an -o folder that is not an mcugen bundle")
    p.add_argument("--quiet", action="store_true", help="print no per-layer table")
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")
    p.add_argument("--guard", action="store_true",
                   help="debug build: guard bytes around every arena buffer, checked after every "
                        "layer (status <NAME>_ERR_GUARD and <name>_guard_layer name the layer)")
    p.add_argument("--version", action="version", version=f"mcugen {__version__}")
    return p


def choose_backend(asked: str, board) -> tuple[str, Path | None, str]:
    """(backend, CMSIS-NN path, a sentence saying which backend and why). auto: cmsis-nn on an Arm
    Cortex-M board when CMSIS_NN_PATH is set, else portable. A CMSIS-NN mcugen cannot use is a
    UsageError; a newer one whose API is unchanged gets a warning on stderr."""
    from emitter.backends.cmsis_nn import check_version, cmsis_path
    from emitter.backends.cmsis_version import supported

    path = cmsis_path()
    arm = board.core.startswith("cortex-m")
    if asked == "cmsis-nn" and path is None:
        raise UsageError(f"--backend cmsis-nn needs CMSIS_NN_PATH set to a CMSIS-NN source tree "
                         f"({supported()}; see 'Getting CMSIS-NN' in the README)")
    if asked == "cmsis-nn" and not arm:
        raise UsageError(f"--backend cmsis-nn needs an Arm Cortex-M board; {board.name} has core {board.core}")
    if asked == "cmsis-nn" or (asked == "auto" and path is not None and arm):
        assert path is not None
        version = check_version(path)
        warning = version.warning(path)
        if warning is not None:
            print(f"mcugen: warning: {warning}", file=sys.stderr)
        why = "asked for" if asked == "cmsis-nn" else "auto: Arm board and CMSIS_NN_PATH is set"
        return "cmsis-nn", path, f"backend cmsis-nn: CMSIS-NN {version} at {path}; {why}"
    if asked == "portable":
        why = "asked for"
    elif not arm:
        why = f"auto: board {board.name} has no Arm Cortex-M core ({board.core})"
    else:
        why = "auto: CMSIS_NN_PATH is not set"
    return "portable", None, f"backend portable: mcugen's C99 kernels; {why}"


def cmd_boards() -> int:
    from emitter.boards import format_board_table

    print(format_board_table())
    return 0


def check_budgets(args: argparse.Namespace, board, compiled, weight_bytes: int) -> None:
    ram = parse_size(args.ram_budget) if args.ram_budget else None
    flash = parse_size(args.flash_budget) if args.flash_budget else None
    from emitter.budget import check

    check(compiled, weight_bytes, ram if ram is not None else board.ram_bytes,
          flash if flash is not None else board.flash_bytes,
          "--ram-budget" if ram is not None else f"board {board.name}",
          "--flash-budget" if flash is not None else f"board {board.name}")


def cmd_emit(args: argparse.Namespace, verify: bool) -> int:
    from emitter.boards import load_board
    from emitter.bundle import write_bundle
    from emitter.compiler import compile_model
    from emitter.frontend import parse_input_shapes
    from emitter.render import render_bundle
    from emitter.summary import summary

    board = load_board(args.board)
    backend, cmsis, why = choose_backend(args.backend, board)
    t0 = time.perf_counter()
    compiled = compile_model(args.model, args.name, parse_input_shapes(args.input_shape),
                             io_nhwc=args.io_layout == "nhwc", guard=args.guard, backend=backend,
                             board=board, cmsis_path=cmsis,
                             cmsis_choice="cmsis" if args.cmsis_everywhere else "fastest")
    files = render_bundle(compiled, " ".join(board.cflags), board.name)
    import json

    weight_bytes = json.loads(files["report.json"])["weight_bytes"]
    check_budgets(args, board, compiled, weight_bytes)
    out_dir = Path(args.output) if args.output else Path(Path(args.model).stem)
    write_bundle(files, out_dir, force=args.force)
    elapsed = time.perf_counter() - t0
    if not args.quiet:
        print(summary(compiled, weight_bytes, board.name, why, board.has_fpu))
    print(f"wrote {out_dir}/ ({len(files)} files) in {elapsed:.2f} s")
    if verify:
        from emitter.verify import run_verify

        report = run_verify(compiled, out_dir, board, Path(args.model), args.inputs, args.samples,
                            qemu=not args.no_qemu)
        print(report.text())
        if args.profile and not args.no_qemu and report.ok:
            report.figures["layers"] = profile_report(compiled, out_dir, board, args)
        record_figures(out_dir / "report.json", board.name, report.figures)
        if not report.ok:
            raise VerifyError("verification failed: the generated C does not match the golden "
                              "model bit for bit (see above)")
    return 0


def profile_report(compiled, out_dir: Path, board, args: argparse.Namespace) -> list[dict]:
    """Print the per-layer instruction profile; return it for report.json."""
    import tempfile

    from emitter.profile import profile_layers
    from emitter.verify import load_inputs

    samples = load_inputs(compiled, args.inputs, args.samples)
    with tempfile.TemporaryDirectory(prefix="mcugen-profile-") as tmp:
        prof = profile_layers(compiled, out_dir, board, samples, Path(tmp))
    print(f"instructions per layer ({board.name}, bundle -O2"
          + (", CMSIS-NN -Ofast" if compiled.cmsis_path else "") + "; median of the samples):")
    print(prof.table())
    return [{"index": lay.index, "name": lay.name, "kernel": lay.kernel, "macs": lay.macs,
             "instructions": lay.instructions} for lay in prof.layers]


def record_figures(report_path: Path, board: str, figures: dict) -> None:
    """Add the measured figures of a verification run to the bundle's report.json."""
    import json

    data = json.loads(report_path.read_text())
    data.setdefault("measured", {})[board] = figures
    report_path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        if argv and argv[0] == "boards":
            return cmd_boards()
        if argv and argv[0] == "quantize":
            from emitter.quantize import main_quantize

            return main_quantize(argv[1:])  # handles its own errors and exit codes
        if argv and argv[0] == "debug":
            from emitter.debug import main_debug

            return main_debug(argv[1:])  # handles its own errors and exit codes
        verify = bool(argv) and argv[0] == "verify"
        if verify:
            argv = argv[1:]
        args = build_parser().parse_args(argv)
        return cmd_emit(args, verify or args.verify)
    except VerifyError as exc:
        if debug:
            raise
        print(f"mcugen: error: {exc}", file=sys.stderr)
        return 1
    except (McugenError, BudgetError) as exc:
        if debug:
            raise
        print(f"mcugen: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
