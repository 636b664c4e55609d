"""Regenerate docs/zoo.md and docs/zoo.json: the zoo's results, measured.

    python scripts/zoo_report.py [--no-qemu] [--full] [--samples 32] [--out docs]

For every variant of tests/models/zoo/variants.py (VARIANTS, or with --full the whole cross product)
plus the REJECTED ones: does mcugen compile it (or which ops stop it), arena vs the liveness lower
bound, weight bytes in flash (report.json), MACs, executed instructions per inference on
cortex-m7 (QEMU, -O2, every passing variant in merged images, tests/harness/zoo_images.py), host C and
QEMU bit-exact with the golden, and golden vs onnxruntime over seeded random inputs: share of
differing elements, max |diff|, and for classifiers top-1 (argmax) agreement.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from emitter import __version__  # noqa: E402
from emitter.compiler import golden_run  # noqa: E402
from emitter.errors import QuantError, UnsupportedError  # noqa: E402
from emitter.verify.run import diff_stats, ort_run  # noqa: E402
from tests.harness.bundles import build_library, run_c  # noqa: E402
from tests.harness.zoo_runs import (  # noqa: E402
    Outcome,
    compile_variants,
    int8_samples,
    quant_ops,
    top1_agreement,
)
from tests.models.zoo.catalog import CATALOG  # noqa: E402
from tests.models.zoo.variants import FULL, REJECTED, VARIANTS  # noqa: E402

QEMU_SAMPLES = 2


def measure(outcomes: dict[str, Outcome], samples: int, qemu: bool, work: Path) -> list[dict]:
    ok = [o for o in outcomes.values() if o.ok]
    lib = build_library([o.bundle for o in ok], work / "libzoo.so") if ok else None
    rows: list[dict] = []
    runnable: list[Outcome] = []
    for o in outcomes.values():
        v, q = o.variant, o.variant.quant
        row = {"variant": v.id, "model": v.model.name, "format": q.fmt,
               "weights": f"{'per-channel' if q.per_channel else 'per-tensor'} {q.weight}",
               "activations": q.act, "reduce_range": q.reduce_range, "prep": q.prep,
               "ops": quant_ops(o.path), "classifier": v.model.classifier}
        rows.append(row)
        if o.error is not None:
            row["status"] = ("refused" if isinstance(o.error, QuantError) else
                             "unsupported" if isinstance(o.error, UnsupportedError) else "error")
            row["unsupported_ops"] = o.failing_ops()
            row["error"] = str(o.error).splitlines()[0 if not isinstance(o.error, UnsupportedError)
                                                     else 1].strip()
            continue
        c = o.compiled
        rep = o.report
        row.update(status="compiles", arena_bytes=rep["arena_bytes"],
                   lower_bound_bytes=rep["liveness_lower_bound_bytes"],
                   weight_bytes=rep["weight_bytes"], macs=rep["macs"])
        xs = int8_samples(c, v, samples)
        gold = [golden_run(c, s) for s in xs]
        try:
            host = [run_c(lib, c, s) for s in xs]
        except AssertionError as exc:  # a non-zero status from the C code
            row.update(status="host error", error=str(exc), host_bit_exact=False)
            continue
        d, n, mx = diff_stats(host, gold)
        row["host_bit_exact"] = d == 0
        ort = ort_run(c, o.path, xs)
        d, n, mx = diff_stats(gold, ort)
        row.update(samples=samples, ort_differ_share=round(d / n, 4), ort_max_diff=mx,
                   top1_agreement=(round(top1_agreement(gold, ort), 4)
                                   if v.model.classifier else None))
        if row["host_bit_exact"]:
            runnable.append(o)
    if qemu and runnable:
        qemu_rows(runnable, {r["variant"]: r for r in rows}, work)
    return rows


def qemu_rows(runnable: list[Outcome], by_id: dict[str, dict], work: Path) -> None:
    from emitter.boards import load_board
    from emitter.target import missing_tools
    from tests.harness.zoo_images import build_and_run, chunks

    missing = missing_tools()
    if missing:
        print("QEMU skipped, missing tools: " + "; ".join(missing), file=sys.stderr)
        return
    board = load_board("cortex-m7")
    parts = chunks(runnable, [o.report["weight_bytes"] for o in runnable], board)
    for k, part in enumerate(parts):
        members = [runnable[i] for i in part]
        samples = [int8_samples(o.compiled, o.variant, QEMU_SAMPLES) for o in members]
        run = build_and_run([o.compiled for o in members], samples, board, work / f"qemu{k}")
        for o, ss, got, ins in zip(members, samples, run.outputs, run.instructions, strict=False):
            gold = [golden_run(o.compiled, s) for s in ss]
            row = by_id[o.variant.id]
            row["qemu_m7_bit_exact"] = diff_stats(got, gold)[0] == 0
            row["m7_instructions"] = int(np.median(ins))


# -- output --------------------------------------------------------------------------------------


def fmt_int(v: int | None) -> str:
    return "" if v is None else f"{v:,}"


def markdown(rows: list[dict], meta: dict) -> str:
    ok = [r for r in rows if r["status"] == "compiles"]
    bad = [r for r in rows if r["status"] != "compiles"]
    out = [
        "# Model zoo results",
        "",
        "Generated by `python scripts/zoo_report.py` (do not edit by hand); data in `docs/zoo.json`.",
        (f"mcugen {meta['mcugen']}, onnxruntime {meta['onnxruntime']}; float models from "
        "`tests/models/zoo/make_zoo.py` (PyTorch export, seeded random weights), quantized with "
        "onnxruntime `quantize_static` (MinMax, 16 seeded random calibration inputs) per "
        "`tests/models/zoo/variants.py`."),
        "",
        f"{len(ok)} of {len(rows)} variants compile and run; {len(bad)} do not (second table). "
        f"Golden vs onnxruntime over {meta['samples']} seeded random inputs per variant (not "
        "the calibration inputs): share of output elements that differ and the largest "
        "difference in quanta; top-1 = argmax agreement for classifiers. Host C (gcc) "
        f"bit-exact with mcugen's golden model: {sum(bool(r.get('host_bit_exact')) for r in ok)}"
        f" of {len(ok)}"
        + (f"; QEMU cortex-m7 (-O2, {QEMU_SAMPLES} inputs each, instructions = median per "
           f"inference): {sum(bool(r.get('qemu_m7_bit_exact')) for r in ok)} of {len(ok)}"
           if meta["qemu"] else "") + ". Ops = op types of the quantized model without "
        "QuantizeLinear/DequantizeLinear.",
        "",
        ("Variant names: `<model>-<qdq|qop>-<pc|pt>-<s8|u8>[-rr][-wu8][-export]` = QDQ or "
        "QOperator, per-channel or per-tensor weights, int8 or uint8 activations, reduce_range "
        "on, uint8 weights, quantized as exported (Constant nodes kept) instead of after "
        "constant folding."),
        "",
        ("| variant | ops | arena / lower bound (B) | weights in flash (B) | MACs | M7 instructions "
        "| vs onnxruntime: differing, max diff | top-1 agreement |"),
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in ok:
        top1 = "" if r.get("top1_agreement") is None else f"{100 * r['top1_agreement']:.0f}%"
        ort = ("" if "ort_max_diff" not in r else
               f"{100 * r['ort_differ_share']:.1f}%, {r['ort_max_diff']}")
        out.append(f"| {r['variant']} | {' '.join(r['ops'])} | "
                   f"{fmt_int(r['arena_bytes'])} / {fmt_int(r['lower_bound_bytes'])} | "
                   f"{fmt_int(r['weight_bytes'])} | {fmt_int(r['macs'])} | "
                   f"{fmt_int(r.get('m7_instructions'))} | {ort} | {top1} |")
    out += ["", "## Variants mcugen does not run (yet)", "",
            "| variant | status | ops named | first reason |", "|---|---|---|---|"]
    for r in bad:
        reason = r.get("error", "").lstrip("- ").replace("|", "\\|")
        out.append(f"| {r['variant']} | {r['status']} | {' '.join(r.get('unsupported_ops', []))} "
                   f"| {reason} |")
    out += ["", "## Models", "", "| model | input | description |", "|---|---|---|"]
    for m in CATALOG:
        out.append(f"| {m.name} | {'x'.join(map(str, m.input_shape))} "
                   f"{m.dist[0]}({m.dist[1]:g}, {m.dist[2]:g}) | {m.about} |")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs"), help="folder for zoo.md and zoo.json")
    ap.add_argument("--samples", type=int, default=32, help="random inputs per variant")
    ap.add_argument("--no-qemu", action="store_true", help="no QEMU instruction counts")
    ap.add_argument("--full", action="store_true", help="the whole cross product, not the CI set")
    args = ap.parse_args()

    import logging

    import onnxruntime

    logging.getLogger().setLevel(logging.ERROR)
    variants = list(FULL if args.full else VARIANTS)
    variants += [v for v in VARIANTS if v not in variants] + list(REJECTED)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcugen-zoo-") as tmp:
        outcomes = compile_variants(variants, Path(tmp))
        rows = measure(outcomes, args.samples, not args.no_qemu, Path(tmp))
    meta = {"mcugen": __version__, "onnxruntime": onnxruntime.__version__,
            "samples": args.samples, "qemu": not args.no_qemu and any("m7_instructions" in r
                                                                     for r in rows),
            "set": "full" if args.full else "ci"}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "zoo.json").write_text(json.dumps({"meta": meta, "variants": rows}, indent=1) + "\n")
    (out / "zoo.md").write_text(markdown(rows, meta))
    for r in rows:
        extra = (" ".join(r.get("unsupported_ops", [])) or r.get("error", "")[:100]
                 if r["status"] != "compiles" else "")
        print(f"{r['variant']:<34} {r['status']:<12} {extra}")
    print(f"wrote {out / 'zoo.md'} and {out / 'zoo.json'} in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
