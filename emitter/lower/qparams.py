"""Quantization parameters: the scale and zero point an ONNX node gives a tensor, and the constants
a DequantizeLinear reads.

    # scale, zero point initializers of a Q/DQ/QLinear node  -> QuantParams (finite scale > 0, integer
    #                                                           zero point within its type's range)
    # uint8 data (scale, zp)                                 -> int8 data (scale, zp - 128), exact
    # DQ(int32 initializer) with zero point zp               -> data - zp with zero point 0, same reals
    # DQ(int4/uint4 initializer) with zero point zp           -> data - zp as int8 values, zero point 0
    #     (exact: |data - zp| <= 15);  all in [-8, 7]         -> bits=4 (int4 zp 0, uint4 zp 8): packed
    #                                                            4-bit kernels (fc, conv)
    #     some outside [-8, 7] (uint4 with another zp)        -> bits=8: the int8 kernels, symmetric
    # int2/uint2, float8/float4 anywhere; int4/uint4 activations -> refused (narrow_type_problem)
"""
from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from emitter.errors import NodeUnsupported, QuantError
from emitter.ir import QuantParams
from emitter.ops.base import QIn


def onnx_attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def to_int8(data: np.ndarray, quant: QuantParams) -> tuple[np.ndarray, QuantParams]:
    """uint8 -> int8 with zero point - 128: exact, the real values are unchanged."""
    if data.dtype == np.uint8:
        data = (data.astype(np.int16) - 128).astype(np.int8)
        quant = QuantParams(quant.scale, (quant.zero_point.astype(np.int32) - 128), quant.axis)
    return data, quant


FOUR_BIT = ("int4", "uint4")


def narrow_type_problem(dtype: np.dtype, what: str, constant: bool = False) -> str | None:
    """The refusal for a quantized type mcugen does not run: sub-byte integers (4-bit ones are
    read for constants, `constant`) and 8-bit floats."""
    name = str(dtype)
    if name in FOUR_BIT and not constant:
        return (f"{what} is {name}: 4-bit activations are not supported (4-bit weights are: "
                "quantize_static with activation_type=QuantType.QInt8 or QUInt8, "
                "weight_type=QuantType.QInt4)")
    if name in ("int2", "uint2"):
        return (f"{what} is {name}: 2-bit quantization is not supported; quantize to 8 or 4 "
                "bits (quantize_static with weight_type=QuantType.QInt8 or QuantType.QInt4)")
    if name.startswith("float8") or name.startswith("float4"):
        return (f"{what} is {name}: {name[:6]} quantization is not supported; mcugen runs int8 "
                "(or uint8): quantize with QuantType.QInt8")
    return None


# ONNX: x_zero_point "must have the same shape as" x_scale (onnxruntime refuses a scalar zero point
# with per-axis scales); QLinearConv/QLinearMatMul/QGemm let a scalar zero point broadcast.
SAME_SHAPE_QPARAMS = ("QuantizeLinear", "DequantizeLinear")


def read_qparams(inits: dict[str, np.ndarray], zp_dtype: dict[str, np.dtype], node: onnx.NodeProto,
                 scale_name: str, zp_name: str | None, axis: int | None, for_tensor: str,
                 constant: bool = False) -> QuantParams:
    """The QuantParams `node` gives `for_tensor` from its scale and zero point inputs; the zero
    point's dtype is recorded in zp_dtype (it names the type of com.microsoft QLinear* outputs).
    `constant`: the DequantizeLinear of an initializer (its zero point may be int4/uint4)."""
    where = f"tensor '{for_tensor}' (node '{node.name or node.op_type}')"
    if scale_name not in inits:
        raise NodeUnsupported(f"scale '{scale_name}' of '{for_tensor}' is not a constant")
    scale_arr = inits[scale_name]
    try:  # float32/16, bfloat16 (ml_dtypes) all convert; strings and bools do not belong here
        scale = np.asarray(scale_arr, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        scale = np.zeros(0)
    if scale_arr.dtype.kind in "bOSU" or scale.size == 0:
        raise QuantError(f"{where}: scale '{scale_name}' is {scale_arr.dtype} with "
                         f"{scale_arr.size} values; scales must be non-empty float tensors: "
                         "re-quantize the model")
    if zp_name and zp_name in inits:
        zp_arr = inits[zp_name]
        narrow = narrow_type_problem(zp_arr.dtype, f"{where}: zero point '{zp_name}'", constant)
        if narrow is not None:
            raise QuantError(narrow)
        if str(zp_arr.dtype) in FOUR_BIT:  # ml_dtypes int4/uint4: within range by construction
            zp_arr = zp_arr.astype(np.int8)
        if zp_arr.dtype.kind not in "iu":
            raise QuantError(f"{where}: zero point '{zp_name}' is {zp_arr.dtype}; zero points "
                             "must be integers: re-quantize the model")
        zp = np.asarray(zp_arr, dtype=np.int64).ravel()
        dtype = zp_arr.dtype
    elif zp_name:
        raise NodeUnsupported(f"zero point '{zp_name}' of '{for_tensor}' is not a constant")
    else:
        zp, dtype = np.zeros(scale.shape, np.int64), np.dtype(np.uint8)
    f32 = np.finfo(np.float32)
    bad = ~np.isfinite(scale) | ~(scale >= f32.tiny) | (scale > f32.max)  # NaN fails >= too
    if bad.any():
        raise QuantError(f"{where}: scale {scale[bad][:4]} must be finite and > 0, a normal float32 "
                         f"({f32.tiny:.4g} to {f32.max:.4g}: not zero, subnormal, inf or NaN); re-quantize "
                         "the model with valid calibration data")
    if zp.size not in (1, scale.size):
        raise QuantError(f"{where}: {zp.size} zero points for {scale.size} scales; give one "
                         "zero point per scale")
    if scale.size > 1 and zp_name and np.asarray(inits[zp_name]).shape != np.asarray(scale_arr).shape \
            and node.op_type in SAME_SHAPE_QPARAMS:
        raise QuantError(f"{where}: scale '{scale_name}' has shape {list(np.asarray(scale_arr).shape)} (per axis) "
                         f"but zero point '{zp_name}' has shape {list(np.asarray(inits[zp_name]).shape)}; "
                         f"{node.op_type} needs its zero point in the scale's shape (a scalar zero point "
                         "broadcasts only in QLinearConv/QLinearMatMul/QGemm): re-export the model with one "
                         "zero point per scale")
    zp_dtype.setdefault(for_tensor, np.dtype(dtype))
    info = np.iinfo(dtype)
    if zp.min() < info.min or zp.max() > info.max:
        raise QuantError(f"{where}: zero point out of the {dtype} range")
    zp = np.broadcast_to(zp, scale.shape).astype(np.int32)
    return QuantParams(scale, zp, axis if scale.size > 1 else None)


def dq_axis(node: onnx.NodeProto, data_shape: tuple[int, ...]) -> int:
    axis = int(onnx_attrs(node).get("axis", 1))
    return axis + len(data_shape) if axis < 0 else axis


def dequantized_const(inits: dict[str, np.ndarray], zp_dtype: dict[str, np.dtype],
                      node: onnx.NodeProto) -> QIn:
    """DequantizeLinear of an initializer: its integer data (int8, or int32 bias) and QuantParams."""
    src = node.input[0]
    zp = node.input[2] if len(node.input) > 2 and node.input[2] else None
    data = inits[src]
    narrow = narrow_type_problem(data.dtype, f"constant '{src}' (node '{node.name}')", constant=True)
    if narrow is not None:
        raise QuantError(narrow)
    if data.size == 0:
        raise QuantError(f"constant '{src}' (node '{node.name}') is empty (shape "
                         f"{list(data.shape)}); re-export the model with its weights")
    axis: int | None = dq_axis(node, data.shape)
    if int(onnx_attrs(node).get("block_size", 0)):  # one block over the whole axis (opsets.block_problem
        inits, axis = one_block(inits, node, data.shape, dq_axis(node, data.shape), zp)  # refused more)
    quant = read_qparams(inits, zp_dtype, node, node.input[1], zp, axis, src, constant=True)
    if quant.axis is not None and not 0 <= quant.axis < data.ndim:
        raise QuantError(f"'{src}' (node '{node.name}'): per-axis quantization along axis "
                         f"{quant.axis} of a {data.ndim}-D tensor; fix the axis attribute")
    if quant.axis is not None and data.shape[quant.axis] != quant.scale.size:
        raise QuantError(f"'{src}' (node '{node.name}'): {quant.scale.size} per-axis scales "
                         f"for axis {quant.axis} of length {data.shape[quant.axis]}; give "
                         "one scale per channel")
    if data.dtype == np.int32 and np.any(quant.zero_point != 0):
        # int32 (bias) with a zero point: q - zp with zero point 0 is the same real value
        zp_b = quant.zero_point.astype(np.int64)
        if quant.axis is not None:
            zp_b = zp_b.reshape([-1 if d == quant.axis else 1 for d in range(data.ndim)])
        folded = data.astype(np.int64) - zp_b
        if folded.min() < -(1 << 31) or folded.max() >= 1 << 31:
            raise QuantError(f"'{src}' (node '{node.name}'): int32 values minus their zero "
                             "point overflow int32; re-quantize with zero point 0")
        data = folded.astype(np.int32)
        quant = QuantParams(quant.scale, np.zeros_like(quant.zero_point), quant.axis)
    if str(data.dtype) in FOUR_BIT:
        return four_bit_const(data, quant)
    data, quant = to_int8(data, quant)
    return QIn(None, data, quant, tuple(data.shape))


def one_block(inits: dict[str, np.ndarray], node: onnx.NodeProto, shape: tuple[int, ...], axis: int,
              zp: str | None) -> tuple[dict[str, np.ndarray], int | None]:
    """A block-wise DequantizeLinear whose one block spans the axis: its scale (and zero point) of
    the data's rank with 1 along the axis, read as per tensor or per axis along the one other axis
    where it varies; QuantError when it varies along several."""
    src = node.input[0]
    if node.input[1] not in inits:
        return inits, axis
    if not 0 <= axis < len(shape) or int(onnx_attrs(node)["block_size"]) < shape[axis]:
        raise QuantError(f"'{src}' (node '{node.name}'): block quantization over several blocks is not "
                         "supported; quantize per tensor or per channel")
    scale = np.asarray(inits[node.input[1]])
    varying = [d for d in range(scale.ndim) if scale.shape[d] > 1]
    if len(varying) > 1:
        raise QuantError(f"'{src}' (node '{node.name}'): its block scales vary along axes {varying}; "
                         "mcugen reads one scale per tensor or per channel: re-quantize per channel")
    out = dict(inits)
    for name in (node.input[1], zp):
        if name and name in inits:
            out[name] = np.asarray(inits[name]).reshape(-1)
    return out, (varying[0] if varying else None)


def four_bit_const(data: np.ndarray, quant: QuantParams) -> QIn:
    """int4/uint4 data (ml_dtypes) -> data - zero point as int8 values with zero point 0 (exact,
    |q - zp| <= 15): bits=4 when every value lies in [-8, 7] (int4 of zero point 0, uint4 of zero
    point 8), else bits=8 (run by the int8 kernels as a symmetric int8 weight)."""
    zp = quant.zero_point.astype(np.int16)
    if quant.axis is not None and zp.size > 1:
        zp = zp.reshape([-1 if d == quant.axis else 1 for d in range(data.ndim)])
    else:
        zp = zp.ravel()[:1]
    values = data.astype(np.int16) - zp
    bits = 4 if values.size and -8 <= int(values.min()) and int(values.max()) <= 7 else 8
    sym = QuantParams(quant.scale, np.zeros_like(quant.zero_point), quant.axis)
    return QIn(None, values.astype(np.int8), sym, tuple(data.shape), bits)
