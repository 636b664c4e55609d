"""The CMSIS-NN API table (emitter/kernels/cmsis_api.py) and what derives from it: operands by
parameter name, the host sizer's queries (mcu_runtime/tools/cmsis_sizer.c reads them), the
init-time scratch check, void calls. No CMSIS-NN needed."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from emitter.backends.cmsis_version import API_FUNCTIONS
from emitter.calls import CRef, IntArg, StructArg, TensorArg
from emitter.kernels import KERNELS, twin
from emitter.kernels.cmsis_api import API, RETURNS_VOID, VARIANTS, declared_functions, operands, precheck, sizer_query

SIZER = Path(__file__).resolve().parent.parent / "mcu_runtime" / "tools" / "cmsis_sizer.c"


def conv_operands() -> dict:
    dims = [StructArg("cmsis_nn_dims", f"{n}_dims", dict(zip("nhwc", v, strict=False)))
            for n, v in (("input", (1, 8, 9, 3)), ("filter", (4, 3, 2, 3)), ("output", (1, 6, 8, 4)))]
    params = {"input_offset": 5, "output_offset": -1, "stride": {"w": 2, "h": 1}, "padding": {"w": 0, "h": 1},
              "dilation": {"w": 1, "h": 3}, "activation": {"min": -128, "max": 127}}
    return {"ctx": StructArg("cmsis_nn_context", "ctx", {"buf": CRef("null"), "size": 0}),
            "conv_params": StructArg("cmsis_nn_conv_params", "conv", params),
            "quant_params": StructArg("cmsis_nn_per_channel_quant_params", "quant",
                                      {"multiplier": CRef("null"), "shift": CRef("null")}),
            "input_dims": dims[0], "input_data": TensorArg("x"), "filter_dims": dims[1], "filter_data": TensorArg("w"),
            "bias_dims": StructArg("cmsis_nn_dims", "bias_dims", dict(zip("nhwc", (1, 1, 1, 4), strict=False))),
            "bias_data": TensorArg("b"),
            "output_dims": dims[2], "output_data": TensorArg("y")}


def test_the_sizer_reads_what_the_table_asks() -> None:
    """cmsis_sizer.c handles every sizer keyword of the table and calls exactly the size functions
    the table declares (each code path's variant)."""
    text = SIZER.read_text()
    keywords = {fn.scratch.sizer[0] for fn in API.values() if fn.scratch is not None}
    assert keywords == set(re.findall(r'strcmp\(op, "(\w+)"\) == 0', text))
    called = set(re.findall(r"\b(arm_\w+_get_buffer_size\w*)\(", text))
    assert called == {name for name in declared_functions() if "_get_buffer_size" in name}
    assert all(f"arm_avgpool_s8_get_buffer_size{v}" in called for v in VARIANTS)


def test_sizer_query_from_the_call_operands() -> None:
    ops = conv_operands()
    q = sizer_query("arm_convolve_wrapper_s8", ops, "dsp")
    assert q is not None and q.function == "arm_convolve_wrapper_s8_get_buffer_size"
    # dims n h w c of input, filter, output, then stride w h, padding w h, dilation w h
    assert q.query == "conv dsp 1 8 9 3 4 3 2 3 1 6 8 4 2 1 0 1 1 3"
    assert sizer_query("arm_max_pool_s8", {}, "c") is None  # a context, but no scratch


def test_operands_follow_the_declaration() -> None:
    ops = conv_operands()
    reordered = dict(reversed(list(ops.items())))
    assert list(operands("arm_convolve_wrapper_s8", reordered)) == list(API["arm_convolve_wrapper_s8"].names)
    with pytest.raises(TypeError, match=r"missing \['bias_data'\], unknown \['bias'\]"):
        operands("arm_convolve_wrapper_s8", {**{k: v for k, v in ops.items() if k != "bias_data"},
                                             "bias": IntArg(0)})
    params = ops["conv_params"].fields
    wrong = {**params, "stride": {"x": 1, "y": 1}}  # a struct value with other fields than its typedef
    with pytest.raises(TypeError, match=r"\(conv_params\)\.stride: cmsis_nn_tile has fields \['w', 'h'\]"):
        operands("arm_convolve_wrapper_s8", {**ops, "conv_params": StructArg("cmsis_nn_conv_params", "conv", wrong)})


def test_precheck_names_the_call_structs() -> None:
    ops = conv_operands()
    cond = precheck("arm_convolve_wrapper_s8", ops, lambda a: f"net_l3_{a.suffix}", 1024)
    assert cond == ("arm_convolve_wrapper_s8_get_buffer_size(&net_l3_conv, &net_l3_input_dims, "
                    "&net_l3_filter_dims, &net_l3_output_dims) > 1024")
    pool = {"ctx": ops["ctx"], "input_dims": ops["input_dims"], "output_dims": ops["output_dims"]}
    assert precheck("arm_avgpool_s8", pool, lambda a: a.suffix, 8) == \
        "arm_avgpool_s8_get_buffer_size(output_dims.w, input_dims.c) > 8"
    assert precheck("arm_max_pool_s8", pool, lambda a: a.suffix, 0) is None
    assert precheck("mcu_conv2d_s8", ops, lambda a: a.suffix, 0) is None


def test_derived_registries() -> None:
    assert RETURNS_VOID == {"arm_softmax_s8", *(f"arm_concatenation_s8_{a}" for a in "xyzw")}
    assert API_FUNCTIONS == declared_functions() and len(API_FUNCTIONS) == 28 + 10 * 3
    assert API_FUNCTIONS["arm_transpose_s8"][1][1] == "int8_t *const"
    mapped = [k for k in KERNELS if hasattr(twin(k), "to_cmsis")]
    assert mapped == ["mcu_add_s16", "mcu_add_s8", "mcu_avgpool_s16", "mcu_avgpool_s8", "mcu_batch_matmul_s8",
                      "mcu_concat_s8",
                      "mcu_conv2d_s16", "mcu_conv2d_s4", "mcu_conv2d_s8", "mcu_depthwise_conv2d_s16",
                      "mcu_depthwise_conv2d_s4", "mcu_depthwise_conv2d_s8",
                      "mcu_fully_connected_s16", "mcu_fully_connected_s4", "mcu_fully_connected_s8",
                      "mcu_maxpool_s16", "mcu_maxpool_s8",
                      "mcu_mul_s16", "mcu_mul_s8", "mcu_pad_s8", "mcu_sigmoid_s16", "mcu_softmax_s16", "mcu_softmax_s8",
                      "mcu_tanh_s16", "mcu_transpose_conv_s8", "mcu_transpose_s8"]
