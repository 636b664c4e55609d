#!/usr/bin/env python3
"""Memory plans of the shared models: activation RAM per plan kind, measured instruction overhead.

For every shared model x core: each plan mcugen offers (emitter/plan/search.py: layer, inplace,
overlap, stream) is emitted, cross-compiled and run in QEMU on the 8 reference inputs of
NAME_ref.npz; the table gives its activation RAM (arena + the caller's input/output buffers),
the overhead it was estimated to cost and the overhead measured (executed instructions vs the
layer plan), and whether it is bit-exact with TFLM's `tflm_outputs`. TFLM's arena
(NAME_info.json) and the peers' activation buffers (../shared/models/peer_figures.json) stand
beside it. `default` is the plan `mcugen emit` takes with no budget option (the board's own RAM:
the smallest plan within FREE_OVERHEAD estimated instructions, emitter/plan/search.py); `estimate
error` compares the estimated instructions of the plan (the base + its overhead) with QEMU's count.
Writes OUT/memory.md and OUT/memory.json; --kinds measures some plan kinds only and merges them
into OUT/memory.json (the rows of the same model, core and kind replaced).

    python benchmarks/memory.py [--cores cortex-m4,cortex-m7,cortex-m55] [--models ...] [--kinds ...] [--out docs]
"""
from __future__ import annotations

import argparse
import json
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

KINDS = ("layer", "inplace", "overlap", "stream", "near", "default")
# near: the fastest plan within 110 % of the smallest; default: `mcugen emit`'s plan on the board's own RAM
PEERS = {"mlperf_vww_mobilenetv1": "vww", "mlperf_ic_resnet8": "ic", "mlperf_kws_dscnn": "kws",
         "mlperf_ad_fc_autoencoder": "ad"}
TIGRIS = {"mlperf_vww_mobilenetv1": 45_792}  # the memory issue: TiGrIS, activation RAM incl. its input


def measure(name: str, core: str, kind: str, work: Path, smallest: int = 0) -> dict:
    folder = SHARED_MODELS / name
    ref = np.load(folder / f"{name}_ref.npz")
    board = load_board(core)
    if kind == "near":
        c = compile_model(folder / f"{name}.onnx", name="net", board=board, memory="auto",
                          ram_budget=smallest * 11 // 10)
    elif kind == "default":  # as emitter/cli.ram_budget names the board's own RAM
        c = compile_model(folder / f"{name}.onnx", name="net", board=board, memory="auto",
                          ram_budget=board.ram_bytes, budget_src=f"board {board.name} RAM")
    else:
        c = compile_model(folder / f"{name}.onnx", name="net", board=board, memory=kind)
    row = {"model": name, "core": core, "kind": kind, "chosen": c.plan.schedule.kind,
           "activation_ram_bytes": activation_ram(c.graph, c.plan), "arena_bytes": c.plan.arena_size,
           "estimated_overhead": 0.0 if c.memory is None else round(c.memory.ratio(c.memory.chosen), 4),
           "estimated_instructions": None if c.memory is None else c.memory.base + c.memory.chosen.overhead}
    here = work / name / core / kind
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), here / "bundle", force=True)
    write_glue(c, here / "glue")
    fw = build_firmware(here / "bundle", here / "glue", board, here / "fw")
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


def table(rows: list[dict]) -> list[str]:
    base = {(r["model"], r["core"]): r["instructions"] for r in rows if r["kind"] == "layer"}
    lines = ["| model | core | plan | activation RAM (B) | vs layer plan | instructions | overhead measured "
             "| overhead estimated | estimate error | bit-exact vs TFLM |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    layer_ram = {(r["model"], r["core"]): r["activation_ram_bytes"] for r in rows if r["kind"] == "layer"}
    for r in rows:
        b = base.get((r["model"], r["core"]))
        over = f"{r['instructions'] / b - 1:+.1%}" if b else "—"
        whole = layer_ram.get((r["model"], r["core"]))
        ratio = f"{r['activation_ram_bytes'] / whole:.0%}" if whole else "—"
        kind = r["kind"] if r["chosen"] == r["kind"] else f"{r['kind']} ({r['chosen']})"
        est = r.get("estimated_instructions")
        err = f"{est / r['instructions'] - 1:+.1%}" if est else "—"
        lines.append(f"| {r['model']} | {r['core']} | {kind} | {r['activation_ram_bytes']:,} | {ratio} | "
                     f"{r['instructions']:,.0f} | {over} | {r['estimated_overhead']:+.1%} | {err} | "
                     f"{'yes' if r['bit_exact_vs_tflm'] else 'NO'} |")
    return lines


KEEP = "## Memory pools"  # OUT/memory.md from this heading on is written by hand


def default_plans(rows: list[dict]) -> list[str]:
    """The default plan (free savings) against today's whole-layer plan, per model and core."""
    got = {(r["model"], r["core"], r["kind"]): r for r in rows}
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


def peers(rows: list[dict]) -> list[str]:
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
    p.add_argument("--out", default="docs")
    p.add_argument("--tables-only", action="store_true", help="rewrite OUT/memory.md from OUT/memory.json")
    args = p.parse_args(argv)
    kinds = tuple(k for k in KINDS if k in args.kinds.split(","))
    old = Path(args.out) / "memory.json"
    rows = json.loads(old.read_text()) if (args.tables_only or kinds != KINDS) and old.is_file() else []
    if not args.tables_only:  # the rows measured now replace those of the same model, core and kind
        rows = [r for r in rows if not (r["model"] in args.models.split(",") and r["core"] in args.cores.split(",")
                                        and r["kind"] in kinds)]
    with tempfile.TemporaryDirectory(prefix="mcugen-memory-") as tmp:
        for name in [] if args.tables_only else args.models.split(","):
            for core in args.cores.split(","):
                for kind in kinds:
                    smallest = min((r["activation_ram_bytes"] for r in rows
                                    if r["model"] == name and r["core"] == core), default=0)
                    rows.append(measure(name, core, kind, Path(tmp), smallest))
                    r = rows[-1]
                    print(f"{name} {core} {kind}: {r['activation_ram_bytes']:,} B, {r['instructions']:,.0f} instr, "
                          f"bit-exact {r['bit_exact_vs_tflm']}", flush=True)
    order = {(n, c): i for i, (n, c) in enumerate((n, c) for n in MODEL_NAMES for c in ("cortex-m4", "cortex-m7",
                                                                                       "cortex-m55"))}
    rows.sort(key=lambda r: (order.get((r["model"], r["core"]), len(order)), KINDS.index(r["kind"])))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "memory.json").write_text(json.dumps(rows, indent=1) + "\n")
    text = ["# Memory plans of the shared models", "",
            "Generated by `python benchmarks/memory.py` (QEMU executed instructions, portable kernels, -O2; "
            "activation RAM = planned arena + the caller's input/output buffers; a plan with the input in "
            "the arena counts it once). `plan (x)`: the plan that kind chose is of kind x. `near`: the "
            "fastest plan (by mcugen's estimate) within 110 % of the smallest one's RAM, as `--ram-budget` "
            "would choose it.", "",
            *table(rows), "", *default_plans(rows), "## Against TFLM and the peers", "", *peers(rows), ""]
    md = out / "memory.md"
    kept = md.read_text().split(KEEP, 1) if md.is_file() else []  # the hand-written sections stay
    md.write_text("\n".join(text) + ("\n" + KEEP + kept[1] if len(kept) == 2 else ""))
    return 0 if all(r["bit_exact_vs_tflm"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
