"""C literal formatting: the only place Python values become C text (used as Jinja filters)."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np

C_TYPES = {"int8": "int8_t", "int32": "int32_t", "uint8": "uint8_t", "int16": "int16_t"}
PARAM_TYPES = {
    "ConvParams": "mcu_conv_params_t", "DepthwiseConvParams": "mcu_depthwise_conv_params_t",
    "FCParams": "mcu_fc_params_t", "PoolParams": "mcu_pool_params_t", "AddParams": "mcu_add_params_t",
    "MulParams": "mcu_mul_params_t", "RequantizeParams": "mcu_requantize_params_t",
    "SoftmaxParams": "mcu_softmax_params_t", "PadParams": "mcu_pad_params_t",
    "TransposeParams": "mcu_transpose_params_t",
    "AvgPoolRequantParams": "mcu_avgpool_requant_params_t",
}


def c_int(v: int) -> str:
    """An int32 literal; INT32_MIN cannot be written as a plain negative literal."""
    v = int(v)
    if v == -(1 << 31):
        return "(-2147483647 - 1)"
    return str(v)


def c_array(values: np.ndarray, per_line: int = 16, indent: str = "    ") -> str:
    flat = [c_int(v) for v in np.asarray(values).ravel()]
    lines = [indent + ", ".join(flat[i:i + per_line]) + "," for i in range(0, len(flat), per_line)]
    return "\n".join(lines)


def c_comment(text: Any) -> str:
    """Safe inside /* */: printable ASCII only, no comment terminators, one line."""
    s = str(text)
    s = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in s)
    return s.replace("*/", "*_/").replace("/*", "/_*")


def _is_flat(value: Any) -> bool:
    """A dataclass with no dataclass fields: it renders on one line."""
    return not any(dataclasses.is_dataclass(getattr(value, g.name)) for g in dataclasses.fields(value))


def _c_scalar(v: Any, where: str) -> str:
    """An int or a tuple of ints (inline C array) as C text."""
    if isinstance(v, np.ndarray):
        raise TypeError(f"{where}: array fields are only supported at the top level of a struct")
    if isinstance(v, tuple):
        return f"{{{', '.join(c_int(x) for x in v)}}}"
    return c_int(v)


def c_struct(value: Any, arrays: dict[str, str], indent: int = 1) -> str:
    """A designated initializer for a kernel_params dataclass; ndarray fields name the const
    arrays listed in `arrays` (field name -> C identifier).

    A nested dataclass without dataclass fields of its own renders on one line
    (`.input = {.n = 1, .h = 8, ...}`); a deeper one renders as an indented block, recursively, to
    any depth. ndarray fields are only supported at the top level (`arrays` is keyed by field name).
    """
    pad = "    " * indent
    parts = []
    for f in dataclasses.fields(value):
        v = getattr(value, f.name)
        if dataclasses.is_dataclass(v):
            if _is_flat(v):
                inner = ", ".join(f".{g.name} = {_c_scalar(getattr(v, g.name), f'{f.name}.{g.name}')}"
                                  for g in dataclasses.fields(v))
                parts.append(f"{pad}.{f.name} = {{{inner}}},")
            else:
                parts.append(f"{pad}.{f.name} = {_c_nested(v, f.name, indent + 1)},")
        elif isinstance(v, np.ndarray):
            parts.append(f"{pad}.{f.name} = {arrays[f.name]},")
        else:
            parts.append(f"{pad}.{f.name} = {_c_scalar(v, f.name)},")
    return "{\n" + "\n".join(parts) + "\n" + "    " * (indent - 1) + "}"


def _c_nested(value: Any, where: str, indent: int) -> str:
    """c_struct of a nested dataclass, which may not hold arrays (render.py collects only the
    top-level ones)."""
    for g in dataclasses.fields(value):
        if isinstance(getattr(value, g.name), np.ndarray):
            raise TypeError(f"{where}.{g.name}: array fields are only supported at the top level "
                            "of a struct")
    return c_struct(value, {}, indent)


def c_float(v: float) -> str:
    """A float literal that round-trips the float32 value (headers only, never in kernels)."""
    return f"{float(np.float32(v))!r}f".replace("inf", "INFINITY")


def upper_ident(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", name).upper()
