"""Twin of mcu_fully_connected_s4: in [batches, K], int4 weights [N, K] (values in [-8, 7]),
bias [N] or None; the numerics of mcu_fully_connected_s8 (its golden is this kernel's golden, its
FCParams and kernel sums are this kernel's).

Prepare packs the weights two per byte in the layout of mcu_nn_s4.h (pack_weights): nibble =
weight + 8; per row, 32-input chunks of 16 bytes (byte j: input j low, input j + 16 high), then
the K % 32 last inputs in (K % 32 + 1) // 2 bytes (byte j: input j low, input H + j high); rows
in blocks of four, interleaved chunk by chunk, the blocks' tails row after row, the last N % 4
rows one after another. N * ((K + 1) // 2) bytes: the C reads them straight from flash (no
scratch, no unpacked copy).

CMSIS-NN form: arm_fully_connected_s4 for per-tensor weights (v7.0.0 has no per-channel s4 FC),
its weights repacked in order at build time (emitter/kernels/cmsis_s4.py), chosen by measurement.
"""
from __future__ import annotations

import numpy as np

from emitter.calls import ConstArg, Prepared
from emitter.kernels import c_defines, cmsis_s4
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.mcu_fully_connected_s8 import FCParams, mcu_fully_connected_s8

_C = c_defines("include/mcu_nn_s4.h")
CHUNK = _C["MCU_FC_S4_CHUNK"]
NIBBLE_BIAS = _C["MCU_S4_BIAS"]
BLOCK_ROWS = 4  # MCU_FC_BLOCK_ROWS of mcu_nn.h


def mcu_fully_connected_s4(p: FCParams, input: np.ndarray, weights: np.ndarray,
                           bias: np.ndarray | None) -> np.ndarray:
    """int8 [batches, K] x int4 [N, K] (int8 values in [-8, 7]) (+ int32 [N]) -> int8 [batches, N]:
    the int8 kernel's arithmetic."""
    if weights.size and (int(weights.min()) < -8 or int(weights.max()) > 7):
        raise ValueError("4-bit weights must lie in [-8, 7]")
    return mcu_fully_connected_s8(p, input, weights, bias)


def row_bytes(k: int) -> int:
    return (k + 1) // 2


def _pack_row_part(u: np.ndarray) -> np.ndarray:
    """Unsigned nibbles [rows, T] -> [rows, ceil(T / 2)] bytes: byte j = u[j] | u[H + j] << 4."""
    rows, t = u.shape
    h = (t + 1) // 2
    hi = np.full((rows, h), NIBBLE_BIAS, np.uint8)
    hi[:, :t - h] = u[:, h:]
    return (u[:, :h] | (hi << 4)).astype(np.uint8)


def pack_rows(weights: np.ndarray) -> np.ndarray:
    """int4 [R, K] -> [R, (K + 1) // 2] bytes, each row in the layout's row format (its chunks,
    then its tail)."""
    r, k = weights.shape
    u = (weights.astype(np.int16) + NIBBLE_BIAS).astype(np.uint8)
    full = k - k % CHUNK
    parts = [_pack_row_part(u[:, c:c + CHUNK]) for c in range(0, full, CHUNK)]
    if k > full:
        parts.append(_pack_row_part(u[:, full:]))
    return np.concatenate(parts, axis=1) if parts else np.zeros((r, 0), np.uint8)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    """arm_fully_connected_s4 on the layer's weights (emitter/kernels/cmsis_s4.py)."""
    w, c = p.operands["weights"], p.params
    assert isinstance(w, ConstArg) and isinstance(c, FCParams)
    return cmsis_s4.fc_to_cmsis(conv, p, unpack_weights(w.data, c.out_features, c.in_features))


def pack_weights(weights: np.ndarray) -> np.ndarray:
    """int4 [N, K] (int8 values in [-8, 7]) row-major -> the packed layout, uint8 flat
    [N * ((K + 1) // 2)]."""
    n, k = weights.shape
    if weights.size and (int(weights.min()) < -8 or int(weights.max()) > 7):
        raise ValueError("4-bit weights must lie in [-8, 7]")
    rows = pack_rows(weights)  # [N, RB]
    full = (k - k % CHUNK) // 2  # bytes of a row's whole chunks
    blocked = n - n % BLOCK_ROWS
    parts = []
    for b in range(0, blocked, BLOCK_ROWS):
        block = rows[b:b + BLOCK_ROWS]
        # [4, full] -> [chunks, 4, 16]: chunk after chunk, the four rows' 16 bytes each
        parts.append(block[:, :full].reshape(BLOCK_ROWS, -1, CHUNK // 2).transpose(1, 0, 2).ravel())
        parts.append(block[:, full:].ravel())  # the tails, row after row
    parts.append(rows[blocked:].ravel())
    return np.ascontiguousarray(np.concatenate(parts).astype(np.uint8))


def unpack_weights(packed: np.ndarray, n: int, k: int) -> np.ndarray:
    """The packed layout -> int8 [N, K] (values in [-8, 7]): pack_weights' inverse."""
    rb = row_bytes(k)
    full = (k - k % CHUNK) // 2
    blocked = n - n % BLOCK_ROWS
    rows = np.empty((n, rb), np.uint8)
    flat = packed.ravel()
    pos = 0
    for b in range(0, blocked, BLOCK_ROWS):
        chunks = flat[pos:pos + BLOCK_ROWS * full].reshape(-1, BLOCK_ROWS, CHUNK // 2).transpose(1, 0, 2)
        rows[b:b + BLOCK_ROWS, :full] = chunks.reshape(BLOCK_ROWS, full)
        pos += BLOCK_ROWS * full
        rows[b:b + BLOCK_ROWS, full:] = flat[pos:pos + BLOCK_ROWS * (rb - full)].reshape(BLOCK_ROWS, -1)
        pos += BLOCK_ROWS * (rb - full)
    rows[blocked:] = flat[pos:].reshape(n - blocked, rb)
    out = np.empty((n, k), np.int16)
    col = 0
    for start in range(0, k, CHUNK):
        t = min(CHUNK, k - start)
        h = (t + 1) // 2
        part = rows[:, col:col + h]
        out[:, start:start + h] = part & 0xF
        out[:, start + h:start + t] = (part >> 4)[:, :t - h]
        col += h
    return (out - NIBBLE_BIAS).astype(np.int8)


def path(p: FCParams, sums: np.ndarray | None, isa: str) -> str:
    """mcu_fully_connected_s4_path(): MVE on MVE, DSP on DSP, else the generic path."""
    return {"mve": "mve", "dsp": "dsp"}.get(isa, "generic")


def buffer_size(p: FCParams, sums: np.ndarray | None, isa: str) -> int:
    """Scratch bytes (mcu_fully_connected_s4_get_buffer_size()): none on any path."""
    return 0


KERNEL = Kernel("mcu_fully_connected_s4", buffer_size=buffer_size, path=path, to_cmsis=to_cmsis)
