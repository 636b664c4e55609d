"""Twin of mcu_fully_connected_s16: TFLite int16x8 FULLY_CONNECTED (reference_integer_ops
FullyConnected, int16 input): in [batches, K] int16, weights [N, K] int8, bias [N] int64 or none.

out[b,n] = clamp(requantize_s64(sum_k in[b,k] * w[n,k] + bias[n], multiplier[c], shift[c]),
           act_min, act_max), c = n if per_channel else 0.
Params: mcu_fc_params_t, shared with the int8 kernel.

CMSIS-NN: arm_fully_connected_s16 (per tensor): not called yet; the portable kernel runs, and the summary says so.
"""
from __future__ import annotations

import numpy as np

from emitter.kernels.common import check_shape
from emitter.kernels.mcu_fully_connected_s8 import FCParams
from emitter.kernels.s16 import output_stage_s16


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
