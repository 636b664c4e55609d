"""The C's own answers to path and scratch questions: mcu_runtime/tools/kernel_info.c, built on the
host with gcc at first use (cached by the hash of its sources), asked one line per call.

The twins of the kernels with several code paths (conv2d, depthwise conv2d, fully connected) ask
here instead of repeating their dispatchers' formulas: `ask("conv", params, bias, isa)` is
(mcu_conv2d_s8_path(), mcu_conv2d_s8_get_buffer_size()) for those params on `isa` ("c", "dsp",
"mve"), as the C computes them. The tool runs once per process and answers each distinct call
once (its line is the cache key).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import threading
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from emitter.errors import ToolchainError
from emitter.resources import cache_dir, data_dir

ISA = {"c": 0, "dsp": 1, "mve": 2}  # MCU_ISA_* in mcu_nn.h
PATHS = ("generic", "dsp", "mve")  # MCU_PATH_GENERIC, MCU_PATH_DSP, MCU_PATH_MVE
# the dispatchers the tool links (with --gc-sections: only their path and size queries remain)
DISPATCHERS = ("kernels/mcu_conv2d_s8.c", "kernels/mcu_conv2d_s8_common.c", "kernels/mcu_depthwise_conv2d_s8.c",
               "kernels/mcu_fully_connected_s8.c")
TOOL = "tools/kernel_info.c"


def _sources(root: Path) -> list[Path]:
    """Every file the build reads: the tool, the dispatchers and every header they may include."""
    headers = sorted(p for d in ("include", "kernels", "support") for p in (root / d).glob("*.h"))
    return [root / TOOL, *(root / d for d in DISPATCHERS), *headers]


@cache
def tool() -> Path:
    """The host executable, built once per source hash in mcugen's cache (resources.cache_dir)."""
    root = data_dir("mcu_runtime")
    digest = hashlib.sha256()
    for src in _sources(root):
        digest.update(src.name.encode() + b"\0" + src.read_bytes())
    exe = cache_dir(f"kernel-info-{digest.hexdigest()[:16]}") / "kernel_info"
    if exe.is_file():
        return exe
    tmp = exe.with_name(f"kernel_info.{os.getpid()}")
    cmd = ["gcc", "-O1", "-std=c99", "-w", *(f"-I{root / d}" for d in ("include", "kernels", "support")),
           "-ffunction-sections", "-fdata-sections", "-Wl,--gc-sections",
           str(root / TOOL), *(str(root / d) for d in DISPATCHERS), "-o", str(tmp)]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise ToolchainError("the kernel-info tool (mcu_runtime/tools/kernel_info.c) needs the host gcc "
                             "to answer the kernels' path and scratch questions: install gcc") from exc
    if res.returncode != 0:
        raise ToolchainError(f"building the kernel-info tool failed ({' '.join(cmd)}):\n{res.stderr[-2000:]}")
    tmp.replace(exe)  # atomic: a concurrent build finds a whole file or none
    return exe


class _Session:
    """One running tool, asked a line at a time; answers are kept by their line."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.answers: dict[str, tuple[str, int]] = {}
        self.lock = threading.Lock()

    def ask(self, line: str) -> tuple[str, int]:
        known = self.answers.get(line)
        if known is not None:
            return known
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.proc = subprocess.Popen([str(tool())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             text=True, bufsize=1)
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            reply = self.proc.stdout.readline().split()
        if len(reply) != 2:
            self.proc = None
            raise ToolchainError(f"the kernel-info tool did not answer: {line[:200]}")
        answer = (PATHS[int(reply[0])], int(reply[1]))
        self.answers[line] = answer
        return answer


_SESSION = _Session()


def _ints(values: Any) -> str:
    return " ".join(str(int(v)) for v in np.asarray(values).ravel())


def _dims(d: Any) -> str:
    return f"{d.n} {d.h} {d.w} {d.c}"


def _quant(q: Any) -> str:
    return f"{q.input_offset} {q.output_offset} {q.act_min} {q.act_max} {q.rounding}"


def _channels(p: Any, count: int, bias: np.ndarray | None) -> str:
    m, s = np.asarray(p.multiplier)[:count], np.asarray(p.shift)[:count]
    tail = "0" if bias is None else f"1 {_ints(np.asarray(bias)[:count])}"
    return f"{count} {_ints(m)} {_ints(s)} {tail}"


def query(kind: str, p: Any, bias: np.ndarray | None, isa: str, room: int = 0) -> str:
    """The tool's input line for one call (kind: "conv", "lean" (a conv's lean call), "pw" (a conv's
    in-place question), "dw", "dwip" (a depthwise's in-place scratch), "dwov" (a depthwise's in-place
    question), "dwlean" (a depthwise's lean call),
    "dwlov" (its lean call's in-place question), "dwgw" (the words of one of its build-time
    dsp_groups), "room" (whether a conv's lean call with `room` bytes
    of scratch runs the fast call), "ok" (mcu_conv2d_s8_channels_fast: 1 or 0), "dwok"
    (mcu_depthwise_conv2d_s8_channels_fast) or "fc"; "leans", "rooms": "lean" and "room" for params
    with build-time kernel_sums and requant_bases, "lpw" the lean call's in-place question ("lpws"
    with them), "wide" the lean call's scratch for its wide groups ("wides"); "dwlean" and "dwlov" of
    params with build-time dsp_groups are asked as "dwleans", "dwlovs"; the tool's header)."""
    head = f"{kind} {ISA[isa]}" + (f" {room}" if kind in ("room", "rooms") else "")
    if kind == "fc":
        count = p.out_features if p.per_channel else 1
        m, s = np.asarray(p.multiplier)[:count], np.asarray(p.shift)[:count]
        return (f"{head} {p.batches} {p.in_features} {p.out_features} {_quant(p.q)} {p.per_channel} "
                f"{count} {_ints(m)} {_ints(s)}")
    window = f"{p.stride_h} {p.stride_w} {p.dilation_h} {p.dilation_w} {p.pad_top} {p.pad_left}"
    if kind in ("conv", "lean", "pw", "room", "ok", "leans", "rooms", "lpw", "lpws", "wide", "wides"):
        return (f"{head} {_dims(p.input)} {_dims(p.filter)} {_dims(p.output)} {window} {_quant(p.q)} "
                f"{_channels(p, p.output.c, bias)}")
    groups = getattr(p, "dsp_groups" if isa == "dsp" else "mve_groups" if isa == "mve" else "", None)
    if kind in ("dwlean", "dwlov") and groups is not None:
        head = f"{kind}s {ISA[isa]}"  # params with build-time groups for the ISA's path
    if kind in ("dw", "dwip", "dwov", "dwlean", "dwlov", "dwok", "dwgw"):
        return (f"{head} {_dims(p.input)} {_dims(p.filter)} {_dims(p.output)} {p.depth_multiplier} {window} "
                f"{_quant(p.q)} {_channels(p, p.output.c, bias)}")
    raise ValueError(f"kernel_info: unknown kind {kind!r}")


def ask(kind: str, p: Any, bias: np.ndarray | None, isa: str, room: int = 0) -> tuple[str, int]:
    """(code path, scratch bytes) the C dispatcher of `kind` gives these params on `isa` (kind "room":
    the lean call's path, and 1 where with `room` bytes of scratch it runs the fast call)."""
    return _SESSION.ask(query(kind, p, bias, isa, room))
