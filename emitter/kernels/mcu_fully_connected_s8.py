"""Twin of mcu_fully_connected_s8: in [batches, K], weights [N, K], bias [N] or None.

out[b,n] = clamp(requant(sum_k (in[b,k] + input_offset) * w[n,k] + bias[n], multiplier[c],
           shift[c]) + output_offset, act_min, act_max), c = n if per_channel else 0.

CMSIS-NN: arm_fully_connected_s8 / arm_fully_connected_per_channel_s8; on MVE the context holds the
kernel sums bias[n] + input_offset * sum_k w[n,k], computed at build time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from emitter.backends.cmsis_api import Converter, ScratchRequest, arr
from emitter.kernels.common import QuantIO, check_shape, output_stage
from emitter.kernels.mcu_conv2d_s8 import per_channel_quant
from emitter.ops.base import CArg, ConstArg, NullArg, Prepared, StructArg


@dataclass(frozen=True, eq=False)
class FCParams:
    CTYPE: ClassVar[str] = "mcu_fc_params_t"
    batches: int
    in_features: int
    out_features: int
    q: QuantIO
    per_channel: int
    multiplier: np.ndarray  # int32 [1] or [N]
    shift: np.ndarray


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


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, FCParams)
    ops = p.operands
    w, b = ops["weights"], ops["bias"]
    assert isinstance(w, ConstArg)
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
        "filter_data": w,
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.out_features}),
        "bias_data": b if isinstance(b, ConstArg) else NullArg(),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims",
                                 {"n": c.batches, "h": 1, "w": 1, "c": c.out_features}),
        "output_data": ops["output"]}
    if conv.var == "mve":  # kernel sums: bias[r] + input_offset * sum_c w[r][c], computed now
        bias = b.data.astype(np.int64) if isinstance(b, ConstArg) else np.zeros(c.out_features, np.int64)
        sums = (bias + c.q.input_offset * w.data.astype(np.int64).reshape(c.out_features, -1).sum(axis=1))
        values["ctx"] = StructArg("cmsis_nn_context", "ctx",
                                  {"buf": arr(ConstArg("kernel_sums", sums.astype(np.int32)), "(void *)"),
                                   "size": 4 * c.out_features})
    return conv.call(p, fn, values)


# -- the C dispatcher's path choice and scratch size (mcu_fully_connected_s8_path / _get_buffer_size) --
def path(p: FCParams, bias: np.ndarray | None, isa: str) -> str:
    """The one algorithm, its dot products in the instructions of `isa`."""
    return {"mve": "mve", "dsp": "dsp"}.get(isa, "generic")


def buffer_size(p: FCParams, bias: np.ndarray | None, isa: str) -> int:
    """No scratch on any instruction set."""
    return 0


SINK_C = ("mcu_fully_connected_s8_acc", "mcu_fully_connected_s8_finish")  # mcu_runtime/support/mcu_sink.c


def sink(p: FCParams, row_bytes: int) -> int | None:
    """The layer as the accumulating end of a streamed segment (emitter/stream.py), its input
    added `row_bytes` features at a time: its accumulators (one per output), or None (batches)."""
    return p.out_features if p.batches == 1 and p.in_features % row_bytes == 0 else None


def sink_c(p: FCParams, params: str, ops: dict[str, str], row: str, y: str, row_bytes: int,
           acc: str) -> tuple[str, str]:
    """C of the sink: the statement adding input row y (at `row`), the call that finishes."""
    return (f"{SINK_C[0]}(&{params}, {row}, {y} * {row_bytes}, {row_bytes}, {ops['weights']}, {acc});",
            f"{SINK_C[1]}(&{params}, {acc}, {ops['bias']}, {ops['output']})")
