#!/usr/bin/env python3
"""Memory plans of the shared models: activation RAM per plan kind, measured instruction overhead.

For every shared model x core: each plan mcugen offers (emitter/plan/search.py: layer, inplace,
overlap, stream) is emitted, cross-compiled and run in QEMU on the 8 reference inputs of
NAME_ref.npz; the table gives its activation RAM (arena + the caller's input/output buffers),
the overhead it was estimated to cost and the overhead measured (executed instructions vs the
layer plan of the same backend), and whether it is bit-exact with TFLM's `tflm_outputs`. TFLM's arena
(NAME_info.json) and the peers' activation buffers (../shared/models/peer_figures.json) stand
beside it. `default` is the plan `mcugen emit` takes with no budget option (the board's own RAM:
the smallest plan within FREE_OVERHEAD estimated instructions, emitter/plan/search.py); `estimate
error` compares the estimated instructions of the plan (the base + its overhead) with QEMU's count.
`budget` is the fastest plan within the RAM budget issue 23 sets for the model (BUDGETS). Each
backend (--backends portable,cmsis-nn; cmsis-nn: CMSIS_NN_PATH, else ../shared's v7.0.0) is
measured against its own whole-layer plan, and a summary table gives, per model, core and backend,
the budget plan's and the smallest plan's instructions over the whole-layer plan's.
Writes OUT/memory.md and OUT/memory.json; --kinds / --backends measure some only and merge them
into OUT/memory.json (the rows of the same model, core, backend and kind replaced).

    python benchmarks/memory.py [--cores cortex-m4,cortex-m7,cortex-m55] [--models ...] [--kinds ...]
                                [--backends portable,cmsis-nn] [--out docs]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from emitter.boards import load_board  # noqa: E402
from emitter.compiler import compile_model  # noqa: E402
from emitter.plan.search import activation_ram  # noqa: E402
from emitter.render.bundle import render_bundle  # noqa: E402
from emitter.render.write import write_bundle  # noqa: E402
from emitter.target.firmware import build_firmware  # noqa: E402
from emitter.target.qemu import run_qemu  # noqa: E402
from emitter.verify.harness import pack, unpack, write_glue  # noqa: E402
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS  # noqa: E402

KINDS = ("layer", "inplace", "overlap", "stream", "near", "default", "budget")
# near: the fastest plan within 110 % of the smallest; default: `mcugen emit`'s plan on the board's own RAM;
# budget: the fastest plan within BUDGETS (issue 23's acceptance figures, activation RAM in bytes)
BUDGETS = {"mlperf_vww_mobilenetv1": 36_000, "mlperf_ic_resnet8": 32_000, "mlperf_kws_dscnn": 9_000,
           "tflm_micro_speech": 2_600}
BACKENDS = ("portable", "cmsis-nn")
PEERS = {"mlperf_vww_mobilenetv1": "vww", "mlperf_ic_resnet8": "ic", "mlperf_kws_dscnn": "kws",
         "mlperf_ad_fc_autoencoder": "ad"}
TIGRIS = {"mlperf_vww_mobilenetv1": 45_792}  # the memory issue: TiGrIS, activation RAM incl. its input


def cmsis_nn_path() -> Path:
    """CMSIS_NN_PATH, else the v7.0.0 tree beside the repo (as the tests take it)."""
    return Path(os.environ.get("CMSIS_NN_PATH") or REPO.parent / "shared" / "third_party" / "CMSIS-NN-7.0.0")


def measure(name: str, core: str, kind: str, work: Path, smallest: int = 0, backend: str = "portable") -> dict:
    folder = SHARED_MODELS / name
    ref = np.load(folder / f"{name}_ref.npz")
    board = load_board(core)
    cmsis = cmsis_nn_path() if backend == "cmsis-nn" else None
    opts = {"name": "net", "board": board, "backend": backend, "cmsis_path": cmsis}
    if kind == "near":
        c = compile_model(folder / f"{name}.onnx", memory="auto", ram_budget=smallest * 11 // 10, **opts)
    elif kind == "default":  # as emitter/cli.ram_budget names the board's own RAM
        c = compile_model(folder / f"{name}.onnx", memory="auto", ram_budget=board.ram_bytes,
                          budget_src=f"board {board.name} RAM", **opts)
    elif kind == "budget":
        c = compile_model(folder / f"{name}.onnx", memory="auto", ram_budget=BUDGETS[name], **opts)
    else:
        c = compile_model(folder / f"{name}.onnx", memory=kind, **opts)
    row = {"model": name, "core": core, "backend": backend, "kind": kind, "chosen": c.plan.schedule.kind,
           "activation_ram_bytes": activation_ram(c.graph, c.plan), "arena_bytes": c.plan.arena_size,
           "estimated_overhead": 0.0 if c.memory is None else round(c.memory.ratio(c.memory.chosen), 4),
           "estimated_instructions": None if c.memory is None else c.memory.base + c.memory.chosen.overhead}
    here = work / name / core / backend / kind
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), here / "bundle", force=True)
    write_glue(c, here / "glue")
    fw = build_firmware(here / "bundle", here / "glue", board, here / "fw", cmsis_nn=cmsis)
    samples = [[x.astype(np.int8).reshape(c.input_shapes[0])] for x in ref["inputs"]]
    (here / "run").mkdir(parents=True, exist_ok=True)
    (here / "run" / "input.bin").write_bytes(pack(samples))
    run = run_qemu(fw.elf, board, here / "run", timeout=900)
    got = unpack(c, (here / "run" / "output.bin").read_bytes(), len(samples))
    want = ref["tflm_outputs"]
    row.update(instructions=statistics.median(run.instructions), stack_bytes=run.stack_bytes,
               model_ram_bytes=fw.model_ram,
               bit_exact_vs_tflm=all(np.array_equal(g[0].ravel(), w.ravel()) for g, w in zip(got, want, strict=True)))
    return row


def key(r: dict) -> tuple[str, str, str]:
    """(model, core, backend) of a row (rows from before --backends are portable)."""
    return r["model"], r["core"], r.get("backend", "portable")


def table(rows: list[dict]) -> list[str]:
    base = {key(r): r["instructions"] for r in rows if r["kind"] == "layer"}
    lines = ["| model | core | backend | plan | activation RAM (B) | vs layer plan | instructions | overhead measured "
             "| overhead estimated | estimate error | bit-exact vs TFLM |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    layer_ram = {key(r): r["activation_ram_bytes"] for r in rows if r["kind"] == "layer"}
    for r in rows:
        b = base.get(key(r))
        over = f"{r['instructions'] / b - 1:+.1%}" if b else "—"
        whole = layer_ram.get(key(r))
        ratio = f"{r['activation_ram_bytes'] / whole:.0%}" if whole else "—"
        kind = r["kind"] if r["chosen"] == r["kind"] else f"{r['kind']} ({r['chosen']})"
        est = r.get("estimated_instructions")
        err = f"{est / r['instructions'] - 1:+.1%}" if est else "—"
        lines.append(f"| {r['model']} | {r['core']} | {key(r)[2]} | {kind} | {r['activation_ram_bytes']:,} | {ratio} | "
                     f"{r['instructions']:,.0f} | {over} | {r['estimated_overhead']:+.1%} | {err} | "
                     f"{'yes' if r['bit_exact_vs_tflm'] else 'NO'} |")
    return lines


KEEP = "## Memory pools"  # OUT/memory.md from this heading on is written by hand


def default_plans(rows: list[dict]) -> list[str]:
    """The default plan (free savings) against today's whole-layer plan, per model and core."""
    got = {(r["model"], r["core"], r["kind"]): r for r in rows if key(r)[2] == "portable"}
    lines = ["## The default plan", "",
             "`mcugen emit` without --ram-budget/--ram-reserve takes the smallest plan whose estimated overhead is "
             "at most FREE_OVERHEAD (2 %, emitter/plan/search.py) within the board's RAM; before, the whole-layer "
             "plan. `--memory layer` keeps whole layers.", "",
             "| model | core | default plan | activation RAM (B) | whole-layer RAM (B) | instructions | whole-layer "
             "instructions | measured change |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for (name, core, kind), r in got.items():
        layer = got.get((name, core, "layer"))
        if kind != "default" or layer is None:
            continue
        lines.append(f"| {name} | {core} | {r['chosen']} | {r['activation_ram_bytes']:,} | "
                     f"{layer['activation_ram_bytes']:,} | {r['instructions']:,.0f} | {layer['instructions']:,.0f} | "
                     f"{r['instructions'] / layer['instructions'] - 1:+.2%} |")
    return [*lines, ""]


def acceptance(rows: list[dict]) -> list[str]:
    """Per model, core and backend: the budget plan's and the smallest plan's instructions over the
    whole-layer plan's (issue 23: <= 1.10 at BUDGETS, <= 1.35 for the smallest)."""
    lines = ["## Small and fast together", "",
             "Instructions over the whole-layer plan of the same backend and core: the fastest plan within "
             "the budget (issue 23's figures: " + ", ".join(f"{n} {b:,} B" for n, b in BUDGETS.items())
             + "; target <= 1.10) and the smallest plan measured (target <= 1.35).", "",
             "| model | core | backend | budget (B) | budget plan (B) | its instructions / whole layers "
             "| smallest plan (B) | its instructions / whole layers |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for k in dict.fromkeys(key(r) for r in rows):
        mine = [r for r in rows if key(r) == k]
        layer = next((r for r in mine if r["kind"] == "layer"), None)
        if layer is None:
            continue
        small = min(mine, key=lambda r: (r["activation_ram_bytes"], r["instructions"]))
        bud = next((r for r in mine if r["kind"] == "budget"), None)
        b_cols = (f"{BUDGETS[k[0]]:,} | {bud['activation_ram_bytes']:,} | {bud['instructions'] / layer['instructions']:.2f}"
                  if bud else "— | — | —")
        lines.append(f"| {k[0]} | {k[1]} | {k[2]} | {b_cols} | {small['activation_ram_bytes']:,} | "
                     f"{small['instructions'] / layer['instructions']:.2f} |")
    return [*lines, ""]


def peers(rows: list[dict]) -> list[str]:
    rows = [r for r in rows if key(r)[2] == "portable"]
    data = json.loads((SHARED_MODELS / "peer_figures.json").read_text())
    lines = ["| model | mcugen smallest plan (activation RAM, B) | mcugen layer plan | TFLM arena (head+tail) "
             "| peers' activation buffers (MLPerf Tiny v1.0 submissions) |", "|---|---:|---:|---:|---|"]
    for name in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == name]
        small = min(r["activation_ram_bytes"] for r in mine)
        layer = next(r["activation_ram_bytes"] for r in mine if r["kind"] == "layer")
        info = json.loads((SHARED_MODELS / name / f"{name}_info.json").read_text())
        bench = PEERS.get(name)
        theirs = [f"{e['path'].split('/')[1]} {e['bytes']:,}" for e in data.get("activation_buffers", [])
                  if e["bench"] == bench]
        if name in TIGRIS:
            theirs.append(f"TiGrIS {TIGRIS[name]:,} (incl. input)")
        lines.append(f"| {name} | {small:,} | {layer:,} | {info['tflm_arena']['recording_total']:,} | "
                     + ("; ".join(theirs) or "—") + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/memory.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--cores", default="cortex-m4,cortex-m7,cortex-m55")
    p.add_argument("--models", default=",".join(MODEL_NAMES))
    p.add_argument("--kinds", default=",".join(KINDS), help="plan kinds to measure (others kept from OUT/memory.json)")
    p.add_argument("--backends", default="portable", help="portable and/or cmsis-nn (others kept from OUT/memory.json)")
    p.add_argument("--out", default="docs")
    p.add_argument("--tables-only", action="store_true", help="rewrite OUT/memory.md from OUT/memory.json")
    args = p.parse_args(argv)
    kinds = tuple(k for k in KINDS if k in args.kinds.split(","))
    backends = tuple(b for b in BACKENDS if b in args.backends.split(","))
    old = Path(args.out) / "memory.json"
    rows = json.loads(old.read_text()) if old.is_file() else []
    if not args.tables_only:  # the rows measured now replace those of the same model, core, backend and kind
        rows = [r for r in rows if not (r["model"] in args.models.split(",") and r["core"] in args.cores.split(",")
                                        and key(r)[2] in backends and r["kind"] in kinds)]
    with tempfile.TemporaryDirectory(prefix="mcugen-memory-") as tmp:
        for name in [] if args.tables_only else args.models.split(","):
            for core in args.cores.split(","):
                for backend in backends:
                    for kind in kinds:
                        if kind == "budget" and name not in BUDGETS:
                            continue
                        smallest = min((r["activation_ram_bytes"] for r in rows
                                        if key(r) == (name, core, backend)), default=0)
                        rows.append(measure(name, core, kind, Path(tmp), smallest, backend))
                        r = rows[-1]
                        print(f"{name} {core} {backend} {kind}: {r['activation_ram_bytes']:,} B, "
                              f"{r['instructions']:,.0f} instr, bit-exact {r['bit_exact_vs_tflm']}", flush=True)
    order = {(n, c): i for i, (n, c) in enumerate((n, c) for n in MODEL_NAMES for c in ("cortex-m4", "cortex-m7",
                                                                                       "cortex-m55"))}
    rows.sort(key=lambda r: (order.get((r["model"], r["core"]), len(order)), BACKENDS.index(key(r)[2]),
                             KINDS.index(r["kind"])))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "memory.json").write_text(json.dumps(rows, indent=1) + "\n")
    text = ["# Memory plans of the shared models", "",
            "Generated by `python benchmarks/memory.py` (QEMU executed instructions, the backend column's kernels, -O2; "
            "activation RAM = planned arena + the caller's input/output buffers; a plan with the input in "
            "the arena counts it once). `plan (x)`: the plan that kind chose is of kind x. `near`: the "
            "fastest plan (by mcugen's estimate) within 110 % of the smallest one's RAM, as `--ram-budget` "
            "would choose it. A run with --kinds/--backends/--models/--cores re-measures those rows only; the "
            "others keep their earlier measurement.", "",
            *table(rows), "", *acceptance(rows), *default_plans(rows), "## Against TFLM and the peers", "",
            *peers(rows), ""]
    md = out / "memory.md"
    kept = md.read_text().split(KEEP, 1) if md.is_file() else []  # the hand-written sections stay
    md.write_text("\n".join(text) + ("\n" + KEEP + kept[1] if len(kept) == 2 else ""))
    return 0 if all(r["bit_exact_vs_tflm"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
