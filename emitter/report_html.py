"""report.html: the bundle's report.json as one self-contained page (inline CSS and SVG, no script).

The page is a function of report.json alone, so `mcugen --verify --profile`, which adds measured
figures to report.json after the bundle is written, renders it again (cli.record_figures). This
module computes every coordinate and every formatted number; templates/report.html.j2 only places
them. Coordinates are rounded to 0.01 px, so the page is deterministic.

  - memory plan: x = step (layer), y = arena offset (0 at the bottom); one <rect> per planned buffer
    over its live range [first, last] at its offset, coloured by kind, with data-name/-offset/-bytes/
    -first/-last and a <title>; the live bytes per step as a line, the peak step marked, the
    liveness lower bound and the arena size drawn as horizontal lines;
  - flash: weight bytes per layer and estimated code bytes per portable kernel, as bar charts;
  - the per-layer table (with the instructions per layer of each profiled board) and the results
    of each verification run.
"""
from __future__ import annotations

import functools
import re
from typing import Any

import jinja2

from emitter.resources import data_dir

WIDTH = 960  # px, both charts
LEFT, RIGHT, TOP, BOTTOM = 80, 170, 24, 40  # memory plot margins
PLOT_H = 300
BAR_H, BAR_GAP, BAR_LEFT, BAR_RIGHT = 14, 4, 260, 90
KIND_COLOURS = {"tensor": "#4e79a7", "scratch": "#f28e2b", "ring": "#59a14f", "input": "#b07aa1"}
OTHER_COLOUR = "#8c8c8c"


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The HTML environment: the same settings as emitter.render's, with HTML escaping."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True, autoescape=True)


def px(v: float) -> str:
    """A coordinate as SVG text: at most two decimals, no trailing zeros."""
    text = f"{v:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def num(n: int) -> str:
    return f"{n:,}"


def short(name: str, width: int = 32) -> str:
    """A long layer name cut from the left, as mcugen's summary does (the full name is its tooltip)."""
    return name if len(name) <= width else "..." + name[3 - width:]


def kind_class(kind: str) -> str:
    return "kind-" + re.sub(r"[^a-z0-9]+", "-", kind.lower())


def live_bytes(buffers: list[dict[str, Any]], steps: int) -> list[int]:
    return [sum(b["bytes"] for b in buffers if b["first"] <= s <= b["last"]) for s in range(steps)]


def peak_step(buffers: list[dict[str, Any]], steps: int) -> int:
    """The first step with the most live bytes (where the liveness lower bound is reached)."""
    live = live_bytes(buffers, steps)
    return live.index(max(live)) if live else 0


def ticks(top: int, count: int = 4) -> list[int]:
    """About `count` round tick values from 0 to top."""
    if top <= 0:
        return [0]
    raw = top / count
    mag = 10 ** (len(str(int(raw))) - 1)
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [int(i * step) for i in range(int(top // step) + 1)]


def memory_chart(mem: dict[str, Any], layers: dict[int, dict[str, Any]]) -> dict[str, Any]:
    steps = max(mem["steps"], 1)
    arena = max(mem["arena_bytes"], 1)
    plot_w = WIDTH - LEFT - RIGHT
    cw = plot_w / steps

    def x(step: float) -> float:
        return LEFT + step * cw

    def y(offset: float) -> float:
        return TOP + PLOT_H - offset * PLOT_H / arena

    rects = []
    for b in mem["buffers"]:
        kind = str(b.get("kind", "tensor"))
        extra = ", ".join(f"{k} {b[k]}" for k in sorted(b) if k not in ("name", "offset", "bytes", "first",
                                                                           "last", "kind"))
        rects.append({
            "name": b["name"], "offset": b["offset"], "bytes": b["bytes"], "first": b["first"], "last": b["last"],
            "kind": kind, "cls": kind_class(kind),
            "x": px(x(b["first"])), "w": px((b["last"] - b["first"] + 1) * cw),
            "y": px(y(b["offset"] + b["bytes"])), "h": px(max(b["bytes"] * PLOT_H / arena, 0.5)),
            "title": f"{b['name']} ({kind}): offset {num(b['offset'])}, {num(b['bytes'])} bytes, "
                     f"live at layers {b['first']}..{b['last']}" + (f"; {extra}" if extra else ""),
        })
    live = live_bytes(mem["buffers"], mem["steps"])
    peak = peak_step(mem["buffers"], mem["steps"])
    points = []
    for s, v in enumerate(live):
        points += [f"{px(x(s))},{px(y(v))}", f"{px(x(s + 1))},{px(y(v))}"]
    every = max(1, -(-steps // 24))
    lb = mem["liveness_lower_bound_bytes"]
    peak_layer = layers.get(peak)
    return {
        "width": WIDTH, "height": TOP + PLOT_H + BOTTOM, "rects": rects, "live": " ".join(points),
        "left": LEFT, "plot_h": PLOT_H, "right": px(LEFT + plot_w), "top": TOP, "bottom": px(y(0)),
        "label_x": px(LEFT + plot_w + 6),
        "arena_y": px(y(arena)), "arena": num(mem["arena_bytes"]),
        "lb_y": px(y(lb)), "lb": num(lb), "gap": num(mem["arena_bytes"] - lb),
        "peak": peak, "peak_x": px(x(peak)), "peak_w": px(cw), "peak_mid": px(x(peak + 0.5)),
        "peak_bytes": num(max(live, default=0)),
        "peak_what": f"layer {peak}" + (f" {peak_layer['op']}" if peak_layer else ""),
        "peak_name": peak_layer["name"] if peak_layer else "",
        "xticks": [{"x": px(x(s + 0.5)), "label": str(s)} for s in range(0, mem["steps"], every)],
        "xlabel_y": px(y(0) + 30), "xlabel_x": px(LEFT + plot_w / 2),
        "yticks": [{"y": px(y(v)), "label": num(v)} for v in ticks(mem["arena_bytes"])],
        "kinds": [{"kind": k, "cls": kind_class(k)} for k in sorted({r["kind"] for r in rects})],
    }


def bar_chart(items: list[tuple[str, int, str]]) -> dict[str, Any]:
    """Horizontal bars: (label, bytes, tooltip) per row, scaled to the largest."""
    top = max((v for _, v, _ in items), default=0) or 1
    plot_w = WIDTH - BAR_LEFT - BAR_RIGHT
    rows = []
    for i, (label, v, title) in enumerate(items):
        y = i * (BAR_H + BAR_GAP)
        rows.append({"label": label, "bytes": v, "value": num(v), "title": title, "y": px(y),
                     "text_y": px(y + BAR_H - 3), "w": px(max(v * plot_w / top, 0.5)),
                     "value_x": px(BAR_LEFT + max(v * plot_w / top, 0.5) + 4)})
    return {"width": WIDTH, "height": max(len(items), 1) * (BAR_H + BAR_GAP), "rows": rows,
            "left": BAR_LEFT, "label_x": BAR_LEFT - 6, "bar_h": BAR_H}


def backend_of(data: dict[str, Any], lay: dict[str, Any]) -> tuple[str, str]:
    """(backend, reason) of one layer's kernel."""
    why = {p["index"]: p["why"] for p in data.get("portable_layers", [])}
    if data["backend"] != "cmsis-nn":
        return "portable", ""
    if lay["index"] in why:
        return "portable", why[lay["index"]]
    if lay["kernel"].startswith("mcu_"):
        return "portable", "CMSIS-NN has no kernel for it"
    return "CMSIS-NN", ""


def verification(board: str, fig: dict[str, Any]) -> dict[str, Any]:
    """One board's measured figures (cli.record_figures) as rows of text."""
    facts = []
    if fig.get("instructions"):
        counts = sorted(set(fig["instructions"]))
        facts.append(("instructions per inference", num(counts[0]) + (f"..{num(counts[-1])}" if len(counts) > 1
                                                                      else "") + f" ({fig.get('opt', '')})"))
    if fig.get("stack_bytes") is not None:
        facts.append(("inference stack", f"{num(fig['stack_bytes'])} bytes"))
    if "flash_model" in fig:
        facts.append(("model in the firmware", f"flash {num(fig['flash_model'])} bytes, RAM {num(fig['ram_model'])}"
                                               f" bytes ({num(fig['ram_model_with_stack'])} with the stack)"))
    if "ort_elements" in fig:
        share = 100.0 * fig["ort_differ"] / max(fig["ort_elements"], 1)
        facts.append(("golden vs onnxruntime", f"{num(fig['ort_differ'])}/{num(fig['ort_elements'])} elements "
                                               f"differ ({share:.2f}%), max |diff| {fig['ort_max_diff']} "
                                               "(float requantization; reported, not an error)"))
    checks = [{"what": c["what"], "ok": c["ok"],
               "text": ("bit-exact" if c["ok"] else "MISMATCH") + f": {num(c['differ'])}/{num(c['elements'])} "
                       f"elements differ, max |diff| {c['max_diff']}"} for c in fig.get("checks", [])]
    return {"board": board, "checks": checks, "facts": facts}


def report_html(data: dict[str, Any]) -> str:
    """The page, from report.json's content."""
    layers = {lay["index"]: lay for lay in data["layers"]}
    measured = data.get("measured", {})
    profiled = [b for b in sorted(measured) if measured[b].get("layers")]
    instr = {b: {m["index"]: num(m["instructions"]) for m in measured[b]["layers"]} for b in profiled}
    rows = []
    for lay in data["layers"]:
        backend, reason = backend_of(data, lay)
        rows.append({"index": lay["index"], "name": lay["name"], "short": short(lay["name"]), "op": lay["op"],
                     "kernel": lay["kernel"],
                     "backend": backend, "reason": reason, "shape": "x".join(map(str, lay["output_shape"])),
                     "macs": num(lay["macs"]), "weights": num(lay["weight_bytes"]),
                     "offset": "caller's buffer" if lay["arena_offset"] is None else num(lay["arena_offset"]),
                     "out_bytes": num(lay["output_bytes"]),
                     "instructions": [instr[b].get(lay["index"], "") for b in profiled]})
    weights = [(f"{lay['index']} {lay['op']}", lay["weight_bytes"], f"layer {lay['index']} {lay['name']}: "
                f"{num(lay['weight_bytes'])} bytes of weights and parameters")
               for lay in data["layers"] if lay["weight_bytes"]]
    est = data.get("code_estimate")
    code = []
    if est is not None:
        code = [(k, v, f"{k}: about {num(v)} bytes of code") for k, v in sorted(est["kernels"].items())]
        code.append(("support (shared)", est["support"], "code shared by the kernels"))
    cmsis_kernels = sorted({lay["kernel"] for lay in data["layers"] if not lay["kernel"].startswith("mcu_")})
    code_total = sum(v for _, v, _ in code)
    return environment().get_template("report.html.j2").render(
        r=data, memory=memory_chart(data["memory"], layers), rows=rows, profiled=profiled,
        weights=bar_chart(weights), code=bar_chart(code), code_total=num(code_total), has_code=bool(code),
        cmsis_kernels=cmsis_kernels,
        toolchain=est["toolchain"] if est else "", other_colour=OTHER_COLOUR,
        colours=[{"cls": kind_class(k), "colour": c} for k, c in KIND_COLOURS.items()],
        verifications=[verification(b, measured[b]) for b in sorted(measured)],
        totals={"arena": num(data["arena_bytes"]), "lb": num(data["liveness_lower_bound_bytes"]),
                "gap": num(data["arena_gap_bytes"]), "weights": num(data["weight_bytes"]),
                "macs": num(data["macs"]),
                "io": num(sum(data["io_bytes"]["inputs"]) + sum(data["io_bytes"]["outputs"])),
                "flash": num(data["weight_bytes"] + code_total)})
