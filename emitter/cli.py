"""mcugen command line: one argparse parser, one subcommand per action.

    mcugen MODEL.onnx --board=cortex-m7 [-o DIR] [--name NAME] [--backend portable] [--verify]
                                                              (= mcugen emit MODEL.onnx ...)
    mcugen verify MODEL.onnx --board=B [--inputs x.npz]      (same as emit --verify)
    mcugen debug MODEL.onnx --board=B [--inputs x.npz]       (per-layer host/QEMU/golden/ORT table)
    mcugen quantize FP32.onnx --calibration data.npz -o INT8.onnx [--labels test.npz]
                    [--weights int8|int4|auto]             (int4 weights: docs/int4.md)
    mcugen boards                                             (list the boards)
    mcugen qemu-kit --board=B -o DIR                          (run your own firmware in QEMU)
    mcugen features SPEC.toml AUDIO... -o feats.npz           (front-end features via cmsisdsp)
    emit/verify ... --frontend SPEC.toml [--audio clips.npz] [--features-ref feats.npz]
                                                              (feature front end, docs/frontend.md)

Any McugenError ends with one clear message and the exit code of its class (errors.exit_status:
1 a mismatch, 2 bad input or use, 3 a missing or failing tool; docs/ci.md), and nothing
half-written is left behind; a traceback only with --debug. Ctrl-C exits 130; a reader closing
stdout early (`mcugen boards | head`) ends quietly.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from emitter import __version__
from emitter.errors import McugenError, McugenWarning, ToolchainError, UsageError, VerifyError, exit_status
from emitter.verify.harness import LAYERS_FILE

if TYPE_CHECKING:
    from emitter.boards import Board
    from emitter.compiler import Compiled
    from emitter.render.frontend import FrontEnd
    from emitter.verify.ci_report import BoardResult

COMMANDS = ("emit", "verify", "debug", "quantize", "boards", "features", "qemu-kit")


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]i?[bB]?|[bB])?\s*", text)
    if not m:
        raise UsageError(f"size '{text}' is not a number with an optional K or M suffix (e.g. 256K, 1M)")
    unit = (m.group(2) or "").upper()[:1]
    return int(float(m.group(1)) * {"K": 1024, "M": 1024 * 1024}.get(unit, 1))


def build_parser() -> argparse.ArgumentParser:
    """The one parser: every subcommand and its options."""
    p = argparse.ArgumentParser(
        prog="mcugen", description="INT8 ONNX model -> C bundle for a Cortex-M board.",
        usage="%(prog)s [-h] [--version] COMMAND ...\n       %(prog)s MODEL.onnx [options]     (= emit)",
        epilog="`mcugen MODEL.onnx [options]` is short for `mcugen emit MODEL.onnx [options]`; "
               "`mcugen COMMAND --help` shows a command's options.")
    p.add_argument("--version", action="version", version=f"mcugen {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", title="commands", required=True)

    emit = _command(sub, "emit", help="emit the C bundle (the default command)",
                    description="Emit the C bundle of an INT8 ONNX model for a board.")
    _model_options(emit, "the INT8 ONNX model (QDQ or QOperator form); several: one bundle, one runtime",
                   several=True)
    _bundle_options(emit)
    emit.add_argument("--verify", action="store_true",
                      help="build and run the bundle (host gcc, and QEMU when the board has a machine) "
                           "and compare with the golden model and onnxruntime")
    _verify_options(emit, "with --verify: ")
    _frontend_options(emit)
    emit.set_defaults(run=cmd_emit)

    verify = _command(sub, "verify", help="emit, build and run the bundle; compare it with the golden model",
                      description="Emit the bundle, build and run it (host gcc, and QEMU when the board has a "
                                  "machine) and compare with the golden model (bit for bit: exit code 1 "
                                  "otherwise) and onnxruntime (reported).")
    _model_options(verify, "the INT8 ONNX model (QDQ or QOperator form); several: one bundle, one runtime",
                   several=True)
    _bundle_options(verify)
    _verify_options(verify, "")
    _frontend_options(verify)
    verify.set_defaults(run=cmd_emit, verify=True)

    debug = _command(sub, "debug", help="compare every layer on host and QEMU with the golden model",
                     description="Run the bundle layer by layer on the host and in QEMU; compare every layer "
                                 "with the golden model and onnxruntime; name the first layer that diverges "
                                 "(exit code 1 then, 0 when every layer is bit-exact).")
    _model_options(debug, "the INT8 ONNX model", "the file stem, or the --bundle's")
    debug.add_argument("--inputs", help="reference inputs (.npz, as for --verify); default: random samples")
    debug.add_argument("--samples", type=int, default=1, help="samples to run (default 1: the first)")
    debug.add_argument("--no-qemu", action="store_true", help="host build only")
    debug.add_argument("-o", "--output", help="write the bundle here (default: a temporary folder)")
    debug.add_argument("--bundle", help="debug this already emitted bundle (e.g. one you edited) instead of "
                                        "emitting one; it must come from this model and options")
    debug.add_argument("--work", help=f"keep the builds, model_glue.h and {LAYERS_FILE} files here")
    debug.add_argument("--force", action="store_true", help="replace an -o folder that is not an mcugen bundle")
    debug.set_defaults(run=cmd_debug)

    quantize = _command(
        sub, "quantize", help="quantize a float ONNX model for mcugen and check its accuracy",
        description="Quantize a float ONNX model with onnxruntime in the form mcugen runs best (the "
                    "`wrote` line states the settings), compile it for the board and, with --labels, "
                    "compare the top-1 accuracy of float, int8 onnxruntime, golden, host C and QEMU.")
    quantize.add_argument("model", help="the float (fp32) ONNX model")
    quantize.add_argument("--calibration", required=True, metavar="DATA.npz",
                          help="calibration inputs: one array per input name, or `inputs`/`images`/`x` "
                               "for a one-input model; first axis = samples")
    quantize.add_argument("-o", "--output", required=True, metavar="MODEL_INT8.onnx",
                          help="where to write the quantized model")
    quantize.add_argument("--labels", metavar="LABELLED.npz",
                          help="labelled samples (`images`/`inputs` or input names, and `labels`): print "
                               "top-1 accuracy of float, int8 onnxruntime, golden, host C and QEMU")
    quantize.add_argument("--board", default="cortex-m7",
                          help="board for the compile check and the QEMU run (default cortex-m7)")
    quantize.add_argument("--no-qemu", action="store_true", help="accuracy on the host only")
    quantize.add_argument("--weights", default="int8", metavar="int8|int4|auto",
                          help="weight precision: int8 (default), int4 per-channel for every conv/FC "
                               "weight (opset 21), or auto: int4 per layer while top-1 stays within "
                               "--accuracy-budget of int8 (on --labels, else agreement with the float "
                               "model on the calibration data)")
    quantize.add_argument("--accuracy-budget", type=float, default=None, metavar="POINTS",
                          help="with --weights auto: top-1 percentage points int4 may cost (default 1)")
    _debug_option(quantize)
    quantize.set_defaults(run=cmd_quantize)

    kit = _command(sub, "qemu-kit", help="write start-up code, linker script and a run script for your own "
                                         "firmware in QEMU",
                   description="Write what your own firmware needs to run in QEMU for a board: start-up code, "
                               "a linker script with the board's memory, semihosting exit, a CMake toolchain "
                               "file and a `run` script with the board's QEMU machine (docs/ci.md).")
    kit.add_argument("--board", default="cortex-m7", help="board or core name (see `mcugen boards`)")
    kit.add_argument("-o", "--output", required=True, metavar="DIR", help="the kit's folder")
    _debug_option(kit)
    kit.set_defaults(run=cmd_qemu_kit)

    boards = _command(sub, "boards", help="list the boards", description="List the boards and their cores.")
    boards.set_defaults(run=cmd_boards, debug=False)
    from emitter.commands.frontend import add_features_command

    add_features_command(sub)
    return p


def _command(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str,
             description: str) -> argparse.ArgumentParser:
    """A subcommand's parser; its usage line reads `mcugen NAME ...`."""
    return sub.add_parser(name, prog=f"mcugen {name}", help=help, description=description)


def _model_options(p: argparse.ArgumentParser, model_help: str, name_default: str = "the file stem",
                   several: bool = False) -> None:
    """The model and how to compile it: emit, verify and debug (emit and verify take several models)."""
    if several:
        p.add_argument("model", nargs="+", metavar="MODEL", help=model_help)
    else:
        p.add_argument("model", help=model_help)
    p.add_argument("--board", default="cortex-m7", help="board or core name (see `mcugen boards`)")
    p.add_argument("--name", help=f"C prefix of every public symbol (default: {name_default})"
                   + ("; several models: comma-separated, one per model" if several else ""))
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D1,D2,...",
                   help="static shape for an input with symbolic dims (repeatable)")
    p.add_argument("--io-layout", choices=["onnx", "nhwc"], default="onnx",
                   help="layout of 4-D inputs/outputs at the C API (default: as the ONNX graph declares)")
    p.add_argument("--numerics", choices=["auto", "tflite", "onnxruntime"], default="auto",
                   help="rounding contract: TFLite's int8 arithmetic (bit-exact with TFLM) or onnxruntime's "
                        "requantization (default auto: onnxruntime for onnxruntime's quantizer output)")
    _debug_option(p)


def _debug_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--debug", action="store_true", help="show Python tracebacks")


def _bundle_options(p: argparse.ArgumentParser) -> None:
    """Where and how the bundle is emitted: emit and verify."""
    p.add_argument("-o", "--output", help="output folder (default: a folder named after the model)")
    p.add_argument("--backend", default="auto", choices=["auto", "portable", "cmsis-nn"],
                   help="kernel backend: cmsis-nn (direct calls into your CMSIS-NN, needs "
                        "CMSIS_NN_PATH), portable (mcugen's C99 int8 kernels); auto: cmsis-nn on an Arm "
                        "Cortex-M board when CMSIS_NN_PATH is set, else portable (the summary says why)")
    p.add_argument("--cmsis-everywhere", action="store_true",
                   help="cmsis-nn backend: call CMSIS-NN for every layer it supports, also where "
                        "mcugen's kernel was measured faster on this core (kept by default; the "
                        "summary lists those layers and why)")
    p.add_argument("--tune", action="store_true",
                   help="cmsis-nn backend: measure mcugen's kernel and CMSIS-NN's on each conv/depthwise/FC "
                        "layer of this model on the board's core in QEMU (cached in ~/.cache/mcugen/tune) and "
                        "keep the faster, instead of the committed cost table; the summary lists both counts")
    p.add_argument("--ram-budget", help="the memory plan must fit RAM = arena + the caller's input/output buffers "
                                        "within this, e.g. 40K; default: the board's RAM minus --ram-reserve")
    p.add_argument("--ram-reserve", default="0",
                   help="RAM of the board the rest of the firmware keeps (e.g. 64K), when no --ram-budget")
    p.add_argument("--memory", default="auto", choices=["auto", "layer", "inplace", "overlap", "stream"],
                   help="memory plan: auto (the smallest plan within 2%% estimated instructions, free "
                        "savings, within the board's RAM; with --ram-budget/--ram-reserve the fastest that "
                        "fits), layer (whole layers, "
                        "the liveness bound), inplace (+ input in the arena, element-wise layers over a "
                        "dying operand: free), overlap (+ outputs over dying inputs, row by row), stream "
                        "(+ chains of layers row by row through small rings); the summary prints each "
                        "plan's RAM and overhead")
    p.add_argument("--pool", action="append", type=_pool_option, metavar="NAME=SIZE",
                   help="RAM pool size (32768, 32K or 0x8000), repeatable: overrides a pool the board lists "
                        "(mcugen boards; e.g. dtcm=32K) or adds one ranked after them; buffers go to the "
                        "fastest pool by estimated accesses per byte (docs/memory.md, Memory pools)")
    p.add_argument("--optimize", default="speed", choices=["speed", "size"],
                   help="speed: each kernel's fastest path for the layer's shape (-O2); size: one generic "
                        "path per kernel, -Os (MCU_OPTIMIZE_SIZE; docs/code_size.md)")
    p.add_argument("--flash-budget", help="fail if flash = weights and parameters + code (mcu_runtime kernels "
                   "and the schedule, estimated per core) exceeds this (e.g. 1M; default: the board's flash)")
    p.add_argument("--force", action="store_true", help="replace an -o folder that is not an mcugen bundle")
    p.add_argument("--quiet", action="store_true", help="print no per-layer table")
    p.add_argument("--guard", action="store_true",
                   help="debug build: guard bytes around every arena buffer, checked after every "
                        "layer (status <NAME>_ERR_GUARD and <name>_guard_layer name the layer)")
    p.add_argument("--concurrent", action="store_true",
                   help="several models: give each its own arena (they may run at the same time) instead "
                        "of one arena shared by all, sized to the largest")


def _verify_options(p: argparse.ArgumentParser, when: str) -> None:
    """How a verification runs: verify, and emit --verify."""
    p.add_argument("--inputs", help=f"{when}reference inputs (.npz; default: random samples)")
    p.add_argument("--samples", type=int, default=8, help=f"{when}random samples (default 8)")
    p.add_argument("--no-qemu", action="store_true", help=f"{when}host build only")
    p.add_argument("--cc", help=f"{when}compiler of the QEMU firmware: gcc (arm-none-eabi-gcc, the default) "
                   "or clang (--target=arm-none-eabi, newlib's headers; linked by arm-none-eabi-gcc; RISC-V "
                   "boards: --target=riscv32-unknown-elf on picolibc's, linked by riscv64-unknown-elf-gcc); "
                   "default: $CC when it names a clang")
    p.add_argument("--junit", metavar="RESULTS.xml",
                   help=f"{when}write the results as JUnit XML: one test case per board and check "
                        "(docs/ci.md)")
    p.add_argument("--json", action="store_true",
                   help=f"{when}print the results as one JSON document on stdout (the rest goes to stderr)")
    p.add_argument("--profile", action="store_true",
                   help=f"{when}also count instructions per layer in QEMU (a second build with "
                        "a marker after every layer) and print where they go")


def _frontend_options(p: argparse.ArgumentParser) -> None:
    from emitter.commands.frontend import add_frontend_options

    add_frontend_options(p, verify=True)


def choose_backend(asked: str, board: Board) -> tuple[str, Path | None, str]:
    """(backend, CMSIS-NN path, a sentence saying which backend and why). auto: cmsis-nn on an Arm
    Cortex-M board when CMSIS_NN_PATH is set, else portable. A CMSIS-NN mcugen cannot use (or none
    for --backend cmsis-nn) is a ToolchainError; a newer one whose API is unchanged gets a warning on stderr."""
    from emitter.backends.cmsis_nn import check_version, cmsis_path
    from emitter.backends.cmsis_version import supported

    path = cmsis_path()
    arm = board.core.startswith("cortex-m")
    if asked == "cmsis-nn" and path is None:  # the CMSIS-NN tree is a tool, as the compiler is
        raise ToolchainError(f"--backend cmsis-nn needs CMSIS_NN_PATH set to a CMSIS-NN source tree "
                         f"({supported()}; see docs/getting_cmsis_nn.md in mcugen's repository)")
    if asked == "cmsis-nn" and not arm:
        raise UsageError(f"--backend cmsis-nn needs an Arm Cortex-M board (CMSIS-NN is Arm-only); "
                         f"{board.name} has core {board.core}")
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
        why = f"auto: board {board.name} has no Arm Cortex-M core ({board.core}; CMSIS-NN is Arm-only)"
    else:
        why = "auto: CMSIS_NN_PATH is not set"
    return "portable", None, f"backend portable: mcugen's C99 kernels; {why}"


def cmd_boards(args: argparse.Namespace) -> int:
    from emitter.boards import format_board_table

    print(format_board_table())
    return 0


def cmd_qemu_kit(args: argparse.Namespace) -> int:
    from emitter.boards import load_board
    from emitter.target.kit import write_kit

    board = load_board(args.board)
    out = Path(args.output)
    written = write_kit(board, out)
    print(f"wrote {out}/ ({len(written)} files) for {board.name} on QEMU {board.qemu_machine}: "
          f"cmake -DCMAKE_TOOLCHAIN_FILE={out}/toolchain.cmake ..., then {out}/run APP.elf")
    return 0


def cmd_debug(args: argparse.Namespace) -> int:
    from emitter.verify.debug import cmd_debug as run

    return run(args)


def cmd_quantize(args: argparse.Namespace) -> int:
    from emitter.commands.quantize import cmd_quantize as run

    return run(args)


def _pool_option(text: str) -> tuple[str, int]:
    """--pool's type: argparse turns the ArgumentTypeError into exit 2 naming --pool."""
    from emitter.boards import parse_pool_option

    try:
        return parse_pool_option(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def ram_budget(args: argparse.Namespace, board: Board) -> tuple[int, str]:
    """The activation RAM the memory plan must fit, and where that figure comes from."""
    if args.ram_budget:
        return parse_size(args.ram_budget), "--ram-budget"
    reserve = parse_size(args.ram_reserve)
    if reserve:
        return board.ram_bytes - reserve, f"board {board.name} RAM minus --ram-reserve"
    return board.ram_bytes, f"board {board.name} RAM"


def check_budgets(args: argparse.Namespace, board: Board, compiled: Compiled, weight_bytes: int,
                  code_bytes: int = 0, frontend: FrontEnd | None = None) -> None:
    ram, ram_src = ram_budget(args, board)
    flash = parse_size(args.flash_budget) if args.flash_budget else None
    flash_src = "--flash-budget" if flash is not None else f"board {board.name}"
    from emitter.report.budget import check

    check(compiled, weight_bytes, ram, flash if flash is not None else board.flash_bytes, ram_src, flash_src,
          code_bytes)
    if frontend is not None:
        from emitter.commands.frontend import check_budget

        check_budget(frontend, compiled, weight_bytes, ram, flash if flash is not None else board.flash_bytes,
                     ram_src, flash_src)


def cmd_emit(args: argparse.Namespace) -> int:
    """emit, and verify (= emit --verify), for one board or a comma-separated list of boards (then
    each bundle goes to <-o>/<board>); --junit/--json write the verification results (ci_report)."""
    import contextlib

    from emitter.verify.ci_report import document, junit_xml, overall_status

    names = [b.strip() for b in args.board.split(",") if b.strip()]
    if not names:
        raise UsageError(f"--board '{args.board}' names no board (see `mcugen boards`)")
    paths = list(args.model) if isinstance(args.model, list) else [args.model]
    if len(paths) > 1:
        from emitter.commands.group import check_group_args

        check_group_args(args, paths, names)
        return emit_group(args, paths, names[0])
    if args.concurrent:
        raise UsageError("--concurrent goes with several models (each then gets its own arena)")
    args.model = paths[0]
    if (args.junit or args.json) and not args.verify:
        raise UsageError("--junit and --json report a verification: use them with `mcugen verify` or --verify")
    out_dir = Path(args.output) if args.output else Path(Path(args.model).stem)
    results = []
    # --json: stdout holds the JSON document alone; everything else goes to stderr
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        for name in names:
            result = emit_one(args, name, out_dir / name if len(names) > 1 else out_dir)
            if result is not None:
                results.append(result)
    if not args.verify:
        return 0
    status = overall_status(results)
    doc = document(args.model, results, status)
    if args.junit:
        Path(args.junit).parent.mkdir(parents=True, exist_ok=True)
        Path(args.junit).write_text(junit_xml(doc))
    if args.json:
        import json

        print(json.dumps(doc, indent=1))
    for r in results:
        if r.error is not None:
            raise r.error
    return 0


def emit_one(args: argparse.Namespace, board_name: str, out_dir: Path) -> BoardResult | None:
    """Emit (and with --verify verify) the bundle for one board into out_dir. A verification that
    stops (a mismatch, a failing build or run) is returned in the result, not raised, so that the
    other boards still run and the JUnit file is written; errors before it are raised."""
    from emitter.boards import load_board
    from emitter.render.bundle import render_bundle
    from emitter.render.write import write_bundle
    from emitter.report.summary import summary

    board = load_board(board_name)
    backend, cmsis, why = choose_backend(args.backend, board)
    if getattr(args, "tune", False) and backend != "cmsis-nn":
        raise UsageError("--tune measures mcugen's kernels against CMSIS-NN's: it needs the cmsis-nn backend "
                         "and CMSIS_NN_PATH set to a CMSIS-NN source tree (e.g. export CMSIS_NN_PATH=/opt/cmsis-nn)"
                         + ("" if cmsis is None else f"; backend {backend} was chosen"))
    if args.inputs and not Path(args.inputs).is_file():  # before the model is compiled: fast
        raise UsageError(f"--inputs '{args.inputs}' is not a file (an .npz with one array per input name)")
    t0 = time.perf_counter()
    ram_src = ram_budget(args, board)[1]
    compiled = compile_one(args, args.model, args.name, board, backend, cmsis)
    from emitter.commands.frontend import bind_frontend

    frontend = bind_frontend(args, compiled)
    if args.verify:  # every input verification reads, checked before anything is written or built
        from emitter.verify.run import check_inputs

        check_inputs(compiled, args.inputs, args.samples)
    elif args.inputs:
        raise UsageError("--inputs goes with --verify (the reference inputs to verify the bundle with)")
    tests = None
    if args.verify:  # the bundle's regression test (test/): verify's samples and the golden outputs
        from emitter.verify.bundle_test import bundle_test_files

        tests = bundle_test_files(compiled, board, args.inputs, args.samples)
    files = render_bundle(compiled, " ".join(board.cflags), board.name, frontend, tests=tests)
    import json

    from emitter.report.codesize import code_bytes
    from emitter.report.summary import budget_line, overhead_line

    rep = json.loads(files["report.json"])
    weight_bytes = rep["weight_bytes"]
    figure = rep.get("code")  # the one code figure (report.codesize.code_figure), as report.json/html state it
    code = figure["bytes"] if figure else code_bytes(files, sum(1 for p in compiled.prepared if p.kernel),
                                                     board.core, compiled.optimize)[0]
    check_budgets(args, board, compiled, weight_bytes, code, frontend)
    kept = write_bundle(files, out_dir, force=args.force)
    elapsed = time.perf_counter() - t0
    note = budget_line(board, ram_src, "--flash-budget" if args.flash_budget else f"board {board.name}")
    if not args.quiet:
        print(summary(compiled, weight_bytes, board.name, why, board.has_fpu, code, figure, note))
    elif (cost := overhead_line(compiled)) is not None:  # a slow plan is never taken silently
        print(cost)
    if frontend is not None:
        from emitter.commands.frontend import summary_line

        print(summary_line(frontend))
    print(f"wrote {out_dir}/ ({len(files)} files) in {elapsed:.2f} s"
          + (f"; kept what mcugen did not write there: {', '.join(kept)}" if kept else ""))
    if not args.verify:
        return None
    from emitter.verify.ci_report import BoardResult
    from emitter.verify.run import run_verify

    result = BoardResult(board.name, frontend_asked=frontend is not None,
                         qemu_skipped="--no-qemu" if args.no_qemu else None)
    try:
        from emitter.target.toolchain import firmware_cc

        report = run_verify(compiled, out_dir, board, Path(args.model), args.inputs, args.samples,
                            qemu=not args.no_qemu, cc=firmware_cc(args.cc))
        result.figures = report.figures
        print(report.text())
        if frontend is not None and report.ok:
            from emitter.commands.frontend import verify_frontend

            result.error_stage = "frontend"
            report.figures["frontend"] = verify_frontend(args, frontend, compiled, out_dir, board)
            result.error_stage = "verify"
        if args.profile and not args.no_qemu and report.ok:
            report.figures["layers"] = profile_report(compiled, out_dir, board, args)
        measured = record_figures(out_dir / "report.json", board.name, report.figures)
        if measured is not None and measured["source"] == "measured" and not args.quiet:
            from emitter.report.summary import code_line

            print(code_line(weight_bytes, measured, compiled))
        if not report.ok:
            result.error_stage = "mismatch"
            raise VerifyError(report.culprit())
    except McugenError as exc:
        if args.debug:
            raise
        result.error = exc
        if exc.verify_figures is not None:  # stopped part way: keep the checks that ran
            result.figures = exc.verify_figures
    return result


def compile_one(args: argparse.Namespace, model: str, name: str | None, board: Board, backend: str,
                cmsis: Path | None) -> Compiled:
    """Compile one model with the options of `args` (as emit does, whether alone or in a group)."""
    from emitter.compiler import compile_model
    from emitter.onnx.load import parse_input_shapes
    from emitter.verify.tuning import tune_layers

    ram, ram_src = ram_budget(args, board)
    # a front end keeps feature rows in the model input between runs: the input stays the caller's
    memory = "layer" if getattr(args, "frontend", None) else args.memory
    return compile_model(model, name=name, input_shapes=parse_input_shapes(args.input_shape),
                         io_nhwc=args.io_layout == "nhwc", guard=args.guard, backend=backend,
                         board=board, cmsis_path=cmsis,
                         cmsis_choice="cmsis" if args.cmsis_everywhere else "fastest",
                         memory=memory, ram_budget=ram, budget_src=ram_src,
                         numerics=None if args.numerics == "auto" else args.numerics, optimize=args.optimize,
                         tune=tune_layers if getattr(args, "tune", False) else None,
                         pools=tuple(getattr(args, "pool", None) or ()))


def emit_group(args: argparse.Namespace, paths: list[str], board_name: str) -> int:
    """Several models, one bundle (emitter/render/group.py): each compiled and checked against the
    budgets as if alone, then one bundle; with --verify each model is verified in it (host and
    QEMU), every model's check runs before the first failure is raised."""
    from emitter.boards import load_board
    from emitter.commands.group import model_names
    from emitter.render.group import check_names, render_group
    from emitter.render.write import write_bundle
    from emitter.report.summary import summary

    board = load_board(board_name)
    backend, cmsis, why = choose_backend(args.backend, board)
    names = model_names(args.name, paths)
    check_names(names)
    t0 = time.perf_counter()
    models = [compile_one(args, path, name, board, backend, cmsis) for path, name in zip(paths, names, strict=True)]
    files, figures = render_group(models, " ".join(board.cflags), board.name, concurrent=args.concurrent)
    import json

    from emitter.report.codesize import code_bytes
    from emitter.report.summary import budget_line, overhead_line

    codes = []
    for c in models:  # each model's budgets as if it were alone
        rep = json.loads(files[f"{c.name}_report.json"])
        figure = rep.get("code")
        code = figure["bytes"] if figure else code_bytes(files, sum(1 for p in c.prepared if p.kernel),
                                                         board.core, c.optimize)[0]
        codes.append((rep["weight_bytes"], code, figure))
        check_budgets(args, board, c, rep["weight_bytes"], code)
    out_dir = Path(args.output) if args.output else Path("_".join(names))
    kept = write_bundle(files, out_dir, force=args.force)
    note = budget_line(board, ram_budget(args, board)[1],
                       "--flash-budget" if args.flash_budget else f"board {board.name}")
    for c, (weights, code, figure) in zip(models, codes, strict=True):
        if not args.quiet:
            print(summary(c, weights, board.name, why, board.has_fpu, code, figure, note))
        elif (cost := overhead_line(c)) is not None:
            print(cost)
    for line in figures.lines():
        print(line)
    print(f"wrote {out_dir}/ ({len(files)} files) in {time.perf_counter() - t0:.2f} s"
          + (f"; kept what mcugen did not write there: {', '.join(kept)}" if kept else ""))
    if not args.verify:
        return 0
    from emitter.target.toolchain import firmware_cc
    from emitter.verify.run import run_verify

    failed: list[str] = []
    for c, path in zip(models, paths, strict=True):
        print(f"verify {c.name}:")
        report = run_verify(c, out_dir, board, Path(path), None, args.samples, qemu=not args.no_qemu,
                            cc=firmware_cc(args.cc))
        print(report.text())
        if not report.ok:
            failed.append(f"{c.name}: {report.culprit()}")
    if failed:
        raise VerifyError("; ".join(failed))
    return 0


def profile_report(compiled: Compiled, out_dir: Path, board: Board, args: argparse.Namespace) -> list[dict]:
    """Print the per-layer instruction profile; return it for report.json."""
    import tempfile

    from emitter.verify.profile import profile_layers, profile_title
    from emitter.verify.run import load_inputs

    samples = load_inputs(compiled, args.inputs, args.samples)
    with tempfile.TemporaryDirectory(prefix="mcugen-profile-") as tmp:
        prof = profile_layers(compiled, out_dir, board, samples, Path(tmp))
    print(profile_title(compiled, board.name))
    print(prof.table())
    return [{"index": lay.index, "name": lay.name, "kernel": lay.kernel, "macs": lay.macs,
             "path": lay.path, "instructions": lay.instructions} for lay in prof.layers]


def record_figures(report_path: Path, board: str, figures: dict) -> dict | None:
    """Add the measured figures of a verification run to the bundle's report.json, and show them
    in its report.html; the measured code size becomes the bundle's code figure ("code"), which
    is returned."""
    import json

    from emitter.report.codesize import code_figure

    data = json.loads(report_path.read_text())
    data.setdefault("measured", {})[board] = figures
    code = code_figure(data)
    if code is not None:
        data["code"] = code
    report_path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    from emitter.report.html import report_html

    report_path.with_name("report.html").write_text(report_html(json.loads(report_path.read_text())))
    return code


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code (argparse exits 2 itself on bad usage)."""
    args = build_parser().parse_args(with_command(list(sys.argv[1:] if argv is None else argv)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", McugenWarning)
            warnings.showwarning = _show_warning
            status = args.run(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except (McugenError, KeyboardInterrupt, BrokenPipeError) as exc:
        if isinstance(exc, BrokenPipeError):
            _drop_stdout()
        elif isinstance(exc, McugenError):
            if args.debug:
                raise
            print(f"mcugen: error: {exc}", file=sys.stderr)
        status = exit_status(exc)
        assert status is not None
        return status


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """A McugenWarning as one `mcugen: warning: ...` line on stderr; others as Python prints them."""
    if issubclass(category, McugenWarning):
        print(f"mcugen: warning: {message}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def with_command(argv: list[str]) -> list[str]:
    """`mcugen MODEL.onnx ...` -> `mcugen emit MODEL.onnx ...`: emit is the default command."""
    if not argv or argv[0] in COMMANDS or argv[0] in ("-h", "--help", "--version"):
        return argv
    return ["emit", *argv]


def _drop_stdout() -> None:
    """stdout's reader has gone (mcugen's own subprocesses have no pipe to write to, so a
    BrokenPipeError is stdout's): point stdout at /dev/null, so that nothing more, not even
    Python's flush at exit, complains."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # not a real file (e.g. captured): nothing to redirect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
