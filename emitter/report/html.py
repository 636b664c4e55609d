"""report.html: the bundle's report.json as one self-contained page (inline CSS and SVG, no script).

The page is a function of report.json alone, so `mcugen --verify --profile`, which adds measured
figures to report.json after the bundle is written, renders it again (cli.record_figures). This
module computes every coordinate and every formatted number; templates/report.html.j2 only places
them. Coordinates are rounded to 0.01 px, so the page is deterministic.

  - memory plan: x = step (layer), y = arena offset in bytes (0 at the bottom), both axes titled;
    one <rect> per planned buffer over its live range [first, last] at its offset, coloured by kind
    (rings: a streamed layer's last rows), with data-name/-offset/-bytes/-first/-last and a
    <title>; its name drawn on it where it fits, else its number from the key below the chart;
    every label placed where it overlaps no other (label_boxes()); the bytes an output
    written over its input shares with it (bands, in place), pale with a dashed outline; the bytes in use per step
    (report.json's in_use_bytes: shared bytes once) as a line and as one column per step
    (data-live, data-floor), the peak step marked, the floor (the liveness lower bound when
    nothing overlaps) and the arena size drawn as horizontal lines -- the gap is never negative;
  - flash: weight bytes per layer and estimated code bytes per portable kernel, as bar charts;
  - the per-layer table (with the instructions per layer of each profiled board) and the results
    of each verification run.
"""
from __future__ import annotations

import functools
import re
from typing import Any

import jinja2

from emitter.calls import is_portable
from emitter.resources import data_dir

WIDTH = 1240  # px of the viewBox, every chart; the page draws them 100 % wide, so they scale with the window
LEFT, RIGHT, TOP, BOTTOM = 124, 210, 48, 70  # memory plot margins: y tick labels + y title, line labels, peak label
PLOT_H = 440
FONT, LABEL = 14, 12  # px: chart text; buffer names on the blocks
CHAR_W = 0.62  # a text's width per character, of its font size (a safe bound of system-ui's mean advance)
BAR_H, BAR_GAP, BAR_LEFT, BAR_RIGHT = 20, 6, 300, 110
KIND_COLOURS = {"tensor": "#4e79a7", "scratch": "#f28e2b", "ring": "#59a14f", "input": "#b07aa1"}
OTHER_COLOUR = "#8c8c8c"


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The HTML environment: the same settings as emitter.render.bundle's, with HTML escaping."""
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


MODES = {"rows": "streamed row by row", "down": "band by band, top down, over its input",
         "up": "band by band, bottom up, over its input", "in place": "in place over an operand",
         "whole": "whole"}


def buffer_title(b: dict[str, Any], kind: str) -> str:
    """A buffer's tooltip: where and when; a ring's rows, of which layer; any other key as is."""
    text = (f"{b['name']} ({kind}): offset {num(b['offset'])}, {num(b['bytes'])} bytes, live at layers "
            f"{b['first']}..{b['last']}")
    known = {"name", "offset", "bytes", "first", "last", "kind"}
    if kind == "ring" and {"rows", "row_bytes", "whole_bytes", "layer"} <= b.keys():
        known |= {"rows", "row_bytes", "whole_bytes", "layer"}
        text += (f"; the last {b['rows']} rows ({num(b['row_bytes'])} bytes each) of layer {b['layer']}'s output, "
                 f"a tensor of {num(b['whole_bytes'])} bytes that never exists whole")
    elif kind == "ring" and b["name"].endswith("#acc"):
        text += "; a streamed chain's running sums"
    extra = ", ".join(f"{k} {b[k]}" for k in sorted(b) if k not in known)
    return text + (f"; {extra}" if extra else "")


def memory_figures(mem: dict[str, Any]) -> tuple[list[int], list[int], int]:
    """(bytes in use per step, floor per step, floor): report.json's, or for a report.json from
    before they were stated, the live bytes (no overlaps were planned then)."""
    live = mem.get("in_use_bytes") or live_bytes(mem["buffers"], mem["steps"])
    floor = mem.get("floor_step_bytes") or live_bytes(mem["buffers"], mem["steps"])
    return live, floor, mem.get("floor_bytes", mem["liveness_lower_bound_bytes"])


Box = tuple[float, float, float, float]  # x0, y0, x1, y1


def text_box(x: float, y: float, text: str, size: float, anchor: str = "start") -> Box:
    """The box a one-line SVG text at baseline (x, y) takes, at most (CHAR_W per character)."""
    w = len(text) * size * CHAR_W
    x0 = x - w / 2 if anchor == "middle" else x - w if anchor == "end" else x
    return (x0, y - size * 0.85, x0 + w, y + size * 0.25)


def overlaps_any(box: Box, placed: list[Box], pad: float = 1.0) -> bool:
    return any(box[0] < b[2] + pad and b[0] < box[2] + pad and box[1] < b[3] + pad and b[1] < box[3] + pad
               for b in placed)


def display_name(name: str) -> str:
    """A buffer's name as drawn on its block: its first ';' part (TFLite exports join every fused
    op's name), without the tails every tensor repeats, its last two path components, and any
    '#scratch'-style suffix kept (the full name is the block's tooltip)."""
    base, hash_, tag = name.partition("#")
    base = base.split(";", 1)[0]
    for tail in ("_QuantizeLinear_Output", "_quantized", "_output_0", "_prequant"):
        base = base.removesuffix(tail)
    base = "/".join(base.strip("/").split("/")[-2:]) or base
    return base + hash_ + tag


def memory_chart(mem: dict[str, Any], layers: dict[int, dict[str, Any]]) -> dict[str, Any]:
    steps = max(mem["steps"], 1)
    arena = max(mem["arena_bytes"], 1)
    plot_w = WIDTH - LEFT - RIGHT
    cw = plot_w / steps

    def x(step: float) -> float:
        return LEFT + step * cw

    def y(offset: float) -> float:
        return TOP + PLOT_H - offset * PLOT_H / arena

    placed: list[Box] = []  # every label's box so far: a label that would overlap one is not drawn there
    live, floor_steps, floor = memory_figures(mem)
    peak = live.index(max(live)) if live else 0
    peak_layer = layers.get(peak)
    overlapped = bool(mem.get("overlaps"))
    # the labels outside the plot first: they are always drawn
    xlabel = {"x": px(LEFT + plot_w / 2), "y": px(y(0) + 50), "text": "layer (execution step)"}
    placed.append(text_box(LEFT + plot_w / 2, y(0) + 50, xlabel["text"], FONT, "middle"))
    ytitle = "arena offset (bytes)"
    ylabel = {"x": 20, "y": px(TOP + PLOT_H / 2), "text": ytitle}
    half = len(ytitle) * FONT * CHAR_W / 2  # rotated -90 degrees about its anchor
    placed.append((20 - FONT * 0.85, TOP + PLOT_H / 2 - half, 20 + FONT * 0.25, TOP + PLOT_H / 2 + half))
    yticks = []
    for v in ticks(mem["arena_bytes"]):
        box = text_box(LEFT - 8, y(v) + 5, num(v), FONT, "end")
        if not overlaps_any(box, placed):
            placed.append(box)
            yticks.append({"y": px(y(v)), "text_y": px(y(v) + 5), "label": num(v)})
    widest = max(len(str(mem["steps"] - 1)), 1) * FONT * CHAR_W + 8
    every = max(1, -(-int(widest) // max(int(cw), 1)))
    xticks = []
    for s in range(0, mem["steps"], every):
        box = text_box(x(s + 0.5), y(0) + 20, str(s), FONT, "middle")
        if not overlaps_any(box, placed):
            placed.append(box)
            xticks.append({"x": px(x(s + 0.5)), "y": px(y(0) + 20), "label": str(s)})
    lb_what = "floor" if overlapped else "lower bound"
    arena_text, lb_text = f"arena {num(mem['arena_bytes'])} B", f"{lb_what} {num(floor)} B"
    arena_ty = y(arena) + 5
    lb_ty = max(y(floor) + 5, arena_ty + FONT + 4)  # below the arena's label, never on it
    label_x = LEFT + plot_w + 8
    for ty, text in ((arena_ty, arena_text), (lb_ty, lb_text)):
        placed.append(text_box(label_x, ty, text, FONT))
    peak_text = (f"peak: layer {peak}" + (f" {peak_layer['op']}" if peak_layer else "")
                 + f", {num(max(live, default=0))} B in use")
    w = len(peak_text) * FONT * CHAR_W
    peak_cx = min(max(x(peak + 0.5), LEFT + w / 2), WIDTH - w / 2 - 2)
    placed.append(text_box(peak_cx, TOP - 16, peak_text, FONT, "middle"))

    rects, key = [], []
    order = sorted(range(len(mem["buffers"])), key=lambda i: -mem["buffers"][i]["bytes"])  # big blocks first
    labels: dict[int, dict[str, Any]] = {}
    for i in order:
        b = mem["buffers"][i]
        bx, bw = x(b["first"]), (b["last"] - b["first"] + 1) * cw
        by, bh = y(b["offset"] + b["bytes"]), max(b["bytes"] * PLOT_H / arena, 0.5)
        name, ref = display_name(b["name"]), str(i + 1)
        fits = int((bw - 8) / (LABEL * CHAR_W))  # characters across the block
        fits_up = int((bh - 8) / (LABEL * CHAR_W))  # characters up a tall, narrow block (turned -90 degrees)
        label = None
        tries = []
        if bh >= LABEL + 4:
            tries.append((name, fits, False))
        if bw >= LABEL + 4:
            tries.append((name, fits_up, True))
        if bh >= LABEL + 4:
            tries.append((ref, fits, False))
        for text, room, up in tries:
            if len(text) > room:
                continue
            if up:  # rotate(-90) about (tx, ty): the text runs upwards from ty, centred on the block
                tx, ty = bx + bw / 2 + LABEL * 0.35, by + bh - 4
                w = len(text) * LABEL * CHAR_W
                box = (tx - LABEL * 0.85, ty - w, tx + LABEL * 0.25, ty)
            else:
                tx, ty = bx + 4, by + bh / 2 + LABEL * 0.35
                box = text_box(tx, ty, text, LABEL)
            if not overlaps_any(box, placed):
                placed.append(box)
                label = {"x": px(tx), "y": px(ty), "text": text, "up": up}
                break
        if label is not None:
            labels[i] = label
    for i, b in enumerate(mem["buffers"]):
        kind = str(b.get("kind", "tensor"))
        label = labels.get(i)
        named = label is not None and label["text"] == display_name(b["name"])
        rects.append({
            "name": b["name"], "offset": b["offset"], "bytes": b["bytes"], "first": b["first"], "last": b["last"],
            "kind": kind, "cls": kind_class(kind), "ref": i + 1, "label": label,
            "x": px(x(b["first"])), "w": px((b["last"] - b["first"] + 1) * cw),
            "y": px(y(b["offset"] + b["bytes"])), "h": px(max(b["bytes"] * PLOT_H / arena, 0.5)),
            "title": buffer_title(b, kind),
        })
        if not named:
            key.append({"ref": i + 1, "name": b["name"], "short": display_name(b["name"]), "kind": kind,
                        "offset": num(b["offset"]),
                        "bytes": num(b["bytes"]), "first": b["first"], "last": b["last"],
                        "drawn": "its number" if label is not None else "too small to label"})
    at = {b["name"]: b for b in mem["buffers"]}
    bands = []
    for o in mem.get("overlaps", []):
        if not o["bytes"]:
            continue
        lo = max(at[o["input"]]["offset"], at[o["output"]]["offset"])
        how = MODES.get(o["mode"], o["mode"])
        bands.append({
            "input": o["input"], "output": o["output"], "bytes": o["bytes"], "mode": o["mode"],
            "first": o["first"], "last": o["last"], "x": px(x(o["first"])),
            "w": px((o["last"] - o["first"] + 1) * cw), "y": px(y(lo + o["bytes"])),
            "h": px(max(o["bytes"] * PLOT_H / arena, 0.5)),
            "title": f"{'band' if o['mode'] in ('down', 'up') else 'shared'}: layers {o['first']}..{o['last']} write "
                     f"{o['output']} ({how}) over {o['input']}, which they read for the last time: "
                     f"{num(o['bytes'])} bytes hold both, counted once (at most {num(o['allowed_bytes'])} may)"})
    points = []
    for s, v in enumerate(live):
        points += [f"{px(x(s))},{px(y(v))}", f"{px(x(s + 1))},{px(y(v))}"]
    step_rects = []
    for s, v in enumerate(live):
        lay = layers.get(s)
        rings = sum(b["bytes"] for b in mem["buffers"] if b.get("kind") == "ring" and b["first"] <= s <= b["last"])
        shared = sum(o["bytes"] for o in mem.get("overlaps", []) if o["first"] <= s <= o["last"])
        step_rects.append({
            "step": s, "live": v, "floor": floor_steps[s], "x": px(x(s)), "w": px(cw),
            "title": f"layer {s}" + (f" {lay['op']} {lay['name']}" if lay else "") + f": {num(v)} bytes in use"
                     + (f" (rings {num(rings)})" if rings else "")
                     + (f"; {num(shared)} bytes shared by an output written over its input" if shared else "")
                     + f"; these buffers need at least {num(floor_steps[s])} here"})
    return {
        "width": WIDTH, "height": TOP + PLOT_H + BOTTOM, "rects": rects, "bands": bands, "steps": step_rects,
        "live": " ".join(points), "key": key,
        "left": LEFT, "plot_h": PLOT_H, "right": px(LEFT + plot_w), "top": TOP, "bottom": px(y(0)),
        "label_x": px(label_x),
        "arena_y": px(y(arena)), "arena_ty": px(arena_ty), "arena_text": arena_text, "arena": num(mem["arena_bytes"]),
        "lb_y": px(y(floor)), "lb_ty": px(lb_ty), "lb_text": lb_text, "lb": num(floor), "lb_what": lb_what,
        "gap": num(mem["arena_bytes"] - floor),
        "peak": peak, "peak_x": px(x(peak)), "peak_w": px(cw), "peak_cx": px(peak_cx), "peak_ty": px(TOP - 16),
        "peak_text": peak_text, "peak_bytes": num(max(live, default=0)),
        "peak_what": f"layer {peak}" + (f" {peak_layer['op']}" if peak_layer else ""),
        "peak_name": peak_layer["name"] if peak_layer else "",
        "xticks": xticks, "yticks": yticks, "xlabel": xlabel, "ylabel": ylabel, "tick_x": LEFT - 8,
        "kinds": [{"kind": k, "cls": kind_class(k)} for k in sorted({r["kind"] for r in rects})],
    }


def pool_charts(mem: dict[str, Any], layers: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Several RAM pools (report.json memory.pools): one memory timeline per pool, its buffers at
    their offsets in it, with its share of the estimated accesses."""
    pools = mem.get("pools") or []
    total = sum(p["accesses"] for p in pools) or 1
    out = []
    for pool in pools:
        lo, hi = pool["base"], pool["base"] + pool["bytes"]
        bufs = [b | {"offset": b["offset"] - lo} for b in mem["buffers"] if lo <= b["offset"] < hi]
        names = {b["name"] for b in bufs}
        live = live_bytes(bufs, mem["steps"])
        over = [o for o in mem.get("overlaps", []) if o["input"] in names and o["output"] in names]
        shared = [sum(o["bytes"] for o in over if o["first"] <= s <= o["last"]) for s in range(mem["steps"])]
        used = [v - d for v, d in zip(live, shared, strict=True)]
        sub = mem | {"arena_bytes": pool["bytes"], "buffers": bufs, "overlaps": over, "in_use_bytes": used,
                     "floor_step_bytes": used, "floor_bytes": max(used, default=0),
                     "liveness_lower_bound_bytes": max(live, default=0)}
        chart = memory_chart(sub, layers)
        out.append({"name": pool["name"], "rank": pool["rank"], "bytes": num(pool["bytes"]),
                    "capacity": num(pool["capacity"]), "share": f"{100 * pool['accesses'] / total:.1f}",
                    "accesses": num(pool["accesses"]), "buffers": len(bufs), "chart": chart})
    return out


def plan_story(data: dict[str, Any]) -> dict[str, Any]:
    """The cards and the note that say what kind of plan this is: its floor (the smallest RAM a
    plan of its kind with its buffers can reach) and gap, its rings and bands."""
    mem = data["memory"]
    _, _, floor = memory_figures(mem)
    kind = mem.get("kind", "layer")
    overlapped = bool(mem.get("overlaps"))
    rings = [b for b in mem["buffers"] if b.get("kind") == "ring"]
    layer_modes = [lay.get("runs", "whole") for lay in data["layers"]]
    bands = sum(1 for m in layer_modes if m in ("down", "up"))
    streamed = sum(1 for m in layer_modes if m == "rows")
    whole_lb = data.get("memory_plan", {}).get("liveness_lower_bound_bytes")
    notes = []
    if rings:
        sums = [b for b in rings if "rows" not in b]
        notes.append(f"{len(rings) - len(sums)} rings ({num(sum(b['bytes'] for b in rings if 'rows' in b))} bytes): "
                     "a streamed layer keeps only the last rows of its output that the next layer still reads; the "
                     "whole tensor never exists."
                     + (f" {len(sums)} more hold a streamed chain's running sums "
                        f"({num(sum(b['bytes'] for b in sums))} bytes)." if sums else ""))
    if bands:
        notes.append(f"{bands} layers run band by band and write their output over the input they read for the "
                     "last time (top down or bottom up): the pale, dash-outlined bytes hold both, counted once.")
    if overlapped or rings:
        notes.append(f"The floor, {num(floor)} bytes, is the least RAM this kind of plan ({kind}) can reach with "
                     "these buffers: "
                     "at each layer, the live bytes less the most the allowed overlaps can share"
                     + (f"; whole layers need at least {num(whole_lb)} bytes (their liveness lower bound)."
                        if whole_lb is not None else "."))
    return {"floor": num(floor), "gap": num(max(mem["arena_bytes"] - floor, 0)), "kind": kind,
            "floor_what": f"least RAM of this {kind} plan" if overlapped else "liveness lower bound",
            "rings": sum(1 for b in rings if "rows" in b),
            "ring_bytes": num(sum(b["bytes"] for b in rings if "rows" in b)), "bands": bands,
            "streamed": streamed, "notes": notes}


def layer_cells(lay: dict[str, Any]) -> dict[str, str]:
    """The table's run / offset / bytes cells: a streamed layer's output is its ring."""
    runs = lay.get("runs", "whole")
    held = lay.get("output_held")
    if lay["arena_offset"] is None:
        offset = "caller's buffer"
    else:
        offset = ("ring at " if held else "") + num(lay["arena_offset"])
    out = num(lay["output_bytes"])
    if held:
        out = f"{num(held['bytes'])} of {out} (ring of {held['rows']} rows; never whole)"
    return {"runs": MODES.get(runs, runs), "offset": offset, "out_bytes": out}


def bar_chart(items: list[tuple[str, int, str]]) -> dict[str, Any]:
    """Horizontal bars: (label, bytes, tooltip) per row, scaled to the largest; a label longer
    than the left margin is cut from the left (its full text is the tooltip)."""
    fit = int((BAR_LEFT - 10) / (FONT * CHAR_W))
    items = [(short(label, fit), v, title) for label, v, title in items]
    top = max((v for _, v, _ in items), default=0) or 1
    plot_w = WIDTH - BAR_LEFT - BAR_RIGHT
    rows = []
    for i, (label, v, title) in enumerate(items):
        y = i * (BAR_H + BAR_GAP)
        rows.append({"label": label, "bytes": v, "value": num(v), "title": title, "y": px(y),
                     "text_y": px(y + BAR_H / 2 + FONT * 0.35), "w": px(max(v * plot_w / top, 0.5)),
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
    if is_portable(lay["kernel"]):
        return "portable", "CMSIS-NN has no kernel for it"
    return "CMSIS-NN", ""


def verification(board: str, fig: dict[str, Any]) -> dict[str, Any]:
    """One board's measured figures (cli.record_figures) as rows of text: what it ran on (samples,
    their source), the checks, and what it measured (instructions, stack, code)."""
    facts = []
    if "samples" in fig:
        facts.append(("samples", num(fig["samples"])))
    if "inputs" in fig:
        facts.append(("input source", str(fig["inputs"])))
    if fig.get("code_bytes") is not None:
        facts.append(("code (measured)", f"{num(fig['code_bytes'])} bytes: the linked firmware's flash beyond the "
                                         f"weights" + (f", {fig['compiler']}" if fig.get("compiler") else "")
                                         + (f", --optimize {fig['optimize']}" if fig.get("optimize") else "")))
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


def code_section(data: dict[str, Any]) -> dict[str, Any]:
    """The one code figure (codesize.code_figure: measured where --verify ran, else the estimate)
    and the estimate's parts, which add up to the estimate."""
    from emitter.report.codesize import code_figure

    est = data.get("code_estimate")
    fig = code_figure(data)
    parts: list[tuple[str, int, str]] = []
    if est is not None:
        parts = [(k, v, f"{k}: about {num(v)} bytes of code (its shipped files)")
                 for k, v in sorted(est["kernels"].items())]
        parts.append(("support (shared)", est["support"], "code shared by the kernels (support/)"))
        if est.get("other"):
            parts.append(("other runtime files", est["other"], "other shipped mcu_runtime/ files"))
        if "schedule" in est:
            parts.append(("schedule (the kernel calls)", est["schedule"], f"{data['name']}.c: the calls in order"))
    if fig is None:
        return {"has": False, "parts": parts}
    measured = fig["source"] == "measured"
    return {"has": True, "parts": parts, "bytes": num(fig["bytes"]), "source": fig["source"],
            "what": f"measured on {fig['board']} (--verify)" if measured else "estimate",
            "estimate": num(est["bytes"]) if est is not None and "bytes" in est else None,
            "flash": num(data["weight_bytes"] + fig["bytes"]), "measured": measured}


WEIGHTED_OPS = ("conv", "conv_add", "conv_transpose", "fc")  # the IR ops with a weight matrix/filter


def weight_bits(lay: dict[str, Any]) -> str:
    """The width of a layer's stored weights: 4 for a packed 4-bit kernel (mcu_*_s4), 8 for another
    layer with weights, "" for a layer without."""
    if str(lay["kernel"]).endswith("_s4"):
        return "4"
    return "8" if lay["op"] in WEIGHTED_OPS and lay["weight_bytes"] else ""


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
                     "kernel": lay["kernel"], "view": False,
                     "backend": backend, "reason": reason, "shape": "x".join(map(str, lay["output_shape"])),
                     "macs": num(lay["macs"]), "weights": num(lay["weight_bytes"]), "bits": weight_bits(lay),
                     **layer_cells(lay),
                     "instructions": [instr[b].get(lay["index"], "") for b in profiled]})
    for v in data.get("views", []):
        rows.append({"index": v["index"], "name": v["name"], "short": short(v["name"]), "op": v["op"],
                     "kernel": "(view)", "view": True, "backend": "none: no code", "reason": "",
                     "shape": "x".join(map(str, v["output_shape"])), "macs": "0", "weights": "0", "bits": "",
                     "runs": f"view of {short(display_name(v['view_of']), 28)}: no code, no copy",
                     "offset": "its input's", "out_bytes": num(v["output_bytes"]),
                     "instructions": ["" for _ in profiled]})
    rows.sort(key=lambda r: r["index"])
    weights = [(f"{lay['index']} {lay['op']}", lay["weight_bytes"], f"layer {lay['index']} {lay['name']}: "
                f"{num(lay['weight_bytes'])} bytes of weights and parameters")
               for lay in data["layers"] if lay["weight_bytes"]]
    est = data.get("code_estimate")
    code = code_section(data)
    cmsis_kernels = sorted({lay["kernel"] for lay in data["layers"] if not is_portable(lay["kernel"])})
    return environment().get_template("report.html.j2").render(
        r=data, memory=memory_chart(data["memory"], layers), story=plan_story(data), rows=rows, profiled=profiled,
        pools=pool_charts(data["memory"], layers),
        weights=bar_chart(weights), code=code, code_chart=bar_chart(code["parts"]),
        cmsis_kernels=cmsis_kernels, views=len(data.get("views", [])),
        toolchain=est["toolchain"] if est else "", other_colour=OTHER_COLOUR, font=FONT, label_font=LABEL,
        colours=[{"cls": kind_class(k), "colour": c} for k, c in KIND_COLOURS.items()],
        verifications=[verification(b, measured[b]) for b in sorted(measured)],
        totals={"arena": num(data["arena_bytes"]), "weights": num(data["weight_bytes"]),
                "macs": num(data["macs"]),
                "io": num(sum(data["io_bytes"]["inputs"]) + sum(data["io_bytes"]["outputs"]))})
