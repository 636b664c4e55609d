#!/usr/bin/env python3
"""The cmsis-nn backend against the portable one, per shared model, on cortex-m4/m7/m55.

    CMSIS_NN_PATH=/path/to/CMSIS-NN python benchmarks/cmsis_nn.py [--cores ...] [--models ...] [--out docs]

For every model x core, three builds of the same model, each cross-compiled (bundle and harness
-O2, CMSIS-NN at -Ofast, as its own build uses) and run in QEMU on the 8 reference inputs of
NAME_ref.npz (bit-exact against TFLM's `tflm_outputs` and against each other):
- *portable*: mcugen's own kernels only;
- *CMSIS-NN everywhere*: every layer CMSIS-NN has a kernel for calls it (compile_model
  cmsis_choice="cmsis");
- *mcugen cmsis-nn*: what `--backend cmsis-nn` emits: CMSIS-NN except where mcugen's kernel is
  faster on that layer shape (emitter/backends/kernel_choice.py).
Then a per-layer profile (lap marker after every layer, emitter/verify/profile.py) of the first two, so
each layer's instructions under both kernels sit side by side. Writes OUT/cmsis_nn.md and
OUT/cmsis_nn.json. Instruction counts are not cycles: compare them only within one core.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from benchmarks.run import first_line, git_state  # noqa: E402
from emitter.backends.cmsis_nn import check_version, cmsis_path  # noqa: E402
from emitter.boards import load_board  # noqa: E402
from emitter.compiler import compile_model, golden_run  # noqa: E402
from emitter.render.bundle import render_bundle  # noqa: E402
from emitter.render.write import write_bundle  # noqa: E402
from emitter.target.firmware import build_firmware  # noqa: E402
from emitter.target.qemu import run_qemu  # noqa: E402
from emitter.verify.harness import pack, unpack, write_glue  # noqa: E402
from emitter.verify.profile import profile_layers  # noqa: E402
from emitter.verify.run import load_inputs  # noqa: E402
from tests.harness.bundles import MODEL_NAMES, SHARED_MODELS  # noqa: E402

CORES = ("cortex-m4", "cortex-m7", "cortex-m55")
CMSIS_OPT = ["-Ofast"]  # --cmsis-opt
VARIANTS = {"portable": ("portable", "fastest"), "cmsis": ("cmsis-nn", "cmsis"), "mcugen": ("cmsis-nn", "fastest")}
# TFLM + CMSIS-NN v7 builds measured by the team on the same QEMU cores (issue 6), instructions
# per inference.
TFLM_CMSIS = {("mlperf_kws_dscnn", "cortex-m7"): 7_640_000, ("mlperf_ic_resnet8", "cortex-m7"): 30_030_000,
              ("mlperf_ad_fc_autoencoder", "cortex-m7"): 583_000, ("mlperf_kws_dscnn", "cortex-m55"): 1_810_000}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python benchmarks/cmsis_nn.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--cores", default=",".join(CORES))
    p.add_argument("--models", default=",".join(MODEL_NAMES))
    p.add_argument("--out", type=Path, default=REPO / "docs")
    p.add_argument("--no-profile", action="store_true", help="skip the per-layer profiles")
    p.add_argument("--cmsis-opt", default="-Ofast",
                   help="optimisation CMSIS-NN is compiled at (default -Ofast, its own default; TFLM's "
                        "figures match -O2)")
    p.add_argument("--zoo", action="store_true",
                   help="also the zoo models (tests/models/zoo, default quantization, 2 random inputs): more layer shapes")
    p.add_argument("--zoo-models", default="", help="with --zoo: only these zoo models (comma-separated names)")
    return p.parse_args(argv)


def shape_of(p) -> str:
    """A layer's geometry, for the per-layer tables."""
    c = p.params
    if c is None:
        return ""
    if hasattr(c, "filter") and hasattr(c, "input"):
        i, f, o = c.input, c.filter, c.output
        return (f"{i.h}x{i.w}x{i.c} k{f.h}x{f.w} s{c.stride_h}x{c.stride_w} -> {o.h}x{o.w}x{o.c}")
    if hasattr(c, "in_features"):
        return f"{c.in_features} -> {c.out_features}" + (f" x{c.batches}" if c.batches > 1 else "")
    return ""


def run_variant(name: str, board, variant: str, work: Path, profile: bool, model: Path | None = None) -> dict:
    backend, choice = VARIANTS[variant]
    zoo = model is not None
    model = model or SHARED_MODELS / name / f"{name}.onnx"
    c = compile_model(model, name="net", backend=backend, board=board,
                      cmsis_path=cmsis_path() if backend == "cmsis-nn" else None, cmsis_choice=choice)
    if zoo:
        samples = load_inputs(c, None, 2)
        ref = {"inputs": np.stack([s[0] for s in samples]), "tflm_outputs": None}
    else:
        ref = dict(np.load(SHARED_MODELS / name / f"{name}_ref.npz"))
    here = work / variant
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), here / "bundle", force=True)
    write_glue(c, here / "glue")
    fw = build_firmware(here / "bundle", here / "glue", board, here / "fw", cmsis_nn=c.cmsis_path,
                        cmsis_opt=CMSIS_OPT[0])
    samples = [[x.astype(np.int8).reshape(c.input_shapes[0])] for x in ref["inputs"]]
    run_dir = here / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "input.bin").write_bytes(pack(samples))
    run = run_qemu(fw.elf, board, run_dir, timeout=600)
    got = unpack(c, (run_dir / "output.bin").read_bytes(), len(samples))
    gold = [golden_run(c, s) for s in samples]
    tflm = ref["tflm_outputs"]
    row = {
        "variant": variant, "instructions": list(run.instructions),
        "instructions_median": statistics.median(run.instructions),
        "bit_exact_vs_tflm": tflm is None or all(np.array_equal(g[0].ravel(), w.ravel()) for g, w in zip(got, tflm)),
        "bit_exact_vs_golden": all(np.array_equal(g[0], h[0]) for g, h in zip(got, gold)),
        "outputs_sha": __import__("hashlib").sha256(b"".join(g[0].tobytes() for g in got)).hexdigest()[:16],
        "model_flash_bytes": fw.model_flash, "model_ram_bytes": fw.model_ram, "stack_bytes": run.stack_bytes,
        "arena_bytes": c.plan.arena_size, "lower_bound_bytes": c.plan.lower_bound,
        "scratch_max_bytes": max((p.scratch for p in c.prepared), default=0),
        "kernels": [p.kernel for p in c.prepared if p.kernel],
        "portable_layers": [list(x) for x in c.portable_layers],
    }
    if profile:
        prof = profile_layers(c, here / "bundle", board, samples, work / "profile", CMSIS_OPT[0])
        row["layers"] = [{"index": lay.index, "name": lay.name, "op": lay.op, "kernel": lay.kernel,
                          "shape": shape_of(c.prepared[lay.index]) or shape_of(portable_twin(c, lay.index)),
                          "macs": lay.macs, "instructions": lay.instructions} for lay in prof.layers]
    return row


def portable_twin(c, index: int):
    """The portable Prepared of a layer (CMSIS-NN calls carry no params)."""
    from emitter.compiler import isa_of, prepare_all

    return prepare_all(c.graph, isa_of(c.options.board))[index]  # the same graph (fusions) as c


def bench(name: str, core: str, work: Path, profile: bool, model: Path | None = None) -> dict:
    board = load_board(core)
    rows = {v: run_variant(name, board, v, work / name / core, profile and v != "mcugen", model) for v in VARIANTS}
    same = len({r["outputs_sha"] for r in rows.values()}) == 1
    return {"model": name, "core": core, "variants": rows, "backends_agree": same,
            "tflm_cmsis_instructions": TFLM_CMSIS.get((name, core))}


def fmt(v) -> str:
    return "—" if v is None else f"{int(round(v)):,}"


def summary_table(results: list[dict]) -> list[str]:
    head = ["model", "core", "portable", "CMSIS-NN everywhere", "**mcugen cmsis-nn**", "TFLM + CMSIS-NN",
            "vs TFLM", "flash portable", "flash CMSIS-NN everywhere", "flash mcugen cmsis-nn",
            "arena (cmsis-nn)", "portable liveness LB", "max CMSIS-NN scratch", "bit-exact"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * 11 + "---|"]
    for r in results:
        v = r["variants"]
        mine, tflm = v["mcugen"]["instructions_median"], r["tflm_cmsis_instructions"]
        exact = all(x["bit_exact_vs_tflm"] and x["bit_exact_vs_golden"] for x in v.values()) and r["backends_agree"]
        lines.append("| " + " | ".join([
            r["model"], r["core"], fmt(v["portable"]["instructions_median"]), fmt(v["cmsis"]["instructions_median"]),
            f"**{fmt(mine)}**", fmt(tflm), f"{100.0 * (mine / tflm - 1):+.1f}%" if tflm else "—",
            fmt(v["portable"]["model_flash_bytes"]), fmt(v["cmsis"]["model_flash_bytes"]),
            fmt(v["mcugen"]["model_flash_bytes"]), fmt(v["mcugen"]["arena_bytes"]),
            fmt(v["portable"]["lower_bound_bytes"]), fmt(v["mcugen"]["scratch_max_bytes"]),
            "yes" if exact else "**no**"]) + " |")
    return lines


def per_mac(n, macs) -> str:
    return f"{n / macs:.2f}" if macs and n else ""


def layer_tables(results: list[dict]) -> list[str]:
    out: list[str] = []
    for r in results:
        v = r["variants"]
        if "layers" not in v["cmsis"] or "layers" not in v["portable"]:
            continue
        port = {lay["index"]: lay for lay in v["portable"]["layers"]}
        chosen = {k: why for k, _, why in v["mcugen"]["portable_layers"]}
        out += [f"### {r['model']} on {r['core']}", "",
                "| # | layer | shape | CMSIS-NN kernel | MACs | CMSIS-NN instr | instr/MAC | portable kernel | portable instr "
                "| instr/MAC | faster | mcugen cmsis-nn runs |", "|---:|---|---|---|---:|---:|---:|---|---:|---:|---|---|"]
        for lay in v["cmsis"]["layers"]:
            p = port.get(lay["index"])
            ci, pi = lay["instructions"], (p["instructions"] if p else None)
            faster = "—" if pi is None else ("portable" if pi < ci else "CMSIS-NN")
            runs = "portable (" + chosen[lay["index"]] + ")" if lay["index"] in chosen else "CMSIS-NN"
            name = lay["name"] if len(lay["name"]) <= 40 else "…" + lay["name"][-39:]
            out.append(f"| {lay['index']} | `{name}` | {lay.get('shape', '')} | {lay['kernel']} | {fmt(lay['macs'])} | "
                       f"{fmt(ci)} | {per_mac(ci, lay['macs'])} | {p['kernel'] if p else '—'} | {fmt(pi)} | "
                       f"{per_mac(pi, lay['macs'])} | {faster} | {runs} |")
        out.append("")
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    CMSIS_OPT[0] = args.cmsis_opt
    path = cmsis_path()
    if path is None:
        print("benchmarks/cmsis_nn.py: set CMSIS_NN_PATH to a CMSIS-NN v7.0.0 checkout", file=sys.stderr)
        return 2
    version = check_version(path)
    results = []
    with tempfile.TemporaryDirectory(prefix="mcugen-cmsis-bench-") as tmp:
        models: list[tuple[str, Path | None]] = [(name, None) for name in filter(None, args.models.split(","))]
        if args.zoo:
            from tests.models.zoo.catalog import CATALOG
            from tests.models.zoo.variants import DEFAULT, Variant

            only = set(filter(None, args.zoo_models.split(",")))
            models += [("zoo:" + zm.name, Variant(zm, DEFAULT).build(Path(tmp) / "zoo")) for zm in CATALOG
                       if not only or zm.name in only]
        for name, model in models:
            for core in args.cores.split(","):
                t0 = time.perf_counter()
                results.append(bench(name, core, Path(tmp), not args.no_profile, model))
                v = results[-1]["variants"]
                print(f"{name} {core}: " + ", ".join(f"{k} {fmt(x['instructions_median'])}" for k, x in v.items())
                      + f" ({time.perf_counter() - t0:.0f} s)", flush=True)
    meta = {"command": "python benchmarks/cmsis_nn.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "date": time.strftime("%Y-%m-%d", time.gmtime()), "source": git_state(),
            "arm-none-eabi-gcc": first_line("arm-none-eabi-gcc", "--version"),
            "qemu-system-arm": first_line("qemu-system-arm", "--version"),
            "cmsis_nn": str(version)}
    md = [
        "# CMSIS-NN backend vs portable kernels",
        "",
        f"Generated by `{meta['command'].strip()}` on {meta['date']} (UTC); source {meta['source']}; "
        f"`{meta['arm-none-eabi-gcc']}`; `{meta['qemu-system-arm']}`. Figures also in `cmsis_nn.json`.",
        "",
        f"- CMSIS-NN v7.0.0 (the user's library, from `CMSIS_NN_PATH`, never vendored) compiled at **{CMSIS_OPT[0]}** "
        "(-Ofast is CMSIS-NN's own default) with the core's flags; bundle and harness at **-O2**.",
        "- **Instructions** are QEMU executed-instruction counts per inference (mcugen's TCG plugin), median over "
        "the 8 reference inputs; not cycles: compare within one core only.",
        "- *CMSIS-NN everywhere*: every layer CMSIS-NN has a kernel for calls it. *mcugen cmsis-nn*: what "
        "`--backend cmsis-nn` emits, CMSIS-NN except on layer shapes where mcugen's own kernel executes fewer "
        "instructions (the per-layer tables below; `emitter/backends/kernel_choice.py`).",
        "- *TFLM + CMSIS-NN*: the team's measurement of TFLite Micro with CMSIS-NN v7 kernels on the same QEMU "
        "cores (issue 6); TFLM's interpreter is under 0.2% of it.",
        "- *flash*: the model's share of the firmware (bundle code + weights + the CMSIS-NN objects linked, "
        "`--gc-sections`), from the linker map. *arena*: the planned arena including CMSIS-NN scratch; "
        "*portable liveness LB*: the activation lower bound without any scratch. Arena <= LB + max scratch.",
        "- *bit-exact*: all three builds equal TFLM's `tflm_outputs` and the golden model in QEMU, and each other.",
        "",
        "## Per model and core",
        "",
        *summary_table(results),
        "",
        "## Where the instructions go, per layer",
        "",
        "Each layer profiled in QEMU with a marker after every layer (`mcugen verify --profile`), median over "
        "the 8 inputs; *faster* is the kernel with fewer instructions on that layer.",
        "",
        *layer_tables(results),
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cmsis_nn.md").write_text("\n".join(md))
    (args.out / "cmsis_nn.json").write_text(json.dumps({**meta, "results": results}, indent=1) + "\n")
    print(f"wrote {args.out / 'cmsis_nn.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
