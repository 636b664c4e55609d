"""Per-layer debugging: `mcugen debug MODEL.onnx --board=B [--inputs x.npz] [--samples N]`.

Emits the bundle (or takes an emitted one with --bundle), builds the harness on the host and for
QEMU in per-layer dump mode, runs it on the first sample (or N samples), and compares every layer's
output, in schedule order, with mcugen's golden model and with onnxruntime:

    # build: every file compiled with -DMCU_HARNESS_LAYERS -include model_glue.h, where the glue
    #        (rendered with layer_dump=True) defines <PREFIX>_AFTER_LAYER -> harness_after_layer()
    # run:   the harness appends (sample, layer index, bytes, output bytes) records to layers.bin
    # golden_tensors(): every tensor's physical bytes
    # onnxruntime: the ONNX tensor of the same name (graph output of a copy of the model), as our
    #        int8 (uint8 - 128, float quantized), put into our physical order with layout.index_map

Host and QEMU must equal the golden bit for bit; the first layer where one of them does not is named
and the exit code is 1. onnxruntime requantizes in float, so its differences are reported only.
Layers mcugen inserted (relayouts, requantizations, copies) have no ONNX tensor: "-".

    layers.py  what each kernel call is compared with; dump builds and runs (emitter/verify/harness.py)
    ort.py     onnxruntime's values of the same tensors
    report.py  the per-layer table and the verdict (DebugReport)
    run.py     run_debug() and the `mcugen debug` command (its options: emitter/cli.py)
"""
from __future__ import annotations

from emitter.verify.debug.layers import LAYER_CFLAGS, DebugLayer, debug_layers, parse_layers, write_layer_glue
from emitter.verify.debug.report import DebugReport, Diff, LayerRow, diff
from emitter.verify.debug.run import cmd_debug, run_debug

__all__ = ["LAYER_CFLAGS", "DebugLayer", "DebugReport", "Diff", "LayerRow", "cmd_debug", "debug_layers", "diff",
           "parse_layers", "run_debug", "write_layer_glue"]
