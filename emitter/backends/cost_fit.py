"""mcugen's instructions for a layer shape the cost table does not hold: a linear model of the work a
kernel does, fitted on the table's nearest cases of the same group, corrected by the nearest few.

A kernel's count is close to linear in a few counts of its work (work(), per kind and path): the
multiply-accumulates as its passes and SIMD lanes take them, the outputs it requantizes, the windows
it gathers, the weights it reads, its rows and calls. Near a shape, the LOCAL nearest cases of its
group (kind, code path, weight bits; the distance of kernel_choice.nearest) fit that line by least
squares (relative error, each case weighted by 1/(distance+0.5)); the NEIGHBOURS nearest then correct
it by their own ratio count/line, geometric mean weighted by 1/(distance+0.1)^2; the same with the
line of the whole group, and the prediction is the geometric mean of the two. Leave-one-out over the
committed tables, the median error is 0.2-1.7 % on the planner's band and lean rows (`python
scripts/cost_tables.py --planner`; 3 % on cortex-m55's whole lean calls) and 1.5-6 % on the layers'
rows (tests/test_cost_fit.py), against 5-18 % for the nearest cases' instructions per MAC alone. The
DSP path's counts follow its positions a pass (dsp_positions: 4, 2 or 1 as K grows): IC's 3x3 layers
of 2 and 1 positions a pass were -10 to -18 % with passes of 4.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from emitter.backends.cost_cases import Shape, is_lean
from emitter.kernels import c_defines

LOCAL = 40  # the nearest cases that fit the line at a shape
FEATURES_MOST = 64  # groups whose features are remembered
DSP_WORDS = c_defines("kernels/mcu_conv2d_s8_internal.h")["MCU_CONV_DSP_WORDS"]
_FEATURES: dict[tuple[int, str, str, int], tuple[Any, list[Any], np.ndarray]] = {}


def _div(v: int, g: int) -> int:
    return -(-v // g)


def _up(v: int, g: int) -> int:
    return _div(v, g) * g


def border_positions(s: Shape) -> int:
    """Output positions whose window reaches the padding."""
    def inside(n_out: int, pad: int, k: int, stride: int, dil: int, n_in: int) -> int:
        return sum(1 for o in range(n_out) if o * stride - pad >= 0 and o * stride - pad + dil * (k - 1) < n_in)
    full = inside(s.out_h, s.pt, s.kh, s.sh, s.dh, s.h) * inside(s.out_w, s.pl, s.kw, s.sw, s.dw, s.w)
    return s.batches * (s.out_h * s.out_w - full)


def dsp_positions(s: Shape) -> int:
    """Positions a pass of the int8 DSP conv path takes (mcu_conv2d_s8_dsp_positions(): 4, 2 or 1 as
    the interleaved windows of K taps fit MCU_CONV_DSP_WORDS, no more than the call's positions); the
    int4 DSP path's counted as 4."""
    groups, per = _div(s.kh * s.kw * s.c_in, 4), 4
    if s.bits == 8:
        per = 4 if groups * 8 <= DSP_WORDS else 2 if groups * 4 <= DSP_WORDS else 1
    while per > 1 and per > s.batches * s.out_h * s.out_w:
        per >>= 1
    return per


def work(s: Shape, path: str) -> list[float]:
    """The counts of work the model is linear in, for shape `s` on `path` (a band call's, "<path>/band",
    as its path's; a lean call's, "lean:<path>", as that path's: a convolution's lean DSP variant two
    positions a pass, its MVE groups as the generic path)."""
    path = path.split("/")[0]
    lean = is_lean(path)
    path = path.split(":")[-1]
    positions, rows = s.batches * s.out_h * s.out_w, s.batches * s.out_h
    if s.kind == "conv":
        k, co = s.kh * s.kw * s.c_in, s.c_out
        gathered = 0 if s.kh == s.kw == 1 and s.sh == s.sw == 1 else positions * k  # windows not one run
        common = [gathered, border_positions(s) * k, positions, co, 1, co * k]
        if lean and path == "dsp":  # the generic counts and passes of 2 positions (1 where the fast path
            per = min(dsp_positions(s), 2)  # takes 1) of channel pairs, the last positions one at a time
            passes, tail = positions // per, positions % per
            return [*work(s, "generic"), passes * _div(co, 2) * _div(k, 4), tail * co * _div(k, 4)]
        if lean:
            path = "generic"
        if path == "dsp":  # passes of P positions (the last one overlapping the one before, so P a pass
            per = dsp_positions(s)  # computed): every channel's weights in groups of 4, loaded and unpacked
            passes = _div(positions, per)  # once a pass, two MACs a position; windows extended a pass
            done = passes * per
            common = [0 if gathered == 0 else done * k, border_positions(s) * k, done, co, 1, co * k]
            return [passes * co * _div(k, 4), done * co * _div(k, 4), passes * co, passes * k, done * co, *common]
        if path == "mve":  # passes of 3 positions, 2 channels at a time, 16 window bytes a step
            passes = _div(positions, 3)
            return [passes * _div(co, 2) * _div(k, 16), passes * _div(co, 2), passes * k,
                    positions * _div(co, 4), *common]
        return [positions * _div(co, 4) * k, positions * co, positions * _div(co, 4), *common]  # 4 channels
    if s.kind == "dw":
        taps, c = s.kh * s.kw, s.c_out
        lanes = 16 if path == "mve" else 4
        pairs = positions * c * (not lean and s.kh == s.kw == 3 and s.sh == s.dh == 1 and s.out_h > 1)  # 3x3 by
        # row pairs (the lean call: single rows)
        return [positions * _up(c, lanes) * taps, positions * c, positions, c * taps, rows * c, rows,
                border_positions(s) * c * taps, 1, c, pairs * taps, pairs]
    m, k, n = s.batches * (s.h if s.kind == "bmm" else 1), s.c_in, s.c_out  # fc, bmm: blocks of 4 rows,
    blocks = m * _div(n, 4)  # 16 inputs (MVE) or 4 (DSP) a step; per-channel requantization
    return [blocks * _div(k, 16), blocks * _div(k, 4), blocks, m * n, m * k, m, 1, n, k, n * k,
            m * n * s.per_channel]


def predict(rows: tuple[Any, ...], s: Shape, path: str, features: Callable[[Shape], np.ndarray],
            neighbours: int) -> int | None:
    """The count at `s` on `path` from the table `rows` (its cases of s's kind, path and bits): the
    mean of its exact cases, else the local line corrected by the `neighbours` nearest (module
    docstring), else (too few cases to fit, or the line not positive there) their instructions per MAC
    weighted by 1/(distance+0.1)^2 times s's MACs; None where the group is empty."""
    key = (id(rows), s.kind, path, s.bits)
    if key not in _FEATURES:
        if len(_FEATURES) >= FEATURES_MOST:  # (the planner asks of a few tables; a test of many)
            _FEATURES.clear()
        group = [r for r in rows if r.shape.kind == s.kind and r.path == path and r.shape.bits == s.bits]
        table = np.array([features(r.shape) for r in group]) if group else np.zeros((0, 0))
        _FEATURES[key] = (rows, group, table)
    _, group, table = _FEATURES[key]  # (the table kept alive with its id)
    if not group:
        return None
    exact = [r.ours for r in group if r.shape == s]
    if exact:  # (measured more than once: with other requantization, which some paths depend on)
        return int(round(sum(exact) / len(exact)))
    dist = np.linalg.norm(table - features(s), axis=1)
    order = np.argsort(dist, kind="stable")
    near, wts = [group[int(i)] for i in order[:neighbours]], 1.0 / (dist[order[:neighbours]] + 0.1) ** 2
    at = work(s, path)
    got = []
    for fit, local in ((order[:LOCAL], True), (order, False)):  # the local line and the group's
        if len(fit) < 2 * len(at):
            continue
        x = np.array([work(group[int(i)].shape, path) for i in fit], dtype=np.float64)
        y = np.array([group[int(i)].ours for i in fit], dtype=np.float64)
        w = 1.0 / (dist[fit] + 0.5) if local else np.ones(len(fit))
        coef = np.linalg.lstsq(x / y[:, None] * w[:, None], w, rcond=None)[0]
        c = corrected(coef, near, wts, s, path)
        if c is not None:
            got.append(c)
    if got:
        return int(round(math.exp(sum(math.log(v) for v in got) / len(got))))
    per_mac = sum(w * r.ours / max(r.shape.macs, 1) for w, r in zip(wts, near, strict=True)) / wts.sum()
    return max(1, int(round(per_mac * s.macs)))


def corrected(coef: np.ndarray, near: list[Any], wts: np.ndarray, s: Shape, path: str) -> int | None:
    """The line at `s` times its nearest cases' weighted geometric mean of count/line; None where the
    line is not positive at `s` or at a neighbour (outside the range it was fitted on)."""
    at = float(np.dot(coef, work(s, path)))
    lines = [float(np.dot(coef, work(r.shape, path))) for r in near]
    if at <= 0 or min(lines) <= 0:
        return None
    log_ratio = sum(w * math.log(r.ours / v) for w, r, v in zip(wts, near, lines, strict=True)) / wts.sum()
    return max(1, int(round(at * math.exp(log_ratio))))
