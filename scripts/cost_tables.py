#!/usr/bin/env python3
"""Regenerate the kernel-choice cost tables: emitter/backends/cost_tables/<core>.json.

    CMSIS_NN_PATH=/path/to/CMSIS-NN python scripts/cost_tables.py [--cores cortex-m4,cortex-m7,cortex-m55]
    python scripts/cost_tables.py --cores rv32imac

The sweep (sweep_cases(): ~600 single-layer cases, seeded): convolutions 1x1, KxK up to 15,
Kx1 and 1xK (1-D), strides 1-2, dilation 2, 1-512 channels; depthwise KxK / Kx1 / 1xK with depth
multipliers 1-8 and dilation; fully connected 8-4096 inputs; batch matmuls of attention heads
(bmm_shapes()). Each core runs them in one
multi-branch firmware per candidate (chunked only where the test image's flash is too small),
mcugen's kernel and CMSIS-NN's, counted in QEMU (emitter/verify/tuning.py). Run it again
after any change to mcugen's kernels or to the CMSIS-NN version; it prints how long it took.
A RISC-V core (rv32imac; the ESP32-C3 reads its table through its core) has no CMSIS-NN: its table
holds mcugen's counts only ("cmsis": null), measured in qemu-system-riscv32 without CMSIS_NN_PATH,
and gives the memory plan its instruction base (emitter/plan/propose.base_estimate).

    CMSIS_NN_PATH=/path/to/CMSIS-NN python scripts/cost_tables.py --s4 [--cores cortex-m4,cortex-m7,cortex-m55]

measures only the 4-bit-weight rows (s4_cases(): mcugen's s4 kernels against CMSIS-NN's s4 calls on
a subset of the sweep's shapes with int4 weights) and replaces the s4 rows of the existing tables,
leaving their 8-bit rows as they are.

    python scripts/cost_tables.py --planner [--cores cortex-m4,cortex-m7,cortex-m55]

measures only the planner's rows ("planner": 1; the kernel choice does not read them:
kernel_choice.load_table) and replaces those of the existing tables: bands of 1, 2 and 4 output rows
of convolutions and depthwise layers called as streamed plans call them (band_cases(): with their
build-time constants, on the fast path, path "<path>/band", and through the lean call with the least
scratch, "lean:<its path>/band"), and fully connected layers of very few inputs or outputs
(small_cases(), the sweep has none), and the sweep's convolutions and depthwise layers through their
lean call (path "lean:<its path>": the lean DSP variant, MVE groups or the generic path). The memory
planner's estimates read them (emitter/plan/propose.py). A full run (no --s4, --planner) writes the
layers' rows only: run --s4 and --planner after it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from emitter.backends import kernel_choice as kc  # noqa: E402
from emitter.backends.cmsis_nn import check_version, cmsis_path  # noqa: E402
from emitter.backends.cost_cases import S4_KERNELS, SHAPE_FIELDS, Case, Shape, random_case  # noqa: E402
from emitter.backends.kernel_choice import TABLES  # noqa: E402
from emitter.boards import load_board  # noqa: E402
from emitter.verify.tuning import CMSIS_OPT, compiler_version, kernel_sources_hash, measure  # noqa: E402

CORES = ("cortex-m4", "cortex-m7", "cortex-m55", "rv32imac")
MAX_MACS = 400_000
MAX_WEIGHTS = 24_000


def same(n: int, k: int, s: int, d: int = 1) -> tuple[int, int]:
    """TF 'same' padding (before, after) of one axis."""
    out = -(-n // s)
    total = max((out - 1) * s + d * (k - 1) + 1 - n, 0)
    return total // 2, total - total // 2


def conv(h: int, w: int, ci: int, co: int, kh: int, kw: int, s: int = 1, d: int = 1, pad: bool = True,
         kind: str = "conv", dm: int = 1) -> Shape:
    pt, pb = same(h, kh, s, d) if pad else (0, 0)
    pl, pr = same(w, kw, s, d) if pad else (0, 0)
    return Shape(kind, h, w, ci, ci * dm if kind == "dw" else co, kh, kw, s, s, d, d, pt, pb, pl, pr)


def fit(s: Shape) -> Shape | None:
    """Shrink the feature map until the case costs at most MAX_MACS; None if even 1 row is too big
    or the weights exceed MAX_WEIGHTS."""
    weights = s.taps * s.c_out
    if weights > MAX_WEIGHTS or s.out_h < 1 or s.out_w < 1:
        return None
    while s.macs > MAX_MACS and (s.h > max(s.kh, 2) or s.w > max(s.kw, 2)):
        h = s.h if s.h <= s.w and s.w > max(s.kw, 2) else max(s.kh, s.h * 2 // 3)
        w = s.w if h != s.h else max(s.kw, s.w * 2 // 3)
        pt, pb = same(h, s.kh, s.sh, s.dh) if s.pt + s.pb else (0, 0)
        pl, pr = same(w, s.kw, s.sw, s.dw) if s.pl + s.pr else (0, 0)
        s = Shape(s.kind, h, w, s.c_in, s.c_out, s.kh, s.kw, s.sh, s.sw, s.dh, s.dw, pt, pb, pl, pr)
    return s if s.macs <= MAX_MACS * 2 else None


def sweep_shapes(seed: int = 12) -> list[Shape]:
    r = np.random.default_rng(seed)
    out: list[Shape | None] = []
    chans = [1, 2, 3, 4, 8, 12, 16, 24, 32, 40, 48, 64, 96, 128, 192, 256, 384, 512]
    maps = [(1, 1), (2, 2), (4, 4), (8, 8), (16, 16), (32, 32), (25, 5), (49, 10), (12, 12), (6, 6), (3, 3)]

    def pick(seq: list) -> object:
        return seq[int(r.integers(len(seq)))]

    # 1x1 convolutions (CMSIS-NN's 1x1 fast kernel), strided 1x1
    for ci in chans[2:]:
        for co in (4, 8, 16, 32, 64, 128, 256):
            h, w = pick(maps)  # type: ignore[misc]
            out.append(fit(conv(h, w, ci, co, 1, 1, pad=False)))
    for ci, co in ((8, 4), (16, 4), (16, 8), (24, 8), (32, 8), (4, 16), (8, 16), (8, 24), (8, 32), (32, 16),
                   (64, 16), (16, 64), (96, 24), (24, 96), (128, 32), (32, 128), (256, 64), (64, 256)):
        out.append(conv(1, 1, ci, co, 1, 1, pad=False))  # squeeze-and-excite 1x1 convs on a 1x1 map
    for _ in range(30):
        h, w = pick(maps[2:6])  # type: ignore[misc]
        out.append(fit(conv(h, w, int(pick(chans[2:14])), int(pick(chans[4:14])), 1, 1, s=2, pad=False)))
    # KxK convolutions, 'same' padding, stride 1 and 2
    for k in (3, 5, 7):
        for ci in (1, 2, 3, 4, 8, 16, 24, 32, 48, 64, 128, 256):
            for co in (8, 16, 32, 64, 128):
                if r.random() < 0.55:
                    h, w = pick(maps[2:])  # type: ignore[misc]
                    out.append(fit(conv(max(h, k), max(w, k), ci, co, k, k, s=int(r.integers(1, 3)))))
    for k in (9, 11, 15):
        for ci in (1, 3, 8, 16):
            out.append(fit(conv(24, 24, ci, int(pick([8, 16, 32])), k, k, s=int(r.integers(1, 3)))))
    # 1-D convolutions: Kx1 over time (W = 1) and 1xK over one row (H = 1)
    for k in (3, 5, 7, 9, 11, 15):
        for ci in (1, 4, 16, 40, 64, 128):
            co = int(pick([16, 32, 64, 128]))
            out.append(fit(conv(int(pick([25, 49, 98])), 1, ci, co, k, 1, s=int(pick([1, 1, 2])))))
            out.append(fit(conv(1, int(pick([25, 49, 98])), ci, co, 1, k, s=int(pick([1, 1, 2])))))
    # first layers of audio/vision models: tall windows on one channel
    for kh, kw in ((10, 4), (10, 8), (8, 4), (4, 10), (3, 3), (5, 5), (7, 7)):
        for co in (8, 16, 32, 64):
            out.append(fit(conv(49, 10 if kw < 8 else 40, 1, co, kh, kw, s=int(pick([1, 2])))))
    for _ in range(10):  # dilation 2
        k = int(pick([3, 5]))
        out.append(fit(conv(16, 16, int(pick(chans[2:12])), int(pick([8, 16, 32])), k, k, d=2)))
    # depthwise KxK (multiplier 1), stride 1 and 2, on small and large maps
    dw_maps = [(3, 3), (6, 6), (8, 8), (12, 12), (16, 16), (24, 24), (32, 32), (25, 5), (49, 10)]
    for k, per in ((3, 2), (5, 1), (7, 1)):
        for c in (4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512):
            for s in ((1, 2) if k < 7 else (int(r.integers(1, 3)),)):
                for _ in range(per):
                    h, w = pick(dw_maps)  # type: ignore[misc]
                    out.append(fit(conv(max(h, k), max(w, k), c, c, k, k, s=s, kind="dw")))
    # depthwise 1-D: Kx1 and 1xK, K 3..15, 16..256 channels
    for k in (3, 5, 7, 9, 11, 13, 15):
        for c in (8, 16, 40, 64, 80, 96, 128, 256):
            t = int(pick([25, 49, 98, 101]))
            out.append(fit(conv(t, 1, c, c, k, 1, s=int(pick([1, 1, 2])), kind="dw")))
            if r.random() < 0.5:
                out.append(fit(conv(1, t, c, c, 1, k, s=int(pick([1, 1, 2])), kind="dw")))
    # depthwise with multipliers, dilation, one input channel
    for _ in range(16):
        c = int(pick([1, 2, 3, 4, 8, 16, 32]))
        out.append(fit(conv(12, 12, c, 0, 3, 3, s=int(r.integers(1, 3)), kind="dw", dm=int(pick([2, 4, 8])))))
    for _ in range(8):
        c = int(pick([8, 16, 32, 64]))
        out.append(fit(conv(16, 16, c, c, 3, 3, d=2, kind="dw")))
    # fully connected, 8..4096 inputs, per tensor (TFLite) and per channel
    for k in (8, 16, 32, 64, 100, 128, 250, 256, 400, 512, 640, 1024, 2048, 4096):
        for n in (2, 8, 10, 12, 16, 32, 64, 128, 256, 512, 640):
            if k * n <= MAX_WEIGHTS or (n >= 512 and k <= 128):  # wide outputs: few inputs
                out.append(Shape("fc", c_in=k, c_out=n, per_channel=int(r.random() < 0.3)))
        for n in (3, 4, 6):  # classifier heads: many inputs, few outputs
            if k >= 1024:
                out.append(Shape("fc", c_in=k, c_out=n, per_channel=int(r.random() < 0.3)))
    # near-ties the first tables mispredicted (tests/test_kernel_choice.py's 3 % test): classifier
    # heads of few inputs and outputs, strided 1x1 convs on large maps, 3x3 depthwise on small maps
    for k in (1, 2, 4, 12, 16, 20, 24, 28, 32, 36, 40, 48):
        for n in (4, 6, 8, 10, 12, 16, 20):  # n % 4 matters: the kernel's blocks of four rows
            out += [Shape("fc", c_in=k, c_out=n), Shape("fc", c_in=k, c_out=n, per_channel=1)]
    for ci, co in ((8, 16), (16, 32), (24, 48), (16, 16), (32, 64)):
        for h in (16, 32):
            out.append(fit(conv(h, h, ci, co, 1, 1, s=2, pad=False)))
    for c in (32, 48, 64, 96, 128):
        for h in (4, 6, 8):
            out.append(fit(conv(h, h, c, c, 3, 3, kind="dw")))
    out += bmm_shapes()
    seen: set[Shape] = set()
    shapes = []
    for s in out:
        if s is not None and s not in seen:
            seen.add(s)
            shapes.append(s)
    return shapes


def bmm_shapes() -> list[Shape]:
    """Batch matmuls CMSIS-NN takes (rhs stored [.., N, K]): attention's Q x K^T over T tokens, head
    size d, 1-4 heads (M = N = T, K = d), single query rows (M = 1), and P x V with V given as
    [d, T] (K = T, N = d)."""
    out = []
    for i, t in enumerate((4, 8, 13, 16, 25, 32, 49, 64)):
        for j, d in enumerate((8, 16, 32, 64)):
            for m, k, n in ((t, d, t), (1, d, t), (t, t, d)):
                s = Shape("bmm", h=m, c_in=k, c_out=n, batches=(1, 2, 4)[(i + j) % 3], per_channel=0)
                if s.macs <= MAX_MACS:
                    out.append(s)
    return out


def sweep_cases(seed: int = 12) -> list[Case]:
    """The sweep's shapes with typical requantization, and every third conv/depthwise shape again
    with shifts >= 0 (mcugen's generic path)."""
    shapes = sweep_shapes(seed)
    cases = [random_case(f"s{i}", s, i) for i, s in enumerate(shapes)]
    again = [s for s in shapes if s.kind != "fc"][::3]
    return cases + [random_case(f"g{i}", s, 10_000 + i, wide=True) for i, s in enumerate(again)]


def band(layer: Shape, rows: int, where: str) -> Shape | None:
    """The band of `rows` output rows a streamed plan computes of `layer` per call (its twin's band():
    the input rows those rows read, the layer's own padding only where the band touches an edge):
    `where` "top" (the layer's top padding), "mid" (none) or "bottom"."""
    rows = min(rows, layer.out_h)
    span = (rows - 1) * layer.sh + layer.dh * (layer.kh - 1) + 1
    pt = layer.pt if where == "top" else 0
    pb = layer.pb if where == "bottom" else 0
    h = span - pt - pb
    if h < 1 or h > layer.h:
        return None
    return Shape(layer.kind, h, layer.w, layer.c_in, layer.c_out, layer.kh, layer.kw, layer.sh, layer.sw,
                 layer.dh, layer.dw, pt, pb, layer.pl, layer.pr)


def band_shapes(seed: int = 13) -> list[Shape]:
    """Bands of 1, 2 and 4 output rows (top, middle, bottom) of the convolutions and depthwise layers
    streamed plans run by rows: the shapes the memory planner predicts (emitter/plan/propose.py's
    layer_costs), whose few positions per call the whole-layer sweep seldom has."""
    r = np.random.default_rng(seed)
    widths = (5, 8, 10, 16, 25, 32, 40, 48)

    def pick(seq: tuple) -> int:
        return int(seq[int(r.integers(len(seq)))])

    layers = []
    for _ in range(120):  # 1x1
        layers.append(conv(16, pick(widths), pick((8, 16, 24, 32, 64, 96, 128)), pick((8, 16, 32, 64, 128)), 1, 1,
                           pad=False))
    for _ in range(120):  # 3x3 (and 5x5), stride 1 and 2
        k = pick((3, 3, 3, 5))
        layers.append(conv(16, pick(widths), pick((3, 8, 16, 32, 64)), pick((8, 16, 32, 64)), k, k, s=pick((1, 1, 2))))
    for kh, kw in ((10, 4), (10, 8), (3, 3), (8, 4)):  # first layers on one channel
        for _ in range(10):
            layers.append(conv(49, pick((5, 10, 25, 40)), 1, pick((8, 16, 32, 64)), kh, kw, s=pick((1, 2))))
    for _ in range(150):  # depthwise 3x3 (and 5x5), stride 1 and 2
        k = pick((3, 3, 3, 5))
        c = pick((8, 16, 32, 48, 64, 96, 128, 256))
        layers.append(conv(16, pick(widths), c, c, k, k, s=pick((1, 1, 2)), kind="dw"))
    out: list[Shape] = []
    for layer in layers:
        for rows in (1, 2, 4):
            for where in ("top", "mid", "bottom"):
                b = band(layer, rows, where)
                if b is not None and b.out_h >= 1 and b.macs <= MAX_MACS and b.taps * b.c_out <= MAX_WEIGHTS \
                        and r.random() < 0.5:
                    out.append(b)
    return list(dict.fromkeys(out))


def band_cases(seed: int = 13) -> list[Case]:
    """The band rows' cases, typical requantization (measured twice: on the fast path and through the
    lean call with the least scratch, both with the band calls' constants)."""
    return [random_case(f"b{i}", s, 30_000 + i) for i, s in enumerate(band_shapes(seed))]


def planner_counts(bands: list[Case], board: Any) -> tuple[list[Case], list[Any]]:
    """The planner's rows of `board` (no CMSIS-NN): the bands on their fast path and through the lean
    call, the sweep's convolutions and depthwise layers through the lean call (path "lean:<its path>":
    a whole lean call), the small layers. A lean run keeps only the cases that took a lean call (a
    layer whose lean call would need no less scratch has none: its fast row is in the table already)."""
    from emitter.backends.cost_cases import is_lean

    layers = [c for c in sweep_cases() if c.name.startswith("s") and c.shape.kind in ("conv", "dw")]
    small = small_cases()
    runs = [(bands, measure(bands, board, None, bands=True), False),
            (bands, measure(bands, board, None, lean=True, bands=True), True),
            (layers, measure(layers, board, None, lean=True), True),
            (small, measure(small, board, None), False)]
    out: list[tuple[Case, Any]] = []
    for cases, counts, lean in runs:
        out += [(c, n) for c, n in zip(cases, counts, strict=True) if not lean or is_lean(n.path)]
    return [c for c, _ in out], [n for _, n in out]


def small_cases() -> list[Case]:
    """Fully connected layers of 1-32 inputs and outputs (a regression head, a sine model's layers)."""
    shapes = [Shape("fc", c_in=k, c_out=n, per_channel=pc) for k in (1, 2, 3, 4, 6, 8, 16, 32)
              for n in (1, 2, 3, 4, 8, 16, 32) for pc in (0, 1)]
    return [random_case(f"f{i}", s, 50_000 + i) for i, s in enumerate(shapes)]


S4_EVERY = 3  # every third conv / depthwise / FC shape of the sweep again with 4-bit weights


def s4_cases(seed: int = 12) -> list[Case]:
    """The 4-bit rows' cases: every S4_EVERY-th conv, depthwise and FC shape of the sweep with int4
    weights (FC per tensor: v7.0.0's arm_fully_connected_s4 has no per-channel form), typical
    requantization."""
    from dataclasses import replace
    shapes = [replace(s, bits=4, per_channel=0 if s.kind == "fc" else s.per_channel)
              for s in sweep_shapes(seed) if s.kind in S4_KERNELS][::S4_EVERY]
    return [random_case(f"q{i}", s, 20_000 + i) for i, s in enumerate(shapes)]


def s4_kernels_hash() -> str:
    """The sources of mcugen's s4 kernels (mcu_runtime/kernels/mcu_*_s4*)."""
    import hashlib

    from emitter.resources import data_dir
    h = hashlib.sha256()
    for f in sorted((data_dir("mcu_runtime") / "kernels").glob("*.[ch]")):
        if any(f.name.startswith(k) for k in S4_KERNELS.values()):
            h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


def merge(core: str, out: Path, rows: list[str], replaced: Callable[[dict], bool], head: dict) -> None:
    """Replace the rows of `core`'s table that `replaced` marks with `rows` (the others and the header
    kept, the header updated with `head`)."""
    f = out / f"{core}.json"
    data = json.loads(f.read_text())
    keep = [json.dumps(r) for r in data["cases"] if not replaced(r)]
    top = {k: v for k, v in data.items() if k != "cases"} | {"shape_fields": list(SHAPE_FIELDS)} | head
    f.write_text(json.dumps(top, indent=1)[:-2] + ',\n "cases": [\n  ' + ",\n  ".join(keep + rows) + "\n ]\n}\n")


def merge_s4(core: str, out: Path, rows: list[str], seconds: float) -> None:
    """Replace the s4 rows of `core`'s table with `rows` (its 8-bit rows and header kept)."""
    merge(core, out, rows, lambda r: Shape.from_list(r["shape"]).bits == 4 and not r.get("planner"),
          {"s4_kernels": s4_kernels_hash(), "s4_command": "python scripts/cost_tables.py --s4",
           "s4_seconds": round(seconds)})


def merge_planner(core: str, out: Path, rows: list[str], seconds: float) -> None:
    """Replace the planner's rows ("planner": 1) of `core`'s table with `rows` (the others kept)."""
    merge(core, out, rows, lambda r: bool(r.get("planner")),
          {"planner_kernels": kernel_sources_hash(), "planner_command": "python scripts/cost_tables.py --planner",
           "planner_seconds": round(seconds)})


def leave_one_out(core: str, isa: str) -> tuple[int, int]:
    """(cases, cases where the rule, predicting each case from all the others, picks a candidate
    more than 3 % slower than the better one)."""
    rows = kc.load_table(core)
    misses = 0
    for i, r in enumerate(rows):
        got = kc.predict(rows[:i] + rows[i + 1:], r.shape, r.path, isa)
        chosen = r.ours if got is not None and got[0] < got[1] else r.cmsis
        misses += chosen > 1.03 * min(r.ours, r.cmsis)
    return len(rows), misses


def summary(cores: list[str]) -> str:
    """Markdown: per core and group, the cases, where mcugen's kernel wins and the median ratio."""
    lines = ["| core | kernel | mcugen path | cases | mcugen faster | median mcugen / CMSIS-NN |",
             "| --- | --- | --- | ---: | ---: | ---: |"]
    loo = []
    for core in cores:
        board = load_board(core)
        if board.arch != "arm":  # no CMSIS-NN to compare with
            continue
        rows = kc.load_table(core)
        for bits in (8, 4):
            for kind in ("conv", "dw", "fc", "bmm"):
                for path in sorted({r.path for r in rows if r.shape.kind == kind and r.shape.bits == bits}):
                    g = [r for r in rows if r.shape.kind == kind and r.path == path and r.shape.bits == bits]
                    ratio = float(np.median([r.ours / r.cmsis for r in g]))
                    name = kind if bits == 8 else kind + " s4"
                    lines.append(f"| {core} | {name} | {path} | {len(g)} | {sum(r.ours < r.cmsis for r in g)} | "
                                 f"{ratio:.2f} |")
        n, miss = leave_one_out(core, board.isa)
        loo.append(f"- {core}: {miss} of {n} cases more than 3 % slower than the better candidate")
    return "\n".join(lines + ["", "Leave-one-out (each case predicted from the others):", ""] + loo)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/cost_tables.py", description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--cores", default=",".join(CORES))
    ap.add_argument("--out", type=Path, default=TABLES)
    ap.add_argument("--limit", type=int, default=0, help="only the first N shapes (a quick check)")
    ap.add_argument("--summary", action="store_true", help="print the committed tables' figures (markdown)")
    ap.add_argument("--s4", action="store_true", help="measure only the 4-bit rows and merge them into the tables")
    ap.add_argument("--planner", action="store_true",
                    help="measure only the memory planner's rows (bands, lean calls, small layers) and merge them")
    args = ap.parse_args(argv)
    if args.summary:
        print(summary(args.cores.split(",")))
        return 0
    cores = args.cores.split(",")
    path = cmsis_path()
    if path is None and any(load_board(core).arch == "arm" for core in cores):
        print("scripts/cost_tables.py: set CMSIS_NN_PATH to a CMSIS-NN v7 checkout", file=sys.stderr)
        return 2
    version = str(check_version(path)) if path is not None else None
    cases = s4_cases() if args.s4 else band_cases() if args.planner else sweep_cases()
    if args.limit:
        cases = cases[:args.limit]
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for core in cores:
        t0 = time.perf_counter()
        board = load_board(core)
        arm = board.arch == "arm"
        # RISC-V: the table estimates models, whose requantization is realistic: the sweep's
        # wide-shift repeats (the same shapes, "generic" on every path) would mix slower counts in
        mine = cases if arm else [c for c in cases if not c.name.startswith("g")]
        if args.s4 and not arm:
            continue
        if args.planner:
            mine, counts = planner_counts(mine, board)
        else:
            counts = measure(mine, board, path if arm else None)
        seconds = time.perf_counter() - t0
        rows = [json.dumps({"shape": s.as_list(), "path": n.path, "ours": n.ours, "cmsis": n.cmsis})
                for s, n in zip((c.shape for c in mine), counts, strict=True)]
        if args.planner:
            rows = [r[:-1] + ', "planner": 1}' for r in rows]
            merge_planner(board.name, args.out, rows, seconds)
            print(f"{board.name}: {len(mine)} planner cases, {seconds:.0f} s", flush=True)
            continue
        if args.s4:
            merge_s4(board.name, args.out, rows, seconds)
            wins = sum(1 for n in counts if n.cmsis is not None and n.ours < n.cmsis)
            print(f"{board.name}: {len(mine)} s4 cases, CMSIS-NN's call on {sum(n.cmsis is not None for n in counts)}, "
                  f"mcugen faster on {wins}, {seconds:.0f} s", flush=True)
            continue
        if arm:
            head = {"core": board.name, "isa": board.isa, "cmsis_nn": version, "cmsis_opt": CMSIS_OPT,
                    "bundle_opt": "-O2", "arm_none_eabi_gcc": compiler_version(), "kernels": kernel_sources_hash(),
                    "command": "python scripts/cost_tables.py", "seconds": round(seconds),
                    "shape_fields": list(SHAPE_FIELDS)}
        else:
            head = {"core": board.name, "isa": board.isa, "cmsis_nn": None, "bundle_opt": "-O2",
                    "riscv64_unknown_elf_gcc": compiler_version("riscv64-unknown-elf-gcc"),
                    "kernels": kernel_sources_hash(), "command": f"python scripts/cost_tables.py --cores {core}",
                    "seconds": round(seconds), "shape_fields": list(SHAPE_FIELDS)}
        text = json.dumps(head, indent=1)[:-2] + ',\n "cases": [\n  ' + ",\n  ".join(rows) + "\n ]\n}\n"
        (args.out / f"{board.name}.json").write_text(text)
        wins = sum(1 for n in counts if n.cmsis is not None and n.ours < n.cmsis)
        print(f"{board.name}: {len(mine)} cases" + (f", mcugen faster on {wins}" if arm else "")
              + f", {seconds:.0f} s", flush=True)
    print(f"cost tables written to {args.out} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
