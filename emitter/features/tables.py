"""The front end's constant tables, made once at build time: window, mel filters, DCT.

The very same integer (or float32) arrays go to the `cmsisdsp` reference (reference.py) and, as
`static const` flash data, to the generated C (render.py), so host and device start from identical
numbers. Mel filters and the DCT come from `cmsisdsp.mfcc` (CMSIS-DSP's own generator of the
tables its MFCC expects); the window is numpy's formula, periodic, `frame_length` long and zero up
to `fft_length` (the zero-padded tail of the FFT frame); a spectrogram has the window only. logmel
uses the MFCC pipeline with an
identity "DCT": 0x7FFF (q15), 0x7FFFFFFF (q31) or 1.0 (f32) on the diagonal, so its output is the
log-mel energies times (1 - 2^-15) or (1 - 2^-31) in fixed point, exactly 1 in f32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from emitter.errors import UsageError
from emitter.features.dsp import cmsisdsp
from emitter.features.spec import FrontendSpec

DTYPES: dict[str, np.dtype[Any]] = {"q15": np.dtype(np.int16), "q31": np.dtype(np.int32),
                                   "f32": np.dtype(np.float32)}
# Fraction bits of the raw output: arm_mfcc_q15 gives q8.7, arm_mfcc_q31 q8.23; arm_cmplx_mag_q15
# gives 2.14, arm_cmplx_mag_q31 2.30 (CMSIS-DSP's docs).
OUTPUT_FRACTION_BITS = {"q15": 7, "q31": 23}
SPECTROGRAM_FRACTION_BITS = {"q15": 14, "q31": 30}


def fraction_bits(spec: FrontendSpec) -> int:
    """value = raw / 2^fraction_bits for the fixed-point arithmetics."""
    table = SPECTROGRAM_FRACTION_BITS if spec.kind == "spectrogram" else OUTPUT_FRACTION_BITS
    return table[spec.arithmetic]
IDENTITY_ONE = {"q15": 0x7FFF, "q31": 0x7FFFFFFF, "f32": 1.0}


@dataclass(frozen=True)
class Tables:
    window: np.ndarray  # [fft_length], the arithmetic's dtype
    filter_pos: np.ndarray  # [n_mels] uint32: first FFT bin of each mel filter
    filter_lengths: np.ndarray  # [n_mels] uint32: bins per filter
    filter_coefs: np.ndarray  # [sum(filter_lengths)], the arithmetic's dtype
    dct: np.ndarray  # [coeffs * n_mels], row-major, the arithmetic's dtype

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in (self.window, self.filter_pos, self.filter_lengths,
                                           self.filter_coefs, self.dct))


def _cmsis_format(arith: str) -> int:
    dt = cmsisdsp().datatype
    return {"q15": dt.Q15, "q31": dt.Q31, "f32": dt.F32}[arith]


def window_values(spec: FrontendSpec) -> np.ndarray:
    """The window in float64: periodic hann or hamming over frame_length, zeros up to fft_length."""
    n = np.arange(spec.frame_length, dtype=np.float64)
    phase = np.cos(2.0 * np.pi * n / spec.frame_length)
    w = 0.5 - 0.5 * phase if spec.window == "hann" else 0.54 - 0.46 * phase
    return np.concatenate([w, np.zeros(spec.fft_length - spec.frame_length)])


def make_tables(spec: FrontendSpec) -> Tables:
    """Every table of the spec, in its arithmetic's type."""
    dsp = cmsisdsp()
    dt, mf = dsp.datatype, dsp.mfcc

    fmt, dtype = _cmsis_format(spec.arithmetic), DTYPES[spec.arithmetic]
    window = np.asarray(dt.convert(window_values(spec), fmt), dtype=dtype)
    if spec.kind == "spectrogram":  # window only
        none = np.zeros(0, dtype=np.uint32)
        return Tables(window=window, filter_pos=none, filter_lengths=none, filter_coefs=np.zeros(0, dtype),
                      dct=np.zeros(0, dtype))
    narrow = False
    try:
        lengths, pos, coefs = mf.melFilterMatrix(fmt, spec.f_min, spec.f_max, spec.n_mels,
                                                 spec.sample_rate, spec.fft_length)
        # a filter between two FFT bins covers none: cmsisdsp then repeats the previous one
        narrow = bool(np.any(np.diff(np.asarray(pos)) <= 0) or np.any(np.asarray(coefs) == 0))
    except (UnboundLocalError, NameError):  # the first filter covers no FFT bin
        narrow = True
    if narrow:
        raise UsageError(f"{spec.source}: {spec.n_mels} mel filters between {spec.f_min:g} and "
                         f"{spec.f_max:g} Hz are too narrow for fft_length {spec.fft_length} at "
                         f"{spec.sample_rate} Hz (a filter covers no FFT bin): use fewer mel filters, "
                         "a wider band or a longer FFT")
    if spec.kind == "mfcc":
        dct = np.asarray(mf.dctMatrix(fmt, spec.n_mfcc, spec.n_mels), dtype=dtype)
    else:
        dct = (np.eye(spec.n_mels) * IDENTITY_ONE[spec.arithmetic]).astype(dtype).ravel()
    return Tables(window=window, filter_pos=np.asarray(pos, dtype=np.uint32),
                  filter_lengths=np.asarray(lengths, dtype=np.uint32),
                  filter_coefs=np.asarray(coefs, dtype=dtype), dct=dct)
