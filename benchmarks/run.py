#!/usr/bin/env python3
"""Benchmark mcugen on the shared MLPerf Tiny / TFLM models x the generic Cortex-M cores.

For every model x core: emit time (median of --repeat in-process compile_model + render_bundle
runs), arena and liveness figures (ours, and TFLM's from NAME_info.json), the firmware built with
arm-none-eabi-gcc (emitter.target.build_firmware: model flash/RAM, whole-image flash/RAM), and a
QEMU run on the 8 reference inputs of NAME_ref.npz (emitter.target.run_qemu: executed instructions
per inference, inference stack, bit-exactness against TFLM's `tflm_outputs`). Writes
OUT/benchmarks.md and OUT/benchmarks.json.

    python benchmarks/run.py [--cores cortex-m4,cortex-m7] [--models mlperf_kws_dscnn] [--out docs]

Instruction counts are not cycles; compare them only within one core.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from emitter.boards import load_board  # noqa: E402
from emitter.compiler import compile_model  # noqa: E402
from emitter.errors import McugenError  # noqa: E402
from emitter.render.bundle import render_bundle  # noqa: E402
from emitter.render.write import write_bundle  # noqa: E402
from emitter.target.firmware import build_firmware  # noqa: E402
from emitter.target.qemu import run_qemu  # noqa: E402
from emitter.verify.harness import pack, unpack, write_glue  # noqa: E402
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS  # noqa: E402

CORES = ("cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m33", "cortex-m55")
# MLPerf Tiny benchmark -> shared model
MLPERF = {"kws": "mlperf_kws_dscnn", "vww": "mlperf_vww_mobilenetv1", "ic": "mlperf_ic_resnet8",
          "ad": "mlperf_ad_fc_autoencoder"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python benchmarks/run.py",
        description="Emit, cross-compile and run in QEMU every shared model on every generic "
                    "Cortex-M core; write OUT/benchmarks.md and OUT/benchmarks.json.",
        epilog="Needs arm-none-eabi-gcc, newlib, qemu-system-arm, gcc and scons (see README). "
               "Instruction counts are QEMU executed instructions, not cycles: compare them only "
               "within one core.")
    p.add_argument("--cores", default=",".join(CORES),
                   help=f"comma-separated generic cores (default: {','.join(CORES)})")
    p.add_argument("--models", default=",".join(MODEL_NAMES),
                   help="comma-separated model names under --models-dir (default: all six shared "
                        "models)")
    p.add_argument("--models-dir", type=Path, default=SHARED_MODELS,
                   help="folder holding NAME/NAME.onnx, NAME_info.json, NAME_ref.npz "
                        "(default: ../shared/models)")
    p.add_argument("--out", type=Path, default=REPO / "docs",
                   help="where benchmarks.md and benchmarks.json go (default: docs)")
    p.add_argument("--opt", default="-O2", help="optimisation level of bundle + harness (default -O2)")
    p.add_argument("--repeat", type=int, default=3,
                   help="compile+render runs per model x core; the median is reported (default 3)")
    p.add_argument("--work", type=Path, default=None,
                   help="keep bundles and firmware in this folder (default: a temporary folder)")
    p.add_argument("--peers", type=Path, default=None,
                   help="peer_figures.json (default: MODELS_DIR/peer_figures.json)")
    p.add_argument("--commit", metavar="REV", default=None,
                   help="benchmark a clean export (git archive) of revision REV instead of the "
                        "working tree, e.g. HEAD while others edit the tree; this script and the "
                        "output folder stay the ones given here")
    return p.parse_args(argv)


def first_line(*command: str) -> str:
    try:
        res = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as exc:
        return f"unavailable ({exc.strerror})"
    return (res.stdout.strip().splitlines() or ["unknown"])[0]


def source_digest() -> str:
    """sha256 over the sources that decide the figures (emitter/, mcu_runtime/, templates/, boards/,
    SConstruct): equal at the start and end of a run, or the tree changed while it ran."""
    h = hashlib.sha256()
    for top in ("emitter", "mcu_runtime", "templates", "boards", "SConstruct"):
        root = REPO / top
        for path in sorted([root] if root.is_file() else root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def git_state() -> str:
    if os.environ.get("MCUGEN_BENCH_SOURCE"):  # set by --commit for the exported copy
        return os.environ["MCUGEN_BENCH_SOURCE"]
    head = first_line("git", "-C", str(REPO), "rev-parse", "--short", "HEAD")
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return f"{head} + uncommitted changes" if dirty else head


def emit_seconds(model: Path, board, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        c = compile_model(model, name="net")
        render_bundle(c, " ".join(board.cflags), board.name)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_one(name: str, core: str, args: argparse.Namespace, work: Path) -> dict:
    folder = args.models_dir / name
    model = folder / f"{name}.onnx"
    info = json.loads((folder / f"{name}_info.json").read_text())
    ref = np.load(folder / f"{name}_ref.npz")
    board = load_board(core)
    row: dict = {"model": name, "core": core, "opt": args.opt,
                 "emit_seconds": emit_seconds(model, board, args.repeat)}
    c = compile_model(model, name="net")
    io_bytes = sum(c.graph.t(n).size for n in (*c.graph.inputs, *c.graph.outputs))
    row.update(arena_bytes=c.plan.arena_size, liveness_lower_bound_bytes=c.plan.lower_bound,
               arena_plus_io_bytes=c.plan.arena_size + io_bytes,
               tflm_arena_head_bytes=info["tflm_arena"]["recording_head"],
               tflm_liveness_lower_bound_bytes=info["liveness"]["activation_lower_bound_bytes"])
    here = work / name / core
    bundle = here / "bundle"
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), bundle, force=True)
    write_glue(c, here / "glue")
    try:
        fw = build_firmware(bundle, here / "glue", board, here / "fw", opt=args.opt)
    except McugenError as exc:
        row["error"] = f"build failed (does the model fit {core}'s test image?): {exc}"
        return row
    row.update(model_flash_bytes=fw.model_flash, model_ram_bytes=fw.model_ram,
               firmware_flash_bytes=fw.flash, firmware_ram_bytes=fw.ram,
               code_region_bytes=board.code_length, data_region_bytes=board.data_length)
    samples = [[x.astype(np.int8).reshape(c.input_shapes[0])] for x in ref["inputs"]]
    run_dir = here / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "input.bin").write_bytes(pack(samples))
    try:
        run = run_qemu(fw.elf, board, run_dir, timeout=600)
    except McugenError as exc:
        row["error"] = f"QEMU run failed: {exc}"
        return row
    got = unpack(c, (run_dir / "output.bin").read_bytes(), len(samples))
    want = ref["tflm_outputs"]
    differ = sum(int((g[0].ravel() != w.ravel()).sum()) for g, w in zip(got, want))
    counts = list(run.instructions)
    row.update(stack_bytes=run.stack_bytes, instructions=counts,
               instructions_median=statistics.median(counts),
               instructions_min=min(counts), instructions_max=max(counts),
               samples=len(samples), tflm_elements=int(want.size), tflm_elements_differ=differ,
               bit_exact_vs_tflm=differ == 0 and len(got) == len(want))
    return row


def peer_table(peers: dict, rows: list[dict]) -> tuple[list[str], dict]:
    """Markdown lines and JSON of peers' activation buffers next to ours (MLPerf models only)."""
    ours = {r["model"]: r for r in rows}
    benches = list(MLPERF)
    table: dict[str, dict[str, int | None]] = {}

    def our(key: str) -> dict[str, int | None]:
        return {b: (ours[m][key] if m in ours else None) for b, m in MLPERF.items()}

    table["mcugen arena (graph I/O in the caller's buffers)"] = our("arena_bytes")
    table["mcugen arena + graph input/output"] = our("arena_plus_io_bytes")
    table["mcugen liveness lower bound of its schedule"] = our("liveness_lower_bound_bytes")
    table["TFLM arena head (NAME_info.json)"] = our("tflm_arena_head_bytes")
    sources: dict[str, list[str]] = {}
    for entry in peers.get("activation_buffers", []):
        parts = entry["path"].split("/")
        submitter, system = parts[1], parts[3]
        what = ("`TVMGEN_DEFAULT_WORKSPACE_SIZE`" if "TVMGEN" in entry["decl"]
                else "`scratch_buffer`" if "scratch_buffer" in entry["decl"] else "`" + entry["decl"] + "`")
        label = f"{submitter} {system} (v{entry['round']}) {what}"
        table.setdefault(label, dict.fromkeys(benches))[entry["bench"]] = entry["bytes"]
        sources.setdefault(label, []).append(f"{entry['commit'][:12]}:{entry['path']}")
    lines = ["| activation buffer (bytes) | " + " | ".join(b.upper() for b in benches) + " |",
             "|---|" + "---:|" * len(benches)]
    for label, values in table.items():
        cells = [f"{values[b]:,}" if values[b] is not None else "—" for b in benches]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines, {"benches": benches, "models": MLPERF, "rows": table, "sources": sources}


def fmt_int(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.1f}"
    return f"{int(v):,}"


def main_table(rows: list[dict]) -> list[str]:
    head = ["model", "core", "emit (s)", "arena", "our liveness LB", "TFLM arena head",
            "TFLM-graph liveness LB", "model flash", "model RAM", "inference stack",
            "firmware flash", "firmware RAM", "instructions / inference (median)",
            "min..max", "bit-exact vs TFLM", "opt"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * 12 + "---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['core']} | {r['emit_seconds']:.3f} | "
                         f"{fmt_int(r['arena_bytes'])} | {fmt_int(r['liveness_lower_bound_bytes'])} | "
                         f"{fmt_int(r['tflm_arena_head_bytes'])} | "
                         f"{fmt_int(r['tflm_liveness_lower_bound_bytes'])} | "
                         + " | ".join(["—"] * 7) + f" | **{r['error'].splitlines()[0]}** | {r['opt']} |")
            continue
        cells = [r["model"], r["core"], f"{r['emit_seconds']:.3f}", fmt_int(r["arena_bytes"]),
                 fmt_int(r["liveness_lower_bound_bytes"]), fmt_int(r["tflm_arena_head_bytes"]),
                 fmt_int(r["tflm_liveness_lower_bound_bytes"]), fmt_int(r["model_flash_bytes"]),
                 fmt_int(r["model_ram_bytes"]), fmt_int(r["stack_bytes"]),
                 fmt_int(r["firmware_flash_bytes"]), fmt_int(r["firmware_ram_bytes"]),
                 fmt_int(r["instructions_median"]),
                 f"{r['instructions_min']:,}..{r['instructions_max']:,}",
                 "yes" if r["bit_exact_vs_tflm"] else
                 f"**no** ({r['tflm_elements_differ']}/{r['tflm_elements']} differ)", r["opt"]]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_docs(out: Path, meta: dict, rows: list[dict], peers: dict) -> None:
    peer_lines, peer_json = peer_table(peers, rows)
    cores = sorted({r["core"] for r in rows}, key=lambda c: CORES.index(c) if c in CORES else 99)
    md = [
        "# mcugen benchmarks",
        "",
        f"Generated by `{meta['command']}` on {meta['date']} (UTC) from the repository root; "
        "the same figures are in `benchmarks.json`.",
        "",
        *([f"**Warning: {meta['warning']}.**", ""] if "warning" in meta else []),
        f"- Source: commit {meta['source']} (sources sha256 `{meta['source_digest'][:16]}`).",
        f"- Toolchain: `{meta['toolchain']['arm-none-eabi-gcc']}`; "
        f"`{meta['toolchain']['qemu-system-arm']}`; host `{meta['toolchain']['gcc']}`; "
        f"Python {meta['python']}.",
        f"- Models: the shared MLPerf Tiny / TFLM models (`../shared/models`), portable C99 kernels "
        f"(mcugen's own; no CMSIS-NN), bundle and harness compiled at `{meta['opt']}`. Cores: "
        f"{', '.join(cores)} (QEMU machines as in `mcugen boards`).",
        "- **Instructions are QEMU executed-instruction counts per inference (mcugen's TCG plugin), "
        "not cycles: compare them only within one core, never across cores.** Median and range over "
        "the 8 reference inputs of `NAME_ref.npz`.",
        "- Bit-exact: the QEMU outputs on those 8 inputs equal TFLM's `tflm_outputs` element for "
        "element.",
        f"- Emit time: median of {meta['repeat']} in-process `compile_model` + `render_bundle` runs "
        "(no file writes), seconds, on this machine.",
        "- Bytes throughout. *arena*: mcugen's planned arena; graph input and output live in the "
        "caller's buffers and are not in it. *our liveness LB*: the lower bound of mcugen's own "
        "schedule (same convention). *TFLM arena head* (`tflm_arena.recording_head`) and "
        "*TFLM-graph liveness LB* (`liveness.activation_lower_bound_bytes`) come from "
        "`NAME_info.json` and include the graph input/output, so they can exceed our arena.",
        "- *model flash/RAM*: the bundle's share of the firmware (code + weights + .data / .data + "
        ".bss incl. the arena), from the linker map; *firmware flash/RAM*: the whole test image "
        "(harness, start-up code, newlib semihosting stdio), from `arm-none-eabi-size`, RAM without "
        "the stack; *inference stack*: deepest stack use of one inference (stack painting).",
        "",
        "## Per model and core",
        "",
        *main_table(rows),
        "",
        "## Activation buffers next to peers' (MLPerf Tiny models)",
        "",
        "Peers' figures are the buffers their generated code declares for the same reference models "
        "(`../shared/models/peer_figures.json`, from the MLPerf Tiny results repositories; whether "
        "they include the network input/output or kernel scratch was not checked). *mcugen arena + graph input/output* is "
        "the activation RAM when the caller keeps separate input and output buffers; TFLM (and "
        "possibly the peers) place those in the arena, where they can share bytes with "
        "intermediate tensors (AD: input and output are 640 B each but never live at the same time, "
        "so TFLM's head is 768 B).",
        "",
        *peer_lines,
        "",
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "benchmarks.md").write_text("\n".join(md))
    (out / "benchmarks.json").write_text(json.dumps(
        {**meta, "rows": rows, "peer_activation_buffers": peer_json}, indent=1) + "\n")


def run_exported(args: argparse.Namespace, argv: list[str]) -> int:
    """--commit: export REV with git archive, run this script there (same options), output here."""
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", f"{args.commit}^{{commit}}"],
                         capture_output=True, text=True, check=False)
    if rev.returncode != 0:
        print(f"run.py: --commit {args.commit}: {rev.stderr.strip()}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mcugen-bench-src-") as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", args.commit],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        script = Path(tmp) / "benchmarks" / "run.py"
        script.parent.mkdir(exist_ok=True)
        script.write_bytes(Path(__file__).read_bytes())
        rest, skip = [], False
        for a in argv:  # drop --commit REV / --commit=REV
            if skip:
                skip = False
            elif a == "--commit":
                skip = True
            elif not a.startswith("--commit="):
                rest.append(a)
        rest += ["--out", str(args.out.resolve()), "--models-dir", str(args.models_dir.resolve())]
        if args.peers is not None:
            rest += ["--peers", str(args.peers.resolve())]
        env = dict(os.environ, MCUGEN_BENCH_SOURCE=f"{rev.stdout.strip()} (clean export of "
                                                     f"{args.commit})",
                   MCUGEN_BENCH_COMMAND=shlex.join(["python", "benchmarks/run.py", *argv]))
        return subprocess.run([sys.executable, str(script), *rest], cwd=tmp, env=env,
                              check=False).returncode


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.commit:
        return run_exported(args, argv)
    cores = [c.strip() for c in args.cores.split(",") if c.strip()]
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    for core in cores:
        if not load_board(core).is_generic:
            print(f"run.py: {core} is a named board; give generic cores ({', '.join(CORES)})",
                  file=sys.stderr)
            return 2
    for m in models:
        if not (args.models_dir / m / f"{m}.onnx").is_file():
            print(f"run.py: no {args.models_dir / m / (m + '.onnx')}", file=sys.stderr)
            return 2
    peers_path = args.peers or args.models_dir / "peer_figures.json"
    peers = json.loads(peers_path.read_text()) if peers_path.is_file() else {}
    meta = {
        "command": os.environ.get("MCUGEN_BENCH_COMMAND")
                   or shlex.join(["python", "benchmarks/run.py", *argv]),
        "date": subprocess.run(["date", "-u", "+%F"], capture_output=True, text=True,
                               check=True).stdout.strip(),
        "toolchain": {"arm-none-eabi-gcc": first_line("arm-none-eabi-gcc", "--version"),
                      "qemu-system-arm": first_line("qemu-system-arm", "--version"),
                      "gcc": first_line("gcc", "--version")},
        "python": sys.version.split()[0],
        "source": git_state(), "source_digest": source_digest(),
        "opt": args.opt, "repeat": args.repeat,
        "note": "instructions are QEMU executed-instruction counts, not cycles; compare only "
                "within one core",
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="mcugen-bench-") as tmp:
        work = args.work.resolve() if args.work else Path(tmp)
        for name in models:
            for core in cores:
                t0 = time.perf_counter()
                row = bench_one(name, core, args, work)
                rows.append(row)
                status = row.get("error", "").splitlines()[0] if "error" in row else (
                    f"{row['instructions_median']:,.0f} instr, bit-exact "
                    f"{'yes' if row['bit_exact_vs_tflm'] else 'NO'}")
                print(f"{name:<26} {core:<14} {status} ({time.perf_counter() - t0:.1f} s)", flush=True)
    if source_digest() != meta["source_digest"]:
        meta["warning"] = ("the sources (emitter/, mcu_runtime/, templates/, boards/) changed while "
                           "this ran: rows may mix versions; run again on a quiet tree")
        print(f"run.py: warning: {meta['warning']}", file=sys.stderr)
    write_docs(args.out, meta, rows, peers)
    print(f"wrote {args.out / 'benchmarks.md'} and {args.out / 'benchmarks.json'}")
    bad = [r for r in rows if "error" in r or not r.get("bit_exact_vs_tflm")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
