"""The words of the generated C's comments: stored shapes and layouts, what each const array is.

Text only: render.py puts these strings into the templates' comment blocks; names from the model
go through cfmt.c_comment (the one sanitizer) and cfmt.wrap_comments keeps every comment line of
the bundle within cfmt.COMMENT_WIDTH.

Layer numbers: `Layer k` everywhere (NAME.c, NAME_weights.c, NAME_AFTER_LAYER(k, ...), report.json
"index", the CLI summary's `#` column, `mcugen debug`) is the step of the schedule, i.e. the index
of the IR node; free views (reshapes, transposes that move no byte) are steps too, without code, so
the numbers of the kernel calls can skip one.
"""
from __future__ import annotations

import numpy as np

from emitter.ir import Tensor
from emitter.layout import NHWC, is_identity, physical_shape
from emitter.render.cfmt import COMMENT_WIDTH, c_comment

LINE = COMMENT_WIDTH - len("     * ")  # a line of a layer's comment block in <prefix>_run_multi()


def named(text: str, name: str) -> list[str]:
    """`text 'name'` (the name from the model, made safe by c_comment) as one comment line if it
    fits, else the name on a line of its own, which cfmt.wrap_comments breaks further if too long."""
    quoted = f"'{c_comment(name)}'"
    return [f"{text} {quoted}"] if len(text) + 1 + len(quoted) <= LINE else [text, f"  {quoted}"]


def dims(shape: tuple[int, ...] | list[int], names: tuple[str, ...] = ()) -> str:
    """`[1,25,5,64]`, or with names `[C_out=64, KH=3, ...]` when there is one per axis."""
    if names and len(names) == len(shape):
        return "[" + ", ".join(str(d) if n.isdigit() else f"{n}={d}" for n, d in zip(names, shape, strict=False)) + "]"
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def layout_text(t: Tensor) -> str:
    """How the bytes of an activation are stored: `[1,25,5,64] NHWC (ONNX [1,64,25,5] NCHW)`;
    `[1,12] ONNX order` when they are stored as the ONNX graph declares them."""
    lay = t.layout
    if lay is None or (tuple(lay.view) == tuple(t.shape) and lay.perm == tuple(range(len(lay.perm)))):
        return f"{dims(t.shape)} ONNX order"
    phys = physical_shape(lay)
    nhwc = lay.perm == NHWC
    if nhwc:
        name = " NHWC"
    elif lay.perm == tuple(range(len(lay.perm))):
        name = ""
    else:
        name = f" perm ({','.join(map(str, lay.perm))})"
    onnx = f"ONNX {dims(t.shape)}"
    if tuple(lay.view) not in (tuple(t.shape), phys):
        onnx += f" as {dims(lay.view)}"
    if nhwc:
        onnx += " NCHW"
    if is_identity(lay):
        onnx += ", same byte order"
    return f"{dims(phys)}{name} ({onnx})"


def tensor_text(t: Tensor) -> str:
    """Stored shape and layout, element type when not int8, scale and zero point."""
    q = t.quant
    text = layout_text(t) + ("" if t.dtype == "int8" else f" {t.dtype}")
    if q is not None:
        text += f", s={q.s:.9g} zp={q.zp}" if q.scale.size == 1 else f", per-axis quantized (axis {q.axis})"
    return text


# What a layer's const array is, by the suffix its op or backend names it with (the array's C name
# is <prefix>_l<k>_<suffix>): (what, names of its axes, more words). The C type says the dtype.
ROLES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "filter": ("filter, OHWI", ("C_out", "KH", "KW", "C_in"), ""),
    "bias": ("bias", ("C_out",), ", in input scale x weight scale units"),
    "multiplier": ("requantization multiplier", ("C_out",), ", Q31, per output channel"),
    "shift": ("requantization shift", ("C_out",), ", per output channel, > 0: left"),
    "weights": ("weights", ("N_out", "K"), ", a row per output, columns in the input's stored order"),
    "weights_blocked": ("weights, 4-row blocks of 16-input chunks", ("N_out*K",), " (MCU_FC_BLOCK_ROWS)"),
    "kernel_sums": ("kernel sums", ("N_out",), ": bias + input offset x the row's sum of weights"),
    "dsp_groups": ("the DSP lean call's prepared channel groups", ("groups*words",),
                   ": per four channels bias, multiplier, base, shift, then the taps' doubled weights"),
    "mve_groups": ("the MVE lean call's prepared channel groups", ("groups*words",),
                   (": per eight channels bias, bias_full, multiplier, base, shift, then the taps' int16 weights;"
                    " 3x3: then each group's left and right edge sums")),
    "requant_bases": ("requantization bases", ("N_out",), ": 2^(r-1) + output offset x 2^r, r = -shift"),
    "table": ("lookup table", ("256",), ": the output for input q at index q + 128"),
    "chunk": ("chunk sizes", ("inputs",), ": bytes copied from each input in turn, per outer row"),
    "perm": ("axis permutation", ("rank",), " of the stored input"),
    "gamma": ("LayerNorm scale", ("row",), ", per element of a row"),
    "beta": ("LayerNorm offset", ("row",), ", per element of a row"),
    "y_index": ("nearest resize: source rows", ("H_out",), ", per output row"),
    "x_index": ("nearest resize: source columns", ("W_out",), ", per output column"),
    "y_lo": ("bilinear resize: source rows weighted 1024 - y_frac", ("H_out",), ""),
    "y_hi": ("bilinear resize: source rows weighted y_frac", ("H_out",), ""),
    "y_frac": ("bilinear resize: row fractions", ("H_out",), ", 0..1024"),
    "x_lo": ("bilinear resize: source columns weighted 1024 - x_frac", ("W_out",), ""),
    "x_hi": ("bilinear resize: source columns weighted x_frac", ("W_out",), ""),
    "x_frac": ("bilinear resize: column fractions", ("W_out",), ", 0..1024"),
}
DEPTHWISE_FILTER = ("depthwise filter", ("1", "KH", "KW", "C_out"), "")


def array_role(suffix: str, kernel: str, values: np.ndarray) -> str:
    """What the const array `<prefix>_l<k>_<suffix>` of a layer calling `kernel` holds, with its
    shape: `filter, OHWI [C_out=64, KH=10, KW=4, C_in=1]`."""
    names: tuple[str, ...]
    if suffix == "filter" and "depthwise" in kernel:
        what, names, more = DEPTHWISE_FILTER
    elif suffix.startswith("operand") and suffix[7:].isdigit():
        what, names, more = f"constant operand {suffix[7:]}", (), ", in the order the kernel reads it"
    else:
        what, names, more = ROLES.get(suffix, (suffix, (), ""))
    shape = values.shape if values.ndim else (1,)
    if suffix in ("multiplier", "shift") and values.size == 1:
        names, more = (), more.replace("per output channel", "per tensor")
    if len(names) == len(shape):
        return f"{what} {dims(shape, names)}{more}"
    if len(names) > 1:  # passed flat (the CMSIS-NN backend flattens and pads some)
        return f"{what} [{','.join(names)}] flattened to {dims(shape)}{more}"
    return f"{what} {dims(shape)}{more}"
