"""Twin of mcu_fully_connected_s16: TFLite int16x8 FULLY_CONNECTED (reference_integer_ops
FullyConnected, int16 input): in [batches, K] int16, weights [N, K] int8, bias [N] int64 or none.

out[b,n] = clamp(requantize_s64(sum_k in[b,k] * w[n,k] + bias[n], multiplier[c], shift[c]),
           act_min, act_max), c = n if per_channel else 0.
Params: mcu_fc_params_t, shared with the int8 kernel.

CMSIS-NN: arm_fully_connected_s16 for per-tensor weights up to 511 inputs (s16.CMSIS_MAX_TAPS).
"""
from __future__ import annotations

import numpy as np

from emitter.calls import CArg, ConstArg, NullArg, Prepared, StructArg
from emitter.kernels.base import Kernel
from emitter.kernels.cmsis_api import Converter, ScratchRequest
from emitter.kernels.common import check_shape
from emitter.kernels.mcu_fully_connected_s8 import FCParams
from emitter.kernels.s16 import cmsis_taps_problem, output_stage_s16


def mcu_fully_connected_s16(p: FCParams, input: np.ndarray, weights: np.ndarray,
                            bias: np.ndarray | None) -> np.ndarray:
    """int16 [batches, K] x int8 [N, K] (+ int64 [N]) -> int16 [batches, N]."""
    check_shape("fully connected input", input, (p.batches, p.in_features))
    check_shape("fully connected weights", weights, (p.out_features, p.in_features))
    if p.q.input_offset != 0 or p.q.output_offset != 0:
        raise ValueError("int16 activations have zero point 0")
    if bias is not None:
        check_shape("fully connected bias", bias, (p.out_features,))
    channels = p.out_features if p.per_channel else 1
    acc = input.astype(np.int64) @ weights.astype(np.int64).T
    return output_stage_s16(acc, bias, np.asarray(p.multiplier)[:channels], np.asarray(p.shift)[:channels],
                            p.q.output_offset, p.q.act_min, p.q.act_max)


def to_cmsis(conv: Converter, p: Prepared) -> tuple[Prepared, ScratchRequest | None] | None:
    c = p.params
    assert isinstance(c, FCParams)
    if c.per_channel:
        conv.refusal = "int16 activations: per-channel weights (arm_fully_connected_s16 is per tensor)"
        return None
    if (problem := cmsis_taps_problem(c.in_features)) is not None:
        conv.refusal = problem
        return None
    ops = p.operands
    b = ops["bias"]
    params = {"input_offset": 0, "filter_offset": 0, "output_offset": 0,
              "activation": {"min": c.q.act_min, "max": c.q.act_max}}
    values: dict[str, CArg] = {
        "fc_params": StructArg("cmsis_nn_fc_params", "fc", params),
        "quant_params": StructArg("cmsis_nn_per_tensor_quant_params", "quant",
                                  {"multiplier": int(c.multiplier[0]), "shift": int(c.shift[0])}),
        "input_dims": StructArg("cmsis_nn_dims", "input_dims", {"n": c.batches, "h": 1, "w": 1, "c": c.in_features}),
        "input_data": ops["input"],
        "filter_dims": StructArg("cmsis_nn_dims", "filter_dims", {"n": c.in_features, "h": 1, "w": 1,
                                                                  "c": c.out_features}),
        "filter_data": ops["weights"],
        "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", {"n": 1, "h": 1, "w": 1, "c": c.out_features}),
        "bias_data": b if isinstance(b, ConstArg) else NullArg(),
        "output_dims": StructArg("cmsis_nn_dims", "output_dims", {"n": c.batches, "h": 1, "w": 1,
                                                                  "c": c.out_features}),
        "output_data": ops["output"]}
    return conv.call(p, "arm_fully_connected_s16", values)


KERNEL = Kernel("mcu_fully_connected_s16", to_cmsis=to_cmsis)
