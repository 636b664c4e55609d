"""Python mirrors of the C parameter structs in mcu_runtime/include/mcu_nn.h.

Same field names, same order. A nested dataclass renders as a nested designated initializer; an
np.ndarray field renders as a `static const` array in flash and the struct holds its address; a
tuple renders as an inline C array. The op modules build these in `prepare`, the golden model reads
them, and the code generator prints them; nothing else knows the field lists.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Dims:
    """mcu_dims_t"""
    n: int
    h: int
    w: int
    c: int


@dataclass(frozen=True)
class QuantIO:
    """mcu_quant_io_t: input_offset = -zp_in, output_offset = +zp_out, clamp in output domain."""
    input_offset: int
    output_offset: int
    act_min: int
    act_max: int


@dataclass(frozen=True, eq=False)
class ConvParams:
    """mcu_conv_params_t"""
    input: Dims
    filter: Dims
    output: Dims
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_left: int
    q: QuantIO
    multiplier: np.ndarray  # int32 [C_out]
    shift: np.ndarray  # int32 [C_out]


@dataclass(frozen=True, eq=False)
class DepthwiseConvParams:
    """mcu_depthwise_conv_params_t"""
    input: Dims
    filter: Dims
    output: Dims
    depth_multiplier: int
    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_left: int
    q: QuantIO
    multiplier: np.ndarray
    shift: np.ndarray


@dataclass(frozen=True, eq=False)
class FCParams:
    """mcu_fc_params_t"""
    batches: int
    in_features: int
    out_features: int
    q: QuantIO
    per_channel: int
    multiplier: np.ndarray  # int32 [1] or [N]
    shift: np.ndarray


@dataclass(frozen=True)
class PoolParams:
    """mcu_pool_params_t"""
    input: Dims
    output: Dims
    filter_h: int
    filter_w: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_left: int
    act_min: int
    act_max: int


@dataclass(frozen=True)
class AvgPoolRequantParams:
    """mcu_avgpool_requant_params_t: pool.act_min/act_max clamp the output; multiplier/shift
    encode in_scale / (out_scale * filter_h * filter_w)."""
    pool: PoolParams
    input_offset: int
    output_offset: int
    multiplier: int
    shift: int


@dataclass(frozen=True)
class Bcast:
    """mcu_bcast_t: operand index of output element i is (i // inner) % period."""
    inner: int
    period: int


@dataclass(frozen=True)
class AddParams:
    """mcu_add_params_t"""
    size: int
    in1: Bcast
    in2: Bcast
    input1_offset: int
    input2_offset: int
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int


@dataclass(frozen=True)
class MulParams:
    """mcu_mul_params_t"""
    size: int
    in1: Bcast
    in2: Bcast
    input1_offset: int
    input2_offset: int
    output_offset: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int


@dataclass(frozen=True)
class RequantizeParams:
    """mcu_requantize_params_t"""
    size: int
    q: QuantIO
    multiplier: int
    shift: int


@dataclass(frozen=True)
class SoftmaxParams:
    """mcu_softmax_params_t"""
    rows: int
    row_size: int
    input_multiplier: int
    input_left_shift: int
    diff_min: int
    output_mode: int
    output_multiplier: int
    output_shift: int
    output_offset: int


@dataclass(frozen=True)
class PadParams:
    """mcu_pad_params_t (tuples padded to MCU_MAX_RANK with zeros)"""
    rank: int
    in_shape: tuple[int, ...]
    pad_before: tuple[int, ...]
    pad_after: tuple[int, ...]
    pad_value: int


@dataclass(frozen=True)
class TransposeParams:
    """mcu_transpose_params_t (tuples padded to MCU_MAX_RANK with zeros)"""
    rank: int
    in_shape: tuple[int, ...]
    perm: tuple[int, ...]


# Float islands: float fields render as exact float32 literals (cfmt.c_float), float32 arrays as
# `static const float` arrays.

F32_ADD, F32_SUB, F32_MUL, F32_DIV, F32_MIN, F32_MAX = range(6)  # MCU_F32_* in mcu_nn.h


@dataclass(frozen=True)
class EltwiseF32Params:
    """mcu_eltwise_f32_params_t (op: one of the F32_* codes above)"""
    size: int
    in1: Bcast
    in2: Bcast
    op: int
    input1_scale: float
    input1_zero_point: int
    input2_scale: float
    input2_zero_point: int
    output_inv_scale: float
    output_zero_point: int
    act_min: int
    act_max: int


@dataclass(frozen=True, eq=False)
class LayerNormF32Params:
    """mcu_layernorm_f32_params_t"""
    rows: int
    row_size: int
    input_scale: float
    input_zero_point: int
    epsilon: float
    output_inv_scale: float
    output_zero_point: int
    act_min: int
    act_max: int
    gamma: np.ndarray  # float32 [row_size]
    beta: np.ndarray | None  # float32 [row_size], None -> NULL


MAX_RANK = 6


def pad_rank(values: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """Pad a per-axis tuple to MCU_MAX_RANK entries, as the C structs hold them."""
    values = tuple(int(v) for v in values)
    if len(values) > MAX_RANK:
        raise ValueError(f"rank {len(values)} exceeds MCU_MAX_RANK={MAX_RANK}")
    return values + (0,) * (MAX_RANK - len(values))


@dataclass(frozen=True)
class SliceParams:
    """mcu_slice_params_t (tuples padded to MCU_MAX_RANK with pad_rank):
    out[i] = in[begin + i * step] per axis, physical shapes."""
    rank: int
    in_shape: tuple[int, ...]
    begin: tuple[int, ...]
    step: tuple[int, ...]
    out_shape: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class ResizeNearestParams:
    """mcu_resize_params_t: out[n,y,x,c] = in[n, y_index[y], x_index[x], c]."""
    input: Dims
    output: Dims
    y_index: np.ndarray  # int32 [H_out]
    x_index: np.ndarray  # int32 [W_out]


@dataclass(frozen=True, eq=False)
class ResizeBilinearParams:
    """mcu_resize_bilinear_params_t: per output row/column source pair and 10-bit fraction."""
    input: Dims
    output: Dims
    y_lo: np.ndarray  # int32 [H_out]
    y_hi: np.ndarray  # int32 [H_out]
    y_frac: np.ndarray  # int32 [H_out], 0..1024
    x_lo: np.ndarray  # int32 [W_out]
    x_hi: np.ndarray  # int32 [W_out]
    x_frac: np.ndarray  # int32 [W_out], 0..1024


@dataclass(frozen=True)
class MinMaxParams:
    """mcu_minmax_params_t: each input requantized to the output scale, then min or max."""
    size: int
    in1: Bcast
    in2: Bcast
    is_max: int
    input1_offset: int
    input1_multiplier: int
    input1_shift: int
    input2_offset: int
    input2_multiplier: int
    input2_shift: int
    output_offset: int
    act_min: int
    act_max: int
