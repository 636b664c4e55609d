"""The keyword example's audio: words spoken by espeak-ng in several voices, speeds and pitches,
placed at a random offset in a 0.8 s window at 8 kHz, with noise; and the 8-bit mu-law storage of
the committed held-out clips (the table that decodes them is stored with them, so decoding is exact).
"""
from __future__ import annotations

import io
import shutil
import subprocess
import wave

import numpy as np

RATE = 8000
SAMPLES = 6400  # 49 frames of 256 samples, hop 128: 256 + 48 * 128
WORDS = ("yes", "no", "up", "down", "left", "right", "stop", "go")
CLASSES = ("silence",) + WORDS
VOICES = ("en", "en-us", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-gb-x-gbclan", "en-gb-x-gbcwmd")
VARIANTS = ("", "+f1", "+f2", "+f3", "+f4", "+m1", "+m2", "+m3", "+m4", "+m6", "+m7")


def speak(word: str, voice: str, speed: int, pitch: int) -> np.ndarray:
    """espeak-ng's utterance as float64 at RATE (low-passed at 3.6 kHz, then resampled)."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise SystemExit("espeak-ng is not installed: apt-get install espeak-ng (scripts/setup.sh does)")
    out = subprocess.run([exe, "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", word],
                         capture_output=True, check=True).stdout
    with wave.open(io.BytesIO(out)) as w:
        rate = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)
    n = np.arange(-48, 49)
    taps = np.sinc(2 * 3600 / rate * n) * np.hamming(len(n))
    x = np.convolve(x, taps / taps.sum(), mode="same")
    t = np.arange(0, len(x) / rate, 1 / RATE)
    return np.interp(t * rate, np.arange(len(x)), x)


def place(speech: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    """One int16 window: the trimmed utterance at a random offset and level, plus noise."""
    clip = np.zeros(SAMPLES)
    if speech is not None:
        loud = np.flatnonzero(np.abs(speech) > 0.05 * np.abs(speech).max())
        s = speech[loud[0]:loud[-1] + 1][:SAMPLES]
        start = int(rng.integers(0, SAMPLES - len(s) + 1))
        clip[start:start + len(s)] = s / np.abs(s).max() * rng.uniform(3000, 20000)
    noise = rng.normal(0, 1, SAMPLES)
    if rng.random() < 0.5:  # brownish noise half of the time
        noise = np.cumsum(noise)
        noise -= np.linspace(noise[0], noise[-1], SAMPLES)
        noise /= noise.std() + 1e-9
    clip += noise * rng.uniform(20, 1500)
    return np.clip(np.round(clip), -32768, 32767).astype(np.int16)


def make_clips(per_class: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """per_class windows of every class (silence = noise only); int16 [N, SAMPLES], labels [N]."""
    rng = np.random.default_rng(seed)
    clips, labels = [], []
    for label, word in enumerate(CLASSES):
        for _ in range(per_class):
            speech = None
            if word != "silence":
                voice = VOICES[int(rng.integers(len(VOICES)))] + VARIANTS[int(rng.integers(len(VARIANTS)))]
                speech = speak(word, voice, int(rng.integers(110, 210)), int(rng.integers(20, 85)))
            clips.append(place(speech, rng))
            labels.append(label)
    return np.stack(clips), np.array(labels, dtype=np.int64)


MU = 255.0


def mulaw_table() -> np.ndarray:
    """int16 sample of each of the 256 mu-law codes."""
    y = np.arange(256) / 255.0 * 2 - 1
    x = np.sign(y) * ((1 + MU) ** np.abs(y) - 1) / MU
    return np.round(x * 32767).astype(np.int16)


def encode_mulaw(pcm: np.ndarray) -> np.ndarray:
    """int16 -> the nearest mu-law code (uint8)."""
    table = mulaw_table().astype(np.int64)
    x = np.asarray(pcm, dtype=np.int64)
    idx = np.clip(np.searchsorted(table, x), 1, 255)
    lower_closer = np.abs(x - table[idx - 1]) <= np.abs(table[idx] - x)
    return np.where(lower_closer, idx - 1, idx).astype(np.uint8)


def decode_mulaw(codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    return np.asarray(table, dtype=np.int16)[np.asarray(codes, dtype=np.int64)]
