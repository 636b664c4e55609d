"""The CMSIS-NN API mcugen uses: one table, v7.0.0's declarations as written in its headers.

Everything else about the boundary derives from it:
  cmsis_version.API_FUNCTIONS  the version check (return and parameter types, names not compared)
  RETURNS_VOID                 calls whose result is not a status (render.call_kind)
  operands()                   a call's arguments by parameter name, in declaration order
  sizer_query()                the line mcu_runtime/tools/cmsis_sizer.c reads to size the scratch
  precheck()                   <prefix>_init()'s check of the planned scratch against the linked
                               library (CMSIS-NN never checks ctx.size itself)

A call with scratch names its size function (`Scratch`): which of the call's struct operands
(or their fields) it takes, and what the host sizer reads. A function the backend or
cmsis_sizer.c starts to call is added here, with its declaration copied from arm_nnfunctions.h.
It lives beside the twins because each twin's to_cmsis() maps its own call with it; the backend
(emitter/backends/cmsis_nn.py) only dispatches.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from emitter.calls import Call, CArg, ConstArg, CRef, Prepared, StructArg

VARIANTS = ("", "_dsp", "_mve")  # size functions exist per code path: c, dsp, mve


class Converter(Protocol):
    """What a twin's to_cmsis(conv, p) uses of the backend (emitter/backends/cmsis_nn.Converter):
    the board's code path, where to say why a call stays portable, and how to build a CMSIS-NN call.
    A protocol, so that the twins depend on this table and not on the backend that imports them."""
    var: str  # "c", "dsp" or "mve"
    refusal: str | None

    def call(self, p: Prepared, fn: str, values: dict[str, CArg], then: tuple[Call, ...] = (),
             summary: str | None = None) -> tuple[Prepared, ScratchRequest | None]: ...


@dataclass(frozen=True)
class Scratch:
    """A call's scratch size function. `args`: its arguments, each a struct operand of the call
    (passed by address) or `operand.field` (passed by value). `sizer`: the keyword of
    cmsis_sizer.c and the values it reads after the code path, each an operand (all its fields,
    in order) or a field path."""
    declaration: str
    args: tuple[str, ...]
    sizer: tuple[str, tuple[str, ...]]
    variants: tuple[str, ...] = ("", "_dsp", "_mve")  # size functions mcugen relies on (VARIANTS)


@dataclass(frozen=True)
class Function:
    ret: str
    params: tuple[tuple[str, str], ...]  # (type, name) in declaration order
    scratch: Scratch | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.params)


def parse(declaration: str) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """`ret name(type name, ...)` -> (ret, name, ((type, name), ...)), types spaced as in the
    headers (`const int8_t *`, `int8_t *const`)."""
    m = re.fullmatch(r"\s*(.+?)\s+(\w+)\((.*)\)\s*", declaration, flags=re.S)
    assert m is not None, declaration
    params = []
    for param in m.group(3).split(","):
        pm = re.fullmatch(r"\s*(.*?)\s*(\w+)\s*", param)
        assert pm is not None, param
        params.append((pm.group(1), pm.group(2)))
    return m.group(1), m.group(2), tuple(params)


_CONV_SIZER = ("input_dims", "filter_dims", "output_dims", "{p}.stride.w", "{p}.stride.h", "{p}.padding.w",
               "{p}.padding.h", "{p}.dilation.w", "{p}.dilation.h")
_FC = ("const cmsis_nn_context *ctx, const cmsis_nn_fc_params *fc_params, const cmsis_nn_{q}_quant_params "
       "*quant_params, const cmsis_nn_dims *input_dims, const int8_t *input_data, const cmsis_nn_dims *filter_dims, "
       "const int8_t *filter_data, const cmsis_nn_dims *bias_dims, const int32_t *bias_data, "
       "const cmsis_nn_dims *output_dims, int8_t *output_data")
_FC_SCRATCH = Scratch("int32_t arm_fully_connected_s8_get_buffer_size(const cmsis_nn_dims *filter_dims)",
                      ("filter_dims",), ("fc", ("filter_dims",)))
_POOL = ("const cmsis_nn_context *ctx, const cmsis_nn_pool_params *pool_params, const cmsis_nn_dims *input_dims, "
         "const int8_t *input_data, const cmsis_nn_dims *filter_dims, const cmsis_nn_dims *output_dims, "
         "int8_t *output_data")
_CONCAT = ("const int8_t *input, const uint16_t input_x, const uint16_t input_y, const uint16_t input_z, "
           "const uint16_t input_w, int8_t *output, ")
DECLARATIONS: tuple[tuple[str, Scratch | None], ...] = (
    ("arm_cmsis_nn_status arm_convolve_wrapper_s8(const cmsis_nn_context *ctx, const cmsis_nn_conv_params "
     "*conv_params, const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims, "
     "const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data, "
     "const cmsis_nn_dims *bias_dims, const int32_t *bias_data, const cmsis_nn_dims *output_dims, "
     "int8_t *output_data)",
     Scratch("int32_t arm_convolve_wrapper_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params, "
             "const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims, const cmsis_nn_dims *output_dims)",
             ("conv_params", "input_dims", "filter_dims", "output_dims"),
             ("conv", tuple(f.format(p="conv_params") for f in _CONV_SIZER)))),
    ("arm_cmsis_nn_status arm_depthwise_conv_wrapper_s8(const cmsis_nn_context *ctx, const cmsis_nn_dw_conv_params "
     "*dw_conv_params, const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims, "
     "const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data, "
     "const cmsis_nn_dims *bias_dims, const int32_t *bias_data, const cmsis_nn_dims *output_dims, "
     "int8_t *output_data)",
     Scratch("int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params, "
             "const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims, const cmsis_nn_dims *output_dims)",
             ("dw_conv_params", "input_dims", "filter_dims", "output_dims"),
             ("dw", (*(f.format(p="dw_conv_params") for f in _CONV_SIZER), "dw_conv_params.ch_mult")))),
    (f"arm_cmsis_nn_status arm_fully_connected_s8({_FC.format(q='per_tensor')})", _FC_SCRATCH),
    (f"arm_cmsis_nn_status arm_fully_connected_per_channel_s8({_FC.format(q='per_channel')})", _FC_SCRATCH),
    # rhs [.., N, K]; its MVE path keeps N int32 column sums in ctx: the FC size function of filter c = N
    ("arm_cmsis_nn_status arm_batch_matmul_s8(const cmsis_nn_context *ctx, const cmsis_nn_bmm_params *bmm_params, "
     "const cmsis_nn_per_tensor_quant_params *quant_params, const cmsis_nn_dims *input_lhs_dims, "
     "const int8_t *input_lhs, const cmsis_nn_dims *input_rhs_dims, const int8_t *input_rhs, "
     "const cmsis_nn_dims *output_dims, int8_t *output)",
     Scratch("int32_t arm_fully_connected_s8_get_buffer_size(const cmsis_nn_dims *filter_dims)",
             ("output_dims",), ("fc", ("output_dims",)))),
    # 4-bit weights (emitter/kernels/cmsis_s4.py): nibbles in order, two a byte, low nibble first
    ("arm_cmsis_nn_status arm_convolve_wrapper_s4(const cmsis_nn_context *ctx, const cmsis_nn_conv_params "
     "*conv_params, const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims, "
     "const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data, "
     "const cmsis_nn_dims *bias_dims, const int32_t *bias_data, const cmsis_nn_dims *output_dims, "
     "int8_t *output_data)",
     Scratch("int32_t arm_convolve_wrapper_s4_get_buffer_size(const cmsis_nn_conv_params *conv_params, "
             "const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims, const cmsis_nn_dims *output_dims)",
             ("conv_params", "input_dims", "filter_dims", "output_dims"),
             ("conv4", tuple(f.format(p="conv_params") for f in _CONV_SIZER)))),
    ("arm_cmsis_nn_status arm_depthwise_conv_wrapper_s4(const cmsis_nn_context *ctx, const cmsis_nn_dw_conv_params "
     "*dw_conv_params, const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims, "
     "const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data, "
     "const cmsis_nn_dims *bias_dims, const int32_t *bias_data, const cmsis_nn_dims *output_dims, "
     "int8_t *output_data)",
     Scratch("int32_t arm_depthwise_conv_wrapper_s4_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params, "
             "const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims, const cmsis_nn_dims *output_dims)",
             ("dw_conv_params", "input_dims", "filter_dims", "output_dims"),
             ("dw4", (*(f.format(p="dw_conv_params") for f in _CONV_SIZER), "dw_conv_params.ch_mult")))),
    (f"arm_cmsis_nn_status arm_fully_connected_s4({_FC.format(q='per_tensor')})", None),  # ctx unused
    (f"arm_cmsis_nn_status arm_avgpool_s8({_POOL})",
     Scratch("int32_t arm_avgpool_s8_get_buffer_size(const int dim_dst_width, const int ch_src)",
             ("output_dims.w", "input_dims.c"), ("avg", ("output_dims.w", "input_dims.c")))),
    (f"arm_cmsis_nn_status arm_max_pool_s8({_POOL})", None),
    (f"arm_cmsis_nn_status arm_max_pool_s16({_POOL.replace('int8_t', 'int16_t')})", None),
    # int16 activations (emitter/ops/a16.py): the s16 kernels, int64 bias
    ("arm_cmsis_nn_status arm_convolve_wrapper_s16(const cmsis_nn_context *ctx, const cmsis_nn_conv_params "
     "*conv_params, const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims, "
     "const int16_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data, "
     "const cmsis_nn_dims *bias_dims, const cmsis_nn_bias_data *bias_data, const cmsis_nn_dims *output_dims, "
     "int16_t *output_data)",
     Scratch("int32_t arm_convolve_wrapper_s16_get_buffer_size(const cmsis_nn_conv_params *conv_params, "
             "const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims, const cmsis_nn_dims *output_dims)",
             ("conv_params", "input_dims", "filter_dims", "output_dims"),
             ("conv16", tuple(f.format(p="conv_params") for f in _CONV_SIZER)))),
    ("arm_cmsis_nn_status arm_depthwise_conv_wrapper_s16(const cmsis_nn_context *ctx, const cmsis_nn_dw_conv_params "
     "*dw_conv_params, const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims, "
     "const int16_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data, "
     "const cmsis_nn_dims *bias_dims, const int64_t *bias_data, const cmsis_nn_dims *output_dims, "
     "int16_t *output_data)",
     Scratch("int32_t arm_depthwise_conv_wrapper_s16_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params, "
             "const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims, const cmsis_nn_dims *output_dims)",
             ("dw_conv_params", "input_dims", "filter_dims", "output_dims"),
             ("dw16", (*(f.format(p="dw_conv_params") for f in _CONV_SIZER), "dw_conv_params.ch_mult")))),
    ("arm_cmsis_nn_status arm_fully_connected_s16(" + _FC.format(q="per_tensor").replace("const int8_t *input_data",
     "const int16_t *input_data").replace("const int32_t *bias_data", "const int64_t *bias_data").replace(
     "int8_t *output_data", "int16_t *output_data") + ")",
     Scratch("int32_t arm_fully_connected_s16_get_buffer_size(const cmsis_nn_dims *filter_dims)",
             ("filter_dims",), ("fc16", ("filter_dims",)))),
    (f"arm_cmsis_nn_status arm_avgpool_s16({_POOL.replace('int8_t', 'int16_t')})",
     Scratch("int32_t arm_avgpool_s16_get_buffer_size(const int dim_dst_width, const int ch_src)",
             ("output_dims.w", "input_dims.c"), ("avg16", ("output_dims.w", "input_dims.c")))),
    ("arm_cmsis_nn_status arm_elementwise_add_s16(const int16_t *input_1_vect, const int16_t *input_2_vect, "
     "const int32_t input_1_offset, const int32_t input_1_mult, const int32_t input_1_shift, "
     "const int32_t input_2_offset, const int32_t input_2_mult, const int32_t input_2_shift, "
     "const int32_t left_shift, int16_t *output, const int32_t out_offset, const int32_t out_mult, "
     "const int32_t out_shift, const int32_t out_activation_min, const int32_t out_activation_max, "
     "const int32_t block_size)", None),
    ("arm_cmsis_nn_status arm_elementwise_add_s8(const int8_t *input_1_vect, const int8_t *input_2_vect, "
     "const int32_t input_1_offset, const int32_t input_1_mult, const int32_t input_1_shift, "
     "const int32_t input_2_offset, const int32_t input_2_mult, const int32_t input_2_shift, "
     "const int32_t left_shift, int8_t *output, const int32_t out_offset, const int32_t out_mult, "
     "const int32_t out_shift, const int32_t out_activation_min, const int32_t out_activation_max, "
     "const int32_t block_size)", None),
    ("arm_cmsis_nn_status arm_elementwise_mul_s16(const int16_t *input_1_vect, const int16_t *input_2_vect, "
     "const int32_t input_1_offset, const int32_t input_2_offset, int16_t *output, const int32_t out_offset, "
     "const int32_t out_mult, const int32_t out_shift, const int32_t out_activation_min, "
     "const int32_t out_activation_max, const int32_t block_size)", None),
    ("arm_cmsis_nn_status arm_elementwise_mul_s8(const int8_t *input_1_vect, const int8_t *input_2_vect, "
     "const int32_t input_1_offset, const int32_t input_2_offset, int8_t *output, const int32_t out_offset, "
     "const int32_t out_mult, const int32_t out_shift, const int32_t out_activation_min, "
     "const int32_t out_activation_max, const int32_t block_size)", None),
    ("void arm_softmax_s8(const int8_t *input, const int32_t num_rows, const int32_t row_size, const int32_t mult, "
     "const int32_t shift, const int32_t diff_min, int8_t *output)", None),
    ("arm_cmsis_nn_status arm_transpose_s8(const int8_t *input_data, int8_t *const output_data, "
     "const cmsis_nn_dims *const input_dims, const cmsis_nn_dims *const output_dims, "
     "const cmsis_nn_transpose_params *const transpose_params)", None),
    *((f"void arm_concatenation_s8_{a}({_CONCAT}"
       f"{'' if a == 'w' else f'const uint16_t output_{a}, '}const uint32_t offset_{a})", None) for a in "xyzw"),
    ("arm_cmsis_nn_status arm_pad_s8(const int8_t *input, int8_t *output, const int8_t pad_value, "
     "const cmsis_nn_dims *input_size, const cmsis_nn_dims *pre_pad, const cmsis_nn_dims *post_pad)", None),
    # v7.0.0 declares _dsp/_mve size functions of another signature but defines none: generic only
    ("arm_cmsis_nn_status arm_transpose_conv_wrapper_s8(const cmsis_nn_context *ctx, const cmsis_nn_context "
     "*output_ctx, const cmsis_nn_transpose_conv_params *transpose_conv_params, const "
     "cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims, const int8_t *input_data, "
     "const cmsis_nn_dims *filter_dims, const int8_t *filter_data, const cmsis_nn_dims *bias_dims, "
     "const int32_t *bias_data, const cmsis_nn_dims *output_dims, int8_t *output_data)",
     Scratch("int32_t arm_transpose_conv_s8_get_buffer_size(const cmsis_nn_transpose_conv_params "
             "*transposed_conv_params, const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims, "
             "const cmsis_nn_dims *out_dims)",
             ("transpose_conv_params", "input_dims", "filter_dims", "output_dims"),
             ("tconv", ("input_dims", "filter_dims", "output_dims", "transpose_conv_params.stride.w",
                        "transpose_conv_params.stride.h")), variants=("",))),
)


def _table() -> dict[str, Function]:
    out = {}
    for decl, scratch in DECLARATIONS:
        ret, name, params = parse(decl)
        out[name] = Function(ret, params, scratch)
    return out


API: dict[str, Function] = _table()

TYPES = {  # name -> body of its typedef in arm_nn_types.h (v7.0.0)
    "cmsis_nn_context": "void *buf; int32_t size;",
    "cmsis_nn_bias_data": "const void *data; const bool is_int32_bias;",
    "cmsis_nn_conv_params": "int32_t input_offset; int32_t output_offset; cmsis_nn_tile stride; cmsis_nn_tile padding; "
                            "cmsis_nn_tile dilation; cmsis_nn_activation activation;",
    "cmsis_nn_dw_conv_params": "int32_t input_offset; int32_t output_offset; int32_t ch_mult; cmsis_nn_tile stride; "
                               "cmsis_nn_tile padding; cmsis_nn_tile dilation; cmsis_nn_activation activation;",
    "cmsis_nn_fc_params": "int32_t input_offset; int32_t filter_offset; int32_t output_offset; "
                          "cmsis_nn_activation activation;",
    "cmsis_nn_bmm_params": "const bool adj_x; const bool adj_y; cmsis_nn_fc_params fc_params;",
    "cmsis_nn_pool_params": "cmsis_nn_tile stride; cmsis_nn_tile padding; cmsis_nn_activation activation;",
    "cmsis_nn_per_channel_quant_params": "int32_t *multiplier; int32_t *shift;",
    "cmsis_nn_per_tensor_quant_params": "int32_t multiplier; int32_t shift;",
    "cmsis_nn_transpose_conv_params": "int32_t input_offset; int32_t output_offset; cmsis_nn_tile stride; "
                                      "cmsis_nn_tile padding; cmsis_nn_tile padding_offsets; cmsis_nn_tile dilation; "
                                      "cmsis_nn_activation activation;",
    "cmsis_nn_dims": "int32_t n; int32_t h; int32_t w; int32_t c;",
    "cmsis_nn_tile": "int32_t w; int32_t h;",
    "cmsis_nn_transpose_params": "const int32_t num_dims; const uint32_t *permutations;",
    "cmsis_nn_activation": "int32_t min; int32_t max;",
    "arm_cmsis_nn_status": "ARM_CMSIS_NN_SUCCESS = 0, ARM_CMSIS_NN_ARG_ERROR = -1, ARM_CMSIS_NN_NO_IMPL_ERROR = -2, "
                           "ARM_CMSIS_NN_FAILURE = -3,",
}


def declared_functions() -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (return type, parameter types) of every function mcugen or cmsis_sizer.c calls,
    the size functions in each code path's variant."""
    out = {name: (fn.ret, tuple(t for t, _ in fn.params)) for name, fn in API.items()}
    for fn in API.values():
        if fn.scratch is not None:
            ret, size_fn, params = parse(fn.scratch.declaration)
            out.update({size_fn + v: (ret, tuple(t for t, _ in params)) for v in fn.scratch.variants})
    return out


RETURNS_VOID = frozenset(name for name, fn in API.items() if fn.ret == "void")


@dataclass(frozen=True)
class ScratchRequest:
    """A converted call's question to the host sizer: `function` (a size function of API) asked
    with `query` (one line of cmsis_sizer.c's input); the answer is the call's ctx.size."""
    function: str
    query: str


def struct_fields(ctype: str) -> dict[str, str]:
    """field -> C type of a struct of TYPES (`int32_t *multiplier;` -> multiplier: int32_t *)."""
    out = {}
    for decl in filter(None, (d.strip() for d in TYPES[ctype].split(";"))):
        m = re.fullmatch(r"(.*?)\s*(\w+)", decl)
        assert m is not None, decl
        out[m.group(2)] = m.group(1)
    return out


def check_struct(ctype: str, fields: dict[str, Any], where: str) -> None:
    """A struct value holds exactly the fields of its typedef, nested structs recursively."""
    want = struct_fields(ctype)
    if list(fields) != list(want):
        raise TypeError(f"{where}: {ctype} has fields {list(want)}, the value {list(fields)}")
    for name, v in fields.items():
        if isinstance(v, dict):
            check_struct(want[name], v, f"{where}.{name}")


def operands(fn: str, values: dict[str, CArg]) -> dict[str, CArg]:
    """`values` in the parameter order of `fn`; every parameter given, nothing else, and every
    struct operand with the fields of its type."""
    names = API[fn].names
    if set(values) != set(names):
        missing, extra = sorted(set(names) - set(values)), sorted(set(values) - set(names))
        raise TypeError(f"{fn}: operands missing {missing}, unknown {extra}")
    for name, v in values.items():
        if isinstance(v, StructArg):
            check_struct(v.ctype, v.fields, f"{fn}({name})")
    return {name: values[name] for name in names}


def _field(values: dict[str, CArg], path: str) -> Any:
    head, *rest = path.split(".")
    v: Any = values[head]
    v = v.fields if isinstance(v, StructArg) else v
    for part in rest:
        v = v[part]
    return v


def sizer_query(fn: str, values: dict[str, CArg], code_path: str) -> ScratchRequest | None:
    """The scratch request of a call of `fn` with these operands, for code path c, dsp or mve."""
    scratch = API[fn].scratch
    if scratch is None:
        return None
    keyword, reads = scratch.sizer
    numbers: list[int] = []
    for path in reads:
        v = _field(values, path)
        numbers += [int(x) for x in v.values()] if isinstance(v, dict) else [int(v)]
    _, size_fn, _ = parse(scratch.declaration)
    return ScratchRequest(size_fn, " ".join([keyword, code_path, *map(str, numbers)]))


def precheck(fn: str, values: dict[str, CArg], ident: Callable[[Any], str], ctx_size: int) -> str | None:
    """C condition that is true when the target's CMSIS-NN needs more than ctx_size bytes;
    `ident(struct_arg)` names the static struct of a StructArg operand."""
    scratch = API[fn].scratch if fn in API else None
    if scratch is None or "ctx" not in values:
        return None
    _, size_fn, _ = parse(scratch.declaration)
    args = []
    for a in scratch.args:
        head, _, field = a.partition(".")
        args.append(f"{ident(values[head])}.{field}" if field else "&" + ident(values[head]))
    return f"{size_fn}({', '.join(args)}) > {ctx_size}"


# ---- values of the API's types, built from mcugen's params ----------------------------------

U16 = 0xFFFF


def dims(d: Any) -> dict[str, int]:
    """cmsis_nn_dims of an mcu_dims_t."""
    return {"n": d.n, "h": d.h, "w": d.w, "c": d.c}


def dims4(shape: tuple[int, ...] | list[int]) -> dict[str, int]:
    """Up to four values as cmsis_nn_dims {n, h, w, c}, left-aligned, missing trailing ones = 1."""
    v = list(shape) + [1] * (4 - len(shape))
    return {"n": v[0], "h": v[1], "w": v[2], "c": v[3]}


def tile(w: int, h: int) -> dict[str, int]:
    return {"w": w, "h": h}


def arr(a: ConstArg, cast: str = "") -> CRef:
    return CRef("array", a, cast)


def padded(a: np.ndarray, extra: int) -> np.ndarray:
    """MVE kernels read up to 3 elements past per-channel arrays: pad with zeros."""
    return np.concatenate([a, np.zeros(extra, a.dtype)]) if extra else a
