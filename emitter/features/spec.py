"""The front-end spec: a TOML file naming the features a model eats (docs/frontend.md).

    [frontend]
    kind = "mfcc"            # mfcc | logmel | spectrogram (fft_length / 2 + 1 magnitudes per frame)
    sample_rate = 16000      # Hz
    frame_length = 640       # samples per frame (the window's length)
    frame_step = 320         # samples per hop
    fft_length = 1024        # power of two in 32..4096, >= frame_length
    window = "hann"          # hann | hamming (periodic, frame_length long, zero up to fft_length)
    n_mels = 40              # mfcc, logmel
    f_min = 20.0             # Hz; mfcc, logmel
    f_max = 4000.0           # Hz, <= sample_rate / 2; mfcc, logmel
    n_mfcc = 10              # mfcc only: DCT outputs per frame
    arithmetic = "q15"       # q15 | q31 | f32
    layout = "frames_coeffs" # model input order: frames_coeffs (t*C + c) | coeffs_frames (c*T + t)
    frames = 49              # optional: checked against the model input's size

Every key is checked; a missing, unknown or out-of-range key is a UsageError (exit 2) naming the
file, the key, what it holds and what is allowed.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emitter.errors import UsageError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found]

KINDS = ("mfcc", "logmel", "spectrogram")
WINDOWS = ("hann", "hamming")
ARITHMETICS = ("q15", "q31", "f32")
LAYOUTS = ("frames_coeffs", "coeffs_frames")
FFT_LENGTHS = (32, 64, 128, 256, 512, 1024, 2048, 4096)  # CMSIS-DSP's arm_mfcc_init_<N>_* sizes

REQUIRED = ("kind", "sample_rate", "frame_length", "frame_step", "fft_length", "arithmetic")
DEFAULTS: dict[str, Any] = {"window": "hann", "n_mels": None, "f_min": 20.0, "f_max": None, "n_mfcc": None,
                            "layout": "frames_coeffs", "frames": None}
MEL_KEYS = ("n_mels", "f_min", "f_max", "n_mfcc")


@dataclass(frozen=True)
class FrontendSpec:
    kind: str
    sample_rate: int
    frame_length: int
    frame_step: int
    fft_length: int
    window: str
    n_mels: int
    f_min: float
    f_max: float
    n_mfcc: int
    arithmetic: str
    layout: str
    frames: int | None  # None: taken from the model input's size
    source: str = "<spec>"  # the file name, for messages

    @property
    def coeffs(self) -> int:
        """Features per frame: the MFCC count, the mel band count (logmel) or fft_length / 2 + 1."""
        if self.kind == "spectrogram":
            return self.fft_length // 2 + 1
        return self.n_mfcc if self.kind == "mfcc" else self.n_mels

    def window_samples(self, frames: int) -> int:
        """PCM samples of a whole window of `frames` frames."""
        return self.frame_length + (frames - 1) * self.frame_step


def _int(spec: dict[str, Any], key: str, where: str, lo: int, hi: int) -> int:
    v = spec[key]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise UsageError(f"{where}: '{key}' = {v!r}: expected an integer in [{lo}, {hi}]")
    return v


def _float(spec: dict[str, Any], key: str, where: str, lo: float, hi: float) -> float:
    v = spec[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= float(v) <= hi:
        raise UsageError(f"{where}: '{key}' = {v!r}: expected a number in [{lo:g}, {hi:g}]")
    return float(v)


def _choice(spec: dict[str, Any], key: str, where: str, allowed: tuple[str, ...]) -> str:
    v = spec[key]
    if v not in allowed:
        raise UsageError(f"{where}: '{key}' = {v!r}: expected one of {', '.join(allowed)}")
    return str(v)


def parse_spec(table: dict[str, Any], where: str = "<spec>") -> FrontendSpec:
    """A FrontendSpec from the [frontend] table (or the top level) of a parsed TOML document."""
    spec = table.get("frontend", table)
    if not isinstance(spec, dict):
        raise UsageError(f"{where}: [frontend] must be a table")
    unknown = sorted(set(spec) - set(REQUIRED) - set(DEFAULTS))
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {', '.join(unknown)}; the keys are "
                         f"{', '.join(REQUIRED + tuple(DEFAULTS))} (see docs/frontend.md)")
    missing = [k for k in REQUIRED if k not in spec]
    if missing:
        raise UsageError(f"{where}: missing key(s) {', '.join(missing)} (see docs/frontend.md)")
    given = set(spec)
    spec = DEFAULTS | spec
    kind = _choice(spec, "kind", where, KINDS)
    rate = _int(spec, "sample_rate", where, 1000, 192000)
    fft = _int(spec, "fft_length", where, 32, 4096)
    if fft not in FFT_LENGTHS:
        raise UsageError(f"{where}: 'fft_length' = {fft}: expected a power of two, one of "
                         f"{', '.join(map(str, FFT_LENGTHS))} (CMSIS-DSP's MFCC sizes)")
    frame = _int(spec, "frame_length", where, 16, fft)
    step = _int(spec, "frame_step", where, 1, frame)
    if kind == "spectrogram":
        extra = [k for k in MEL_KEYS if k in given]
        if extra:
            raise UsageError(f"{where}: {', '.join(extra)} are for mfcc and logmel; a spectrogram gives "
                             f"fft_length / 2 + 1 = {fft // 2 + 1} magnitudes per frame: remove them")
        spec.update(n_mels=0, n_mfcc=0, f_min=0.0, f_max=rate / 2)
        return _spec(spec, where, kind, rate, fft, frame, step)
    if spec["n_mels"] is None:
        raise UsageError(f"{where}: kind '{kind}' needs 'n_mels' (mel bands)")
    n_mels = _int(spec, "n_mels", where, 2, fft // 2)
    if spec["f_max"] is None:
        spec["f_max"] = rate / 2
    f_min = _float(spec, "f_min", where, 0.0, rate / 2)
    f_max = _float(spec, "f_max", where, f_min + 1.0, rate / 2)
    if kind == "mfcc":
        if spec["n_mfcc"] is None:
            raise UsageError(f"{where}: kind 'mfcc' needs 'n_mfcc' (DCT outputs per frame, 1..n_mels)")
        n_mfcc = _int(spec, "n_mfcc", where, 1, n_mels)
    else:
        if spec["n_mfcc"] is not None:
            raise UsageError(f"{where}: 'n_mfcc' is for kind 'mfcc'; kind '{kind}' gives n_mels = {n_mels} "
                             "values per frame: remove it")
        n_mfcc = n_mels
    spec.update(n_mels=n_mels, n_mfcc=n_mfcc, f_min=f_min, f_max=f_max)
    return _spec(spec, where, kind, rate, fft, frame, step)


def _spec(spec: dict[str, Any], where: str, kind: str, rate: int, fft: int, frame: int, step: int) -> FrontendSpec:
    frames = None if spec["frames"] is None else _int(spec, "frames", where, 1, 4096)
    return FrontendSpec(kind=kind, sample_rate=rate, frame_length=frame, frame_step=step, fft_length=fft,
                        window=_choice(spec, "window", where, WINDOWS), n_mels=spec["n_mels"],
                        f_min=spec["f_min"], f_max=spec["f_max"], n_mfcc=spec["n_mfcc"],
                        arithmetic=_choice(spec, "arithmetic", where, ARITHMETICS),
                        layout=_choice(spec, "layout", where, LAYOUTS), frames=frames, source=where)


def load_spec(path: str | Path) -> FrontendSpec:
    """Read and check a front-end spec file."""
    p = Path(path)
    try:
        table = tomllib.loads(p.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read the front-end spec '{p}': {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{p.name}: not valid TOML: {exc}") from None
    return parse_spec(table, p.name)
