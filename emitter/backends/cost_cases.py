"""Single-layer cases for the kernel-choice measurements (scripts/cost_tables.py, `mcugen --tune`).

A Shape is one conv / depthwise / fully connected / batch matmul layer's geometry; a Case is a Shape plus, when it
copies a model's layer, that layer's weights, bias, requantization and offsets (so mcugen's kernel
takes the same code path as in the model), else seeded random ones with a typical requantization
(effective scale 2^-10..2^-7, input and output zero point -128). `onnx_of(cases)` writes every case
as one independent branch (int8 input -> DequantizeLinear -> Conv / Gemm -> QuantizeLinear -> int8
output) of ONE model, so one firmware per core runs them all (emitter/verify/tuning.py). A batch
matmul case is MatMul(DQ(constant lhs [B, M, K]), Transpose(DQ(x [B, N, K]))): rhs stored
[.., N, K], the one layout CMSIS-NN's arm_batch_matmul_s8 takes (the Transpose is a free view).
"""
from __future__ import annotations

import hashlib
from dataclasses import astuple, dataclass, fields
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

from emitter.calls import ConstArg, Prepared
from emitter.kernels.mcu_batch_matmul_s8 import is_dense

KERNELS = {"conv": "mcu_conv2d_s8", "dw": "mcu_depthwise_conv2d_s8", "fc": "mcu_fully_connected_s8",
           "bmm": "mcu_batch_matmul_s8"}
# 4-bit weights (Shape.bits 4): mcugen's s4 kernels against CMSIS-NN's s4 calls (emitter/kernels/cmsis_s4.py)
S4_KERNELS = {"conv": "mcu_conv2d_s4", "dw": "mcu_depthwise_conv2d_s4", "fc": "mcu_fully_connected_s4"}
KIND_OF = {v: k for k, v in KERNELS.items()}
KIND_OF_S4 = {v: k for k, v in S4_KERNELS.items()}


@dataclass(frozen=True)
class Shape:
    """kind "conv" / "dw": input h x w x c_in (n = batches), kh x kw window, strides, dilations,
    pads top/bottom/left/right, c_out (depthwise: c_in * multiplier). kind "fc": c_in = inputs,
    c_out = outputs, batches rows, per_channel requantization. kind "bmm": batches x [h = M, c_in = K]
    times [c_in, c_out = N], rhs stored [N, K], per tensor."""
    kind: str
    h: int = 1
    w: int = 1
    c_in: int = 1
    c_out: int = 1
    kh: int = 1
    kw: int = 1
    sh: int = 1
    sw: int = 1
    dh: int = 1
    dw: int = 1
    pt: int = 0
    pb: int = 0
    pl: int = 0
    pr: int = 0
    batches: int = 1
    per_channel: int = 1
    bits: int = 8  # the weights' width: 4 for the s4 kernels (as_list and key leave 8 out)

    @property
    def out_h(self) -> int:
        return (self.h + self.pt + self.pb - self.dh * (self.kh - 1) - 1) // self.sh + 1

    @property
    def out_w(self) -> int:
        return (self.w + self.pl + self.pr - self.dw * (self.kw - 1) - 1) // self.sw + 1

    @property
    def taps(self) -> int:
        """Multiply-accumulates per output value."""
        return {"conv": self.kh * self.kw * self.c_in, "dw": self.kh * self.kw, "fc": self.c_in,
                "bmm": self.c_in}[self.kind]

    @property
    def outputs(self) -> int:
        if self.kind == "fc":
            return self.batches * self.c_out
        if self.kind == "bmm":
            return self.batches * self.h * self.c_out
        return self.batches * self.out_h * self.out_w * self.c_out

    @property
    def macs(self) -> int:
        return self.taps * self.outputs

    def label(self) -> str:
        return self._label() + (" int4" if self.bits == 4 else "")

    def _label(self) -> str:
        if self.kind == "fc":
            return f"fc {self.c_in}->{self.c_out}" + (f" x{self.batches}" if self.batches > 1 else "")
        if self.kind == "bmm":
            tail = f" x{self.batches}" if self.batches > 1 else ""
            return f"bmm {self.h}x{self.c_in} x {self.c_in}x{self.c_out}{tail}"
        extra = "".join([f" s{self.sh}x{self.sw}" if (self.sh, self.sw) != (1, 1) else "",
                         f" d{self.dh}x{self.dw}" if (self.dh, self.dw) != (1, 1) else "",
                         " pad" if self.pt + self.pb + self.pl + self.pr else ""])
        return (f"{self.kind} {self.h}x{self.w}x{self.c_in} k{self.kh}x{self.kw}{extra} -> "
                f"{self.out_h}x{self.out_w}x{self.c_out}")

    def as_list(self) -> list[Any]:
        values = list(astuple(self))
        return values if self.bits != 8 else values[:-1]  # the tables' 8-bit rows as they were

    @staticmethod
    def from_list(values: list[Any]) -> Shape:
        return Shape(*values)

    def key(self) -> str:
        return hashlib.sha256(repr(tuple(self.as_list())).encode()).hexdigest()[:16]


SHAPE_FIELDS = tuple(f.name for f in fields(Shape))
LEAN_CALL = "lean"  # the tables' paths of counts through a lean call with the least scratch: lean_call()


def lean_call(path: str) -> str:
    """The tables' name of a count through a lean call with the least scratch that took `path` (its
    twin's lean_path: a convolution's lean DSP variant, MVE groups or the generic path)."""
    return f"{LEAN_CALL}:{path}"


def is_lean(path: str) -> bool:
    """A table path of a lean call's count (whole or a band call's)."""
    return path.startswith(LEAN_CALL + ":")


def band_path(path: str) -> str:
    """The tables' name of `path` taken by a band call (with its build-time constants)."""
    return path + "/band"


@dataclass(frozen=True, eq=False)
class Case:
    """A shape and, for a model's layer, its constants: weights in the ONNX layout, int32 bias,
    per-channel multipliers and shifts, input and output zero points."""
    name: str
    shape: Shape
    weights: np.ndarray | None = None
    bias: np.ndarray | None = None
    multiplier: np.ndarray | None = None
    shift: np.ndarray | None = None
    zp_in: int = -128
    zp_out: int = -128
    zp_rhs: int = -128  # batch matmul: the activation operand's zero point


def shape_of(p: Prepared) -> Shape | None:
    """The Shape of a portable conv / depthwise / FC layer, or of a batch matmul CMSIS-NN can take
    (lhs [.., M, K], rhs stored [.., N, K]); None for any other layer."""
    c: Any = p.params
    kind = KIND_OF.get(p.kernel) or KIND_OF_S4.get(p.kernel)
    if kind is None or c is None:
        return None
    bits = 4 if p.kernel in KIND_OF_S4 else 8
    if kind == "bmm":
        if c.lhs_transposed or not c.rhs_transposed or not is_dense(c):
            return None
        return Shape("bmm", h=c.lhs.w, c_in=c.lhs.c, c_out=c.rhs.c, batches=c.output.n * c.output.h, per_channel=0)
    if kind == "fc":
        return Shape("fc", c_in=c.in_features, c_out=c.out_features, batches=c.batches,
                     per_channel=int(c.per_channel), bits=bits)
    i, f, o = c.input, c.filter, c.output
    pb = max(0, (o.h - 1) * c.stride_h + c.dilation_h * (f.h - 1) + 1 - i.h - c.pad_top)
    pr = max(0, (o.w - 1) * c.stride_w + c.dilation_w * (f.w - 1) + 1 - i.w - c.pad_left)
    return Shape(kind, i.h, i.w, i.c, o.c, f.h, f.w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w,
                 c.pad_top, pb, c.pad_left, pr, batches=i.n, bits=bits)


def case_of(p: Prepared, name: str) -> Case | None:
    """A layer of a compiled model as a Case with its own constants (None: not conv/dw/FC)."""
    s = shape_of(p)
    if s is None:
        return None
    c: Any = p.params
    if s.kind == "bmm":  # the constant lhs of the case: seeded values (the cost does not depend on them)
        lhs = np.random.default_rng(0).integers(-128, 128, (s.batches, s.h, s.c_in)).astype(np.int8)
        return Case(name, s, lhs, None, np.array([c.multiplier]), np.array([c.shift]), -int(c.q.input_offset),
                    int(c.q.output_offset), -int(c.rhs_offset))
    key = "weights" if s.kind == "fc" else "filter"
    w, b = p.operands.get(key), p.operands.get("bias")
    if not isinstance(w, ConstArg):
        return None
    data = np.asarray(w.data, dtype=np.int8) if s.bits == 8 else unpacked_s4(p, s)
    if s.kind == "conv":
        weights = data.reshape(s.c_out, s.kh, s.kw, s.c_in).transpose(0, 3, 1, 2)
    elif s.kind == "dw":
        weights = data.reshape(s.kh, s.kw, s.c_out).transpose(2, 0, 1)[:, None]
    else:
        weights = data.reshape(s.c_out, s.c_in)
    bias = np.asarray(b.data, np.int32) if isinstance(b, ConstArg) else None
    if s.bits == 4 and s.kind == "conv" and bias is not None:  # mcu_conv2d_s4 takes kernel sums: the bias back
        bias = (bias.astype(np.int64) - c.q.input_offset * weights.reshape(s.c_out, -1).astype(np.int64).sum(1)
                ).astype(np.int32)
    return Case(name, s, weights, bias, np.asarray(c.multiplier), np.asarray(c.shift),
                -int(c.q.input_offset), int(c.q.output_offset))


def unpacked_s4(p: Prepared, s: Shape) -> np.ndarray:
    """The int8 values of an s4 layer's packed weights, in the s8 twin's layout (FC [N, K], conv
    OHWI, depthwise [KH, KW, C_out])."""
    from emitter.kernels.mcu_conv2d_s4 import unpack_rows
    from emitter.kernels.mcu_depthwise_conv2d_s4 import unpack_filter
    from emitter.kernels.mcu_fully_connected_s4 import unpack_weights
    w = p.operands["weights" if s.kind == "fc" else "filter"]
    assert isinstance(w, ConstArg)
    if s.kind == "fc":
        return unpack_weights(w.data, s.c_out, s.c_in)
    if s.kind == "conv":
        return unpack_rows(np.asarray(w.data).reshape(s.c_out, -1), s.kh * s.kw * s.c_in)
    return unpack_filter(w.data, s.kh * s.kw, s.c_out)


def random_case(name: str, s: Shape, seed: int, wide: bool = False) -> Case:
    """Seeded weights and bias, effective scales 2^-10..2^-7 (every fast path's range), or with
    `wide` 2^-1..2^0.9 (shifts >= 0: mcugen's kernels take their generic path)."""
    rng = np.random.default_rng(seed)
    channels = s.c_out if s.kind not in ("fc", "bmm") or s.per_channel else 1
    scale = 2.0 ** (rng.uniform(-1, 0.9, channels) if wide else rng.uniform(-10, -7, channels))
    mult = np.round(np.frexp(scale)[0] * (1 << 31)).astype(np.int64).clip(1 << 30, (1 << 31) - 1)
    shift = np.frexp(scale)[1].astype(np.int32)
    if s.kind == "conv":
        shape: tuple[int, ...] = (s.c_out, s.c_in, s.kh, s.kw)
    elif s.kind == "dw":
        shape = (s.c_out, 1, s.kh, s.kw)
    elif s.kind == "bmm":
        shape = (s.batches, s.h, s.c_in)  # the constant lhs
        return Case(name, s, rng.integers(-127, 128, shape).astype(np.int8), None, mult.astype(np.int32), shift)
    else:
        shape = (s.c_out, s.c_in)
    low, high = (-8, 8) if s.bits == 4 else (-127, 128)
    return Case(name, s, rng.integers(low, high, shape).astype(np.int8),
                rng.integers(-(1 << 12), 1 << 12, s.c_out).astype(np.int32), mult.astype(np.int32), shift)


def _scales(c: Case) -> np.ndarray:
    """Weight scales giving the case's multipliers with input and output scale 1."""
    assert c.multiplier is not None and c.shift is not None
    m = np.asarray(c.multiplier, np.float64) * np.exp2(np.asarray(c.shift, np.float64) - 31)
    channels = c.shape.c_out if c.shape.kind not in ("fc", "bmm") or c.shape.per_channel else 1
    m = np.maximum(m.ravel()[:channels] if m.size >= channels else m.ravel()[:1], 1e-9)  # a dead channel: M = 0
    return np.broadcast_to(m, (channels,)).astype(np.float32)


def branch(c: Case, i: int) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto], onnx.ValueInfoProto,
                                     onnx.ValueInfoProto]:
    """Case i as ONNX nodes, initializers, input and output."""
    s, t = c.shape, f"c{i}_"
    assert c.weights is not None
    if s.kind == "bmm":
        return bmm_branch(c, i)
    w_s = _scales(c)
    inits = [NH.from_array(np.array(1.0, np.float32), t + "s1"),
             NH.from_array(np.array(c.zp_in, np.int8), t + "xz"), NH.from_array(np.array(c.zp_out, np.int8), t + "yz"),
             *_weight_tensors(c.weights, w_s, t, s.bits)]
    nodes = [H.make_node("DequantizeLinear", [t + "x", t + "s1", t + "xz"], [t + "xf"], name=t + "dqx"),
             H.make_node("DequantizeLinear", [t + "wq", t + "ws", t + "wz"], [t + "wf"], name=t + "dqw", axis=0)]
    ins = [t + "xf", t + "wf"]
    if c.bias is not None:
        inits += [NH.from_array(c.bias.astype(np.int32), t + "bq"),
                  NH.from_array(np.broadcast_to(w_s, (s.c_out,)).astype(np.float32), t + "bs"),
                  NH.from_array(np.zeros(s.c_out, np.int32), t + "bz")]
        nodes.append(H.make_node("DequantizeLinear", [t + "bq", t + "bs", t + "bz"], [t + "bf"], name=t + "dqb",
                                 axis=0))
        ins.append(t + "bf")
    if s.kind == "fc":
        nodes.append(H.make_node("Gemm", ins, [t + "y"], name=t + "layer", transB=1))
        x_shape, y_shape = [s.batches, s.c_in], [s.batches, s.c_out]
    else:
        nodes.append(H.make_node("Conv", ins, [t + "y"], name=t + "layer", kernel_shape=[s.kh, s.kw],
                                 strides=[s.sh, s.sw], dilations=[s.dh, s.dw], pads=[s.pt, s.pl, s.pb, s.pr],
                                 group=s.c_in if s.kind == "dw" else 1))
        x_shape, y_shape = [s.batches, s.c_in, s.h, s.w], [s.batches, s.c_out, s.out_h, s.out_w]
    nodes.append(H.make_node("QuantizeLinear", [t + "y", t + "s1", t + "yz"], [t + "q"], name=t + "qy"))
    return (nodes, inits, H.make_tensor_value_info(t + "x", TP.INT8, x_shape),
            H.make_tensor_value_info(t + "q", TP.INT8, y_shape))


def _weight_tensors(w: np.ndarray, w_s: np.ndarray, t: str, bits: int) -> list[onnx.TensorProto]:
    """The weights, their scales and zero points; INT4 (opset 21) for a 4-bit case."""
    scales = NH.from_array(w_s if w_s.size > 1 else w_s.reshape(()), t + "ws")
    if bits != 4:
        return [NH.from_array(w, t + "wq"), scales, NH.from_array(np.zeros(w_s.shape, np.int8), t + "wz")]
    return [H.make_tensor(t + "wq", TP.INT4, w.shape, w.ravel().astype(np.int8).tolist()), scales,
            H.make_tensor(t + "wz", TP.INT4, w_s.shape if w_s.size > 1 else (), [0] * int(w_s.size))]


def bmm_branch(c: Case, i: int) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto], onnx.ValueInfoProto,
                                         onnx.ValueInfoProto]:
    """Batch matmul case i: y = Q(MatMul(DQ(lhs constant [B, M, K]), Transpose(DQ(x [B, N, K])))),
    lhs scale 1 and x scale the case's effective scale (output scale 1)."""
    s, t = c.shape, f"c{i}_"
    assert c.weights is not None
    inits = [NH.from_array(np.array(1.0, np.float32), t + "s1"), NH.from_array(_scales(c).reshape(()), t + "xs"),
             NH.from_array(np.array(c.zp_in, np.int8), t + "az"), NH.from_array(np.array(c.zp_rhs, np.int8), t + "xz"),
             NH.from_array(np.array(c.zp_out, np.int8), t + "yz"), NH.from_array(c.weights, t + "aq")]
    nodes = [H.make_node("DequantizeLinear", [t + "aq", t + "s1", t + "az"], [t + "af"], name=t + "dqa"),
             H.make_node("DequantizeLinear", [t + "x", t + "xs", t + "xz"], [t + "xf"], name=t + "dqx"),
             H.make_node("Transpose", [t + "xf"], [t + "xt"], name=t + "kt", perm=[0, 2, 1]),
             H.make_node("QuantizeLinear", [t + "xt", t + "xs", t + "xz"], [t + "xtq"], name=t + "qxt"),
             H.make_node("DequantizeLinear", [t + "xtq", t + "xs", t + "xz"], [t + "xtf"], name=t + "dqxt"),
             H.make_node("MatMul", [t + "af", t + "xtf"], [t + "y"], name=t + "layer"),
             H.make_node("QuantizeLinear", [t + "y", t + "s1", t + "yz"], [t + "q"], name=t + "qy")]
    return (nodes, inits, H.make_tensor_value_info(t + "x", TP.INT8, [s.batches, s.c_out, s.c_in]),
            H.make_tensor_value_info(t + "q", TP.INT8, [s.batches, s.h, s.c_out]))


def onnx_of(cases: list[Case]) -> onnx.ModelProto:
    """One model holding every case as an independent branch, in order."""
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    ins, outs = [], []
    for i, c in enumerate(cases):
        n, t, x, y = branch(c, i)
        nodes += n
        inits += t
        ins.append(x)
        outs.append(y)
    s4 = any(c.shape.bits == 4 for c in cases)  # INT4 DequantizeLinear: opset 21
    m = H.make_model(H.make_graph(nodes, "cost_cases", ins, outs, inits),
                     opset_imports=[H.make_opsetid("", 21 if s4 else 13)], producer_name="mcugen-cost-cases")
    m.ir_version = 10 if s4 else 8
    return m
