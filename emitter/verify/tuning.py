"""Measuring both candidates of single-layer cases in QEMU, and the `--tune` cache.

measure(cases, board, cmsis): the cases become one multi-branch ONNX model (cost_cases.onnx_of),
compiled twice for the board: with the portable backend (mcugen's kernel, the path the board
takes) and with the cmsis-nn backend converting every layer it can (cmsis_choice="cmsis"). Each is
built like `mcugen verify --profile` builds a bundle (bundle -O2, CMSIS-NN -Ofast) and run once in
QEMU with a lap marker after every layer (emitter/verify/profile.py): one count per case and candidate.
Cases go in chunks that fit the board's test-image memory (weights in flash, tensors in RAM);
the CMSIS-NN library is compiled once per call and reused for every chunk. Without CMSIS-NN
(cmsis None: a RISC-V core, where it does not run) only mcugen's kernel is counted.

`--tune` (tuned_counts) measures a model's own layers this way, cached on disk per layer under
$MCUGEN_CACHE_DIR/tune (default ~/.cache/mcugen/tune): one JSON file per key = kernel, shape,
mcugen's code path, core, arm-none-eabi-gcc version, CMSIS-NN version, hash of the kernel sources.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import onnx

from emitter import resources
from emitter.backends.cost_cases import KERNELS, Case, Shape, band_path, case_of, lean_call, onnx_of
from emitter.boards import Board
from emitter.calls import Prepared, is_portable
from emitter.compiler import Compiled
from emitter.errors import VerifyError
from emitter.plan.stream import band_params
from emitter.resources import data_dir

CMSIS_OPT = "-Ofast"


@dataclass(frozen=True)
class Counts:
    """Executed instructions of one case: mcugen's kernel (on the path `path`) and CMSIS-NN's
    (None where CMSIS-NN does not take the layer)."""
    ours: int
    cmsis: int | None
    path: str


def _chunks(cases: list[Case], board: Board, lean: bool = False, bands: bool = False) -> list[list[Case]]:
    flash = board.code_length - 200_000  # weights (+ MVE's padded copies) and parameters; code below 200 KB
    ram = board.data_length // 2 - 256_000  # inputs + outputs; arena scratch and stack below the rest
    out: list[list[Case]] = [[]]
    used_f = used_r = 0
    for c in cases:
        s = c.shape
        f = s.taps * s.c_out + 16 * s.c_out + 600
        if s.kind == "dw" and (lean or bands):  # the lean call's channel groups (dsp_groups, mve_groups)
            f += 4 * max(s.taps, 15) * s.c_out + 24 * s.c_out
        r = s.batches * s.h * s.w * s.c_in + s.outputs + 64
        if s.kind == "bmm":  # a constant lhs [B, M, K], an input [B, N, K]
            f, r = s.batches * s.h * s.c_in + 600, s.batches * s.c_out * s.c_in + s.outputs + 64
        if out[-1] and (used_f + f > flash or used_r + r > ram):
            out.append([])
            used_f = used_r = 0
        out[-1].append(c)
        used_f += f
        used_r += r
    return [ch for ch in out if ch]


def _profile(cases: list[Case], board: Board, cmsis: Path | None, work: Path,
             lean: bool = False, bands: bool = False) -> list[tuple[str, int, str]]:
    """(kernel, instructions, mcugen's code path) per case, with the portable backend (cmsis None)
    or CMSIS-NN everywhere; lean: each layer whose kernel has one through its lean call with the least
    scratch (a single-layer segment run whole: search.leaner's), path lean_call(its lean path); bands: each
    call with the build-time constants a streamed plan's band calls carry (stream.band_params; a
    lean call has them anyway), its path named band_path()."""
    from emitter.backends.kernel_choice import path_of
    from emitter.compiler import compile_model
    from emitter.plan.propose import lean_path_of
    from emitter.render.bundle import render_bundle
    from emitter.render.write import write_bundle
    from emitter.verify.profile import profile_layers
    from emitter.verify.run import load_inputs

    work.mkdir(parents=True, exist_ok=True)
    model = work / "cases.onnx"
    onnx.save(onnx_of(cases), str(model))
    c = compile_model(model, name="cases", io_nhwc=True, board=board,
                      backend="cmsis-nn" if cmsis else "portable", cmsis_path=cmsis, cmsis_choice="cmsis")
    if lean:
        c = _lean(c)
    elif bands:
        c = replace(c, prepared=tuple(replace(p, params=band_params(p)) if p.is_portable and p.params is not None
                                      else p for p in c.prepared))
    layers = [(k, p) for k, p in enumerate(c.prepared) if p.kernel]  # a batch matmul's Transpose: a view
    if len(layers) != len(cases):
        raise VerifyError(f"{len(cases)} cost cases lowered to {len(layers)} layers")
    write_bundle(render_bundle(c, " ".join(board.cflags), board.name), work / "bundle", force=True)
    prof = profile_layers(c, work / "bundle", board, load_inputs(c, None, 1), work, CMSIS_OPT)
    by_index = {lay.index: lay.instructions for lay in prof.layers}
    leans = {s.first for s in c.plan.schedule.segments}

    def path(k: int, p: Prepared) -> str:
        name = lean_call(lean_path_of(p, board.isa)[0]) if k in leans else path_of(p, board.isa)
        return band_path(name) if bands else name
    return [(p.kernel, by_index[k], path(k, p) if p.is_portable else "") for k, p in layers]


def _lean(c: Compiled) -> Compiled:
    """c with every layer whose kernel has a lean call taking it with the least scratch, whole."""
    from emitter.plan.arena import plan
    from emitter.plan.propose import singles
    from emitter.plan.stream import Schedule

    segs = tuple(replace(s, sim=replace(s.sim, down={}), up={})
                 for s in singles(c.graph, c.prepared, c.plan_isa, lean=True) if s.lean)
    return replace(c, plan=plan(c.graph, [p.scratch for p in c.prepared], c.plan.alignment, 0,
                                Schedule("inplace", segs)))


def measure(cases: list[Case], board: Board, cmsis: Path | None, work: Path | None = None,
            lean: bool = False, bands: bool = False) -> list[Counts]:
    """Both candidates' instructions for every case on `board`, in QEMU (cmsis None: mcugen's only;
    lean: mcugen's through its lean call with the least scratch, path lean_call(), and no CMSIS-NN;
    bands: mcugen's calls as a streamed plan's band calls, with their build-time constants, and no
    CMSIS-NN)."""
    with tempfile.TemporaryDirectory(prefix="mcugen-cost-") as tmp:
        root = Path(work or tmp)
        out: list[Counts] = []
        for n, chunk in enumerate(_chunks(cases, board, lean, bands)):
            ours = _profile(chunk, board, None, root / "ours" / str(n), lean, bands)
            if cmsis is None or lean or bands:
                out += [Counts(mine, None, path) for _, mine, path in ours]
                continue
            theirs = _profile(chunk, board, cmsis, root / "cmsis")  # one build folder: CMSIS-NN built once
            for (_, mine, path), (kernel, other, _) in zip(ours, theirs, strict=True):
                out.append(Counts(mine, other if not is_portable(kernel) else None, path))
        return out


# -- the --tune cache ------------------------------------------------------------------------------

@lru_cache(maxsize=2)
def compiler_version(gcc: str = "arm-none-eabi-gcc") -> str:
    res = subprocess.run([gcc, "-dumpfullversion"], capture_output=True, text=True, check=False)
    return res.stdout.strip() or "unknown"


@lru_cache(maxsize=1)
def kernel_sources_hash() -> str:
    """The sources of mcugen's three measured kernels (a kernel change invalidates the cache)."""
    h = hashlib.sha256()
    root = data_dir("mcu_runtime")
    for f in sorted((root / "kernels").glob("*.[ch]")) + sorted((root / "support").glob("*.[ch]")):
        if any(f.name.startswith(k) for k in KERNELS.values()) or f.parent.name == "support":
            h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:12]


def cache_dir() -> Path:
    return resources.cache_dir("tune")


def cache_key(shape: Shape, path: str, core: str, cmsis_version: str, compiler: str | None = None) -> str:
    """The cache key of one layer's measurement: kernel (shape.kind), shape, mcugen's code path,
    core, compiler version, CMSIS-NN version, kernel sources."""
    parts = [KERNELS[shape.kind], repr(shape.as_list()), path, core, compiler or compiler_version(),
             cmsis_version, CMSIS_OPT, kernel_sources_hash()]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:24]


def tune_layers(prepared: tuple[Prepared, ...], board: Board, cmsis: Path,
                cmsis_version: str) -> dict[int, tuple[int, int | None]]:
    """`--tune`: (mcugen's, CMSIS-NN's) instructions of every conv / depthwise / FC layer, by index,
    measured on the board's core (or read from the cache)."""
    from emitter.backends.kernel_choice import path_of

    picked = [(k, c) for k, p in enumerate(prepared) if (c := case_of(p, f"layer{k}")) is not None]
    paths = [path_of(prepared[k], board.isa) for k, _ in picked]
    counts = tuned_counts([c for _, c in picked], paths, board, cmsis, cmsis_version)
    return {k: (n.ours, n.cmsis) for (k, _), n in zip(picked, counts, strict=True)}


def tuned_counts(cases: list[Case], paths: list[str], board: Board, cmsis: Path, cmsis_version: str) -> list[Counts]:
    """Both candidates' counts for each case (mcugen's kernel on `paths`), from the cache or
    measured now (and cached)."""
    folder = cache_dir()
    keys = [cache_key(c.shape, path, board.name, cmsis_version) for c, path in zip(cases, paths, strict=True)]
    found: dict[str, Counts] = {}
    for k in keys:
        f = folder / f"{k}.json"
        if f.is_file():
            d = json.loads(f.read_text())
            found[k] = Counts(d["ours"], d["cmsis"], d["path"])
    missing = {k: c for k, c in zip(keys, cases, strict=True) if k not in found}
    if missing:
        folder.mkdir(parents=True, exist_ok=True)
        for k, counts in zip(missing, measure(list(missing.values()), board, cmsis), strict=True):
            found[k] = counts
            (folder / f"{k}.json").write_text(json.dumps({"ours": counts.ours, "cmsis": counts.cmsis,
                                                         "path": counts.path, "core": board.name}) + "\n")
    return [found[k] for k in keys]
