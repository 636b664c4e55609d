"""CMSIS-DSP's C sources for a front end: where they come from, which files it compiles, and how.

Where: `CMSIS_DSP_PATH` (your CMSIS-DSP tree: Include/, PrivateInclude/, Source/), else the copy
that `python -m emitter.features.sources fetch` (run by scripts/setup.sh) extracts from the
`cmsisdsp` source distribution on the package registry into ~/.cache/mcugen/cmsis-dsp-<version>
(or $MCUGEN_CACHE/cmsis-dsp-<version>). Never into the repository.

How: every CMSIS-DSP file is compiled with -D__GNUC_PYTHON__, CMSIS-DSP's documented switch for
building without CMSIS-Core (arm_math_types.h: "the only way to build on a target not supported by
CMSIS Core"), the very switch the `cmsisdsp` Python package is built with. So no CMSIS-Core
header is needed, and on Cortex-M4/M7/M33 the plain C paths run (CMSIS-Core's DSP intrinsics are
off): the same code, operation for operation, as the host reference. Also -DARM_MATH_AUTOVECTORIZE:
CMSIS-DSP's hand-written Helium paths of the q15/q31 MFCC are not bit-exact with its C paths (on
Cortex-M55, measured with 1.10.3: raw q15 features off by up to 9 LSB), so the C paths are built
everywhere and the compiler may vectorize them.

Which: the files arm_mfcc_init_<N>_<arith> and arm_mfcc_<arith> (a spectrogram: arm_mult,
arm_rfft[_fast]_init_<N>, arm_rfft[_fast], arm_cmplx_mag) pull in, found by linking them against the
whole library, plus the MVE tables and the complex FFT's fixed-size init for Helium builds.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from emitter.errors import UsageError

VERSION = "1.10.3"  # the cmsisdsp release whose C sources and Python package were tested together
DEFINES = ("__GNUC_PYTHON__", "ARM_MATH_AUTOVECTORIZE")
INCLUDE_DIRS = ("Include", "PrivateInclude")

_COMMON = ("CommonTables/arm_common_tables.c", "CommonTables/arm_const_structs.c",
           "CommonTables/arm_mve_tables.c", "TransformFunctions/arm_bitreversal2.c")
_FIXED = ("BasicMathFunctions/arm_offset_q31.c", "BasicMathFunctions/arm_scale_q31.c",
          "BasicMathFunctions/arm_shift_q31.c", "FastMathFunctions/arm_sqrt_q31.c",
          "FastMathFunctions/arm_vlog_q31.c", "TransformFunctions/arm_bitreversal.c")


def _per_type(t: str) -> tuple[str, ...]:
    return (f"BasicMathFunctions/arm_abs_{t}.c", f"BasicMathFunctions/arm_mult_{t}.c",
            f"BasicMathFunctions/arm_scale_{t}.c", f"BasicMathFunctions/arm_shift_{t}.c",
            f"StatisticsFunctions/arm_absmax_{t}.c", f"ComplexMathFunctions/arm_cmplx_mag_{t}.c",
            f"BasicMathFunctions/arm_dot_prod_{t}.c", f"MatrixFunctions/arm_mat_vec_mult_{t}.c",
            f"FastMathFunctions/arm_divide_{t}.c", f"TransformFunctions/arm_cfft_{t}.c",
            f"TransformFunctions/arm_cfft_radix4_{t}.c", f"TransformFunctions/arm_cfft_init_{t}.c",
            f"TransformFunctions/arm_rfft_{t}.c",
            f"TransformFunctions/arm_rfft_init_{t}.c", f"TransformFunctions/arm_mfcc_{t}.c",
            f"TransformFunctions/arm_mfcc_init_{t}.c")


SOURCES: dict[str, tuple[str, ...]] = {
    "q15": _COMMON + tuple(sorted(set(_FIXED + _per_type("q15")))),
    "q31": _COMMON + tuple(sorted(set(_FIXED + _per_type("q31")))),
    "f32": _COMMON + tuple(sorted((
        "BasicMathFunctions/arm_dot_prod_f32.c", "BasicMathFunctions/arm_mult_f32.c",
        "BasicMathFunctions/arm_offset_f32.c", "BasicMathFunctions/arm_scale_f32.c",
        "ComplexMathFunctions/arm_cmplx_mag_f32.c", "FastMathFunctions/arm_vlog_f32.c",
        "MatrixFunctions/arm_mat_vec_mult_f32.c", "StatisticsFunctions/arm_absmax_f32.c",
        "TransformFunctions/arm_cfft_f32.c", "TransformFunctions/arm_cfft_init_f32.c",
        "TransformFunctions/arm_cfft_radix8_f32.c", "TransformFunctions/arm_mfcc_f32.c",
        "TransformFunctions/arm_mfcc_init_f32.c", "TransformFunctions/arm_rfft_fast_f32.c",
        "TransformFunctions/arm_rfft_fast_init_f32.c"))),
}


def _spectrogram(t: str) -> tuple[str, ...]:
    files = {f"ComplexMathFunctions/arm_cmplx_mag_{t}.c", f"BasicMathFunctions/arm_mult_{t}.c",
             f"TransformFunctions/arm_cfft_{t}.c", f"TransformFunctions/arm_cfft_init_{t}.c"}
    if t == "f32":
        files |= {"TransformFunctions/arm_cfft_radix8_f32.c", "TransformFunctions/arm_rfft_fast_f32.c",
                  "TransformFunctions/arm_rfft_fast_init_f32.c"}
    else:
        files |= {f"TransformFunctions/arm_cfft_radix4_{t}.c", f"TransformFunctions/arm_rfft_{t}.c",
                  f"TransformFunctions/arm_rfft_init_{t}.c", f"BasicMathFunctions/arm_shift_{t}.c",
                  "FastMathFunctions/arm_sqrt_q31.c", "TransformFunctions/arm_bitreversal.c"}
    return _COMMON + tuple(sorted(files))


# A spectrogram (arm_mult, arm_rfft[_fast], arm_cmplx_mag) needs fewer files than the MFCC.
SPECTROGRAM_SOURCES: dict[str, tuple[str, ...]] = {t: _spectrogram(t) for t in ("q15", "q31", "f32")}


def sources_for(kind: str, arithmetic: str) -> tuple[str, ...]:
    """CMSIS-DSP files (relative to Source/) a front end of this kind and arithmetic compiles."""
    return (SPECTROGRAM_SOURCES if kind == "spectrogram" else SOURCES)[arithmetic]


def cache_dir() -> Path:
    root = os.environ.get("MCUGEN_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "mcugen") / f"cmsis-dsp-{VERSION}"


def is_tree(path: Path) -> bool:
    return (path / "Include" / "arm_math.h").is_file() and (path / "Source").is_dir()


def cmsis_dsp_path(required: bool = True) -> Path | None:
    """CMSIS_DSP_PATH, else the fetched copy; a UsageError saying how to get one when required."""
    env = os.environ.get("CMSIS_DSP_PATH")
    if env:
        path = Path(env)
        if not is_tree(path):
            raise UsageError(f"CMSIS_DSP_PATH={env} is not a CMSIS-DSP tree (no Include/arm_math.h "
                             "or Source/): point it at the folder holding Include/ and Source/")
        return path.resolve()
    if is_tree(cache_dir()):
        return cache_dir()
    if required:
        raise UsageError("a front end needs CMSIS-DSP's sources: set CMSIS_DSP_PATH to your CMSIS-DSP "
                         f"tree, or run `python -m emitter.features.sources fetch` (extracts the cmsisdsp "
                         f"{VERSION} source distribution into {cache_dir()})")
    return None


def fetch() -> Path:
    """Download the cmsisdsp sdist with pip and extract Include/, PrivateInclude/, Source/ and
    LICENSE into cache_dir(); returns it (nothing is done when it is already there)."""
    dest = cache_dir()
    if is_tree(dest):
        return dest
    with tempfile.TemporaryDirectory(prefix="mcugen-dsp-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "cmsisdsp",
               f"cmsisdsp=={VERSION}", "-d", tmp, "-q", "--disable-pip-version-check"]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        archives = sorted(Path(tmp).glob("cmsisdsp-*.tar.gz"))
        if res.returncode != 0 or not archives:
            raise UsageError(f"`{' '.join(cmd)}` failed:\n{res.stderr.strip()}")
        staging = dest.with_name(dest.name + ".part")
        staging.mkdir(parents=True, exist_ok=True)
        keep = ("Include/", "PrivateInclude/", "Source/", "LICENSE")
        with tarfile.open(archives[0]) as tar:
            members = []
            for m in tar.getmembers():
                rel = m.name.split("/", 1)[1] if "/" in m.name else ""
                if rel.startswith(keep) and (m.isfile() or m.isdir()):
                    m.name = rel
                    members.append(m)
            tar.extractall(staging, members=members, filter="data")
        staging.rename(dest)
    return dest


if __name__ == "__main__":
    if sys.argv[1:] != ["fetch"]:
        print("usage: python -m emitter.features.sources fetch", file=sys.stderr)
        sys.exit(2)
    try:
        print(f"CMSIS_DSP_PATH={fetch()}")
    except UsageError as exc:
        print(f"mcugen: error: {exc}", file=sys.stderr)
        sys.exit(2)
