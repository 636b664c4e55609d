"""Golden of mcu_fully_connected_s8: in [batches, K], weights [N, K], bias [N] or None.

out[b,n] = clamp(requant(sum_k (in[b,k] + input_offset) * w[n,k] + bias[n], multiplier[c],
           shift[c]) + output_offset, act_min, act_max), c = n if per_channel else 0.
"""
from __future__ import annotations

import numpy as np

from emitter.golden.conv2d import check_shape, output_stage
from emitter.kernel_params import FCParams


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
