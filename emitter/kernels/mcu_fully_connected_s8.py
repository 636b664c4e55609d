"""Twin of mcu_fully_connected_s8: in [batches, K], weights [N, K], bias [N] or None.

out[b,n] = clamp(requant(sum_k (in[b,k] + input_offset) * w[n,k] + bias[n], multiplier[c],
           shift[c]) + output_offset, act_min, act_max), c = n if per_channel else 0.

The golden takes the logical operands (TFLite's math); the C kernel takes what Prepare derives
from them at build time: the weights in the block layout of mcu_nn.h (pack_weights: four rows
interleaved in 16-input chunks, the last N % 4 rows row-major) and the kernel sums
bias[n] + input_offset * sum_k w[n,k] in place of the bias (kernel_sums), the same integers.

CMSIS-NN: arm_fully_connected_s8 / arm_fully_connected_per_channel_s8 on the logical weights and
bias (unpack_weights / bias_of_sums); on MVE the context holds the same kernel sums.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.calls import CArg, ConstArg, NullArg, Prepared, StructArg
from emitter.kernels import c_defines, kernel_info
from emitter.kernels.base import Kernel, Rounded, SinkC
from emitter.kernels.cmsis_api import Converter, ScratchRequest, arr
from emitter.kernels.common import QuantIO, check_shape, output_stage
from emitter.kernels.mcu_conv2d_s8 import per_channel_quant

_C = c_defines("include/mcu_nn.h")
BLOCK_ROWS = _C["MCU_FC_BLOCK_ROWS"]
CHUNK = _C["MCU_FC_CHUNK"]


@dataclass(frozen=True, eq=False)
class FCParams(Rounded):
    CTYPE: ClassVar[str] = "mcu_fc_params_t"
    batches: int
    in_features: int
    out_features: int
    q: QuantIO
    per_channel: int
    multiplier: np.ndarray  # int32 [1] or [N]
    shift: np.ndarray

    def rounding_mode(self) -> int:
        return self.q.rounding


def mcu_fully_connected_s8(p: FCParams, input: np.ndarray, weights: np.ndarray,
                           bias: np.ndarray | None) -> np.ndarray:
    """int8 [batches, K] x int8 [N, K] (+ int32 [N]) -> int8 [batches, N]."""
    check_shape("fully connected input", input, (p.batches, p.in_features))
    check_shape("fully connected weights", weights, (p.out_features, p.in_features))
    if bias is not None:
        check_shape("fully connected bias", bias, (p.out_features,))
    channels = p.out_features if p.per_channel else 1
    check_shape("fully connected multiplier", np.asarray(p.multiplier)[:channels], (channels,))
    x = input.astype(np.int64) + p.q.input_offset
    acc = x @ weights.astype(np.int64).T
    return output_stage(acc, bias, p.q, np.asarray(p.multiplier)[:channels],
                        np.asarray(p.shift)[:channels])


def weight_order(n: int, k: int) -> np.ndarray:
    """order[j] = the row-major index (row * K + column) of the weight at position j of the block
    layout (mcu_nn.h, MCU_FC_BLOCK_ROWS)."""
    idx = np.arange(n * k).reshape(n, k)
    blocked = n - n % BLOCK_ROWS
    full = k - k % CHUNK
    parts = []
    for b in range(0, blocked, BLOCK_ROWS):
        rows = idx[b:b + BLOCK_ROWS]
        # [4, K_full] -> [chunks, 4, 16]: chunk after chunk, the four rows' 16 weights each
        parts.append(rows[:, :full].reshape(BLOCK_ROWS, -1, CHUNK).transpose(1, 0, 2).ravel())
        parts.append(rows[:, full:].ravel())  # the last K % 16 columns, row after row
    parts.append(idx[blocked:].ravel())
    return np.concatenate(parts)


def pack_weights(weights: np.ndarray) -> np.ndarray:
    """int8 [N, K] row-major -> the block layout, flat [N * K]."""
    n, k = weights.shape
    return np.ascontiguousarray(weights.ravel()[weight_order(n, k)])


def unpack_weights(packed: np.ndarray, n: int, k: int) -> np.ndarray:
    """The block layout, flat [N * K] -> int8 [N, K] row-major."""
    out = np.empty(n * k, dtype=packed.dtype)
    out[weight_order(n, k)] = packed.ravel()
    return out.reshape(n, k)


def kernel_sums(p: FCParams, weights: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """int32 [N]: bias[n] + input_offset * sum_k w[n,k] (Prepare checks it fits int32)."""
    b = np.zeros(p.out_features, np.int64) if bias is None else bias.astype(np.int64)
    sums = b + p.q.input_offset * weights.astype(np.int64).sum(axis=1)
    if np.any(np.abs(sums) > np.iinfo(np.int32).max):
        raise ValueError(f"kernel sums reach {int(np.abs(sums).max())}, outside int32")
    return sums.astype(np.int32)


def bias_of_sums(p: FCParams, weights: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """The bias back from the kernel sums (kernel_sums' inverse), int32 [N]."""
    return (sums.astype(np.int64) - p.q.input_offset * weights.astype(np.int64).sum(axis=1)).astype(np.int32)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, FCParams)
    ops = p.operands
    wp, s = ops["weights"], ops["kernel_sums"]
    assert isinstance(wp, ConstArg) and isinstance(s, ConstArg)
    w = unpack_weights(wp.data, c.out_features, c.in_features)
    bias = bias_of_sums(c, w, s.data)
    params = {"input_offset": c.q.input_offset, "filter_offset": 0, "output_offset": c.q.output_offset,
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    if c.per_channel:
        quant = per_channel_quant(c, 0)
        fn = "arm_fully_connected_per_channel_s8"
    else:
        quant = StructArg("cmsis_nn_per_tensor_quant_params", "quant",
                          {"multiplier": int(c.multiplier[0]), "shift": int(c.shift[0])})
        fn = "arm_fully_connected_s8"
    values: dict[str, CArg] = {
        "fc_params": StructArg("cmsis_nn_fc_params", "fc", params), "quant_params": quant,
        "input_dims": StructArg("cmsis_nn_dims", "input_dims",
                                {"n": c.batches, "h": 1, "w": 1, "c": c.in_features}),
        "input_data": ops["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims",
                                 {"n": c.in_features, "h": 1, "w": 1, "c": c.out_features}),
        "filter_data": ConstArg("weights", w),
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.out_features}),
        "bias_data": ConstArg("bias", bias) if np.any(bias != 0) else NullArg(),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims",
                                 {"n": c.batches, "h": 1, "w": 1, "c": c.out_features}),
        "output_data": ops["output"]}
    if conv.var == "mve":  # CMSIS-NN's kernel sums: the same integers
        values["ctx"] = StructArg("cmsis_nn_context", "ctx",
                                  {"buf": arr(ConstArg("kernel_sums", s.data), "(void *)"),
                                   "size": 4 * c.out_features})
    return conv.call(p, fn, values)


# -- the C dispatcher's path choice and scratch size: its own answers (kernel_info.c) --
def path(p: FCParams, sums: np.ndarray | None, isa: str) -> str:
    """MVE on MVE; DSP on DSP when every output allows requant2; else the generic path
    (mcu_fully_connected_s8_path(), asked of the C)."""
    return kernel_info.ask("fc", p, None, isa)[0]


def buffer_size(p: FCParams, sums: np.ndarray | None, isa: str) -> int:
    """Scratch bytes on `isa` (mcu_fully_connected_s8_get_buffer_size(), asked of the C: none)."""
    return kernel_info.ask("fc", p, None, isa)[1]


SINK_C = ("mcu_fully_connected_s8_acc", "mcu_fully_connected_s8_finish")  # mcu_runtime/support/mcu_sink.c


def sink(p: FCParams, row_bytes: int) -> int | None:
    """The layer as the accumulating end of a streamed segment (emitter/plan/stream.py), its input
    added `row_bytes` features at a time: its accumulators (one per output), or None (batches)."""
    return p.out_features if p.batches == 1 and p.in_features % row_bytes == 0 else None


def sink_c(p: FCParams, row_bytes: int) -> SinkC:
    """The data of the sink's C: `row_bytes` features a row, its weights and kernel sums."""
    return SinkC("features", SINK_C[0], SINK_C[1], (row_bytes,), ("weights", "kernel_sums"))


KERNEL = Kernel("mcu_fully_connected_s8", sink=sink, sink_c=sink_c, buffer_size=buffer_size, path=path,
                to_cmsis=to_cmsis)
