"""report.html (issue 15, item 10): the bundle's report.json drawn as one self-contained page.

In a real headless browser (Debian's `chromium`; scripts/setup.sh installs it, so CI runs these): the
page loads with no console message, and the DOM it builds has one memory-plan rectangle per planned
buffer at the planner's offset, bytes and live range -- drawn at that offset --, the peak layer and
the lower bound. Without chromium those tests skip and say so; the rest (report.json's "memory",
the verification figures, the code-size table) need no browser.
"""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import onnx
import pytest

from emitter.boards import load_board
from emitter.cli import main
from emitter.compiler import compile_model
from emitter.plan.arena import Plan
from tests.harness.bundles import shared_model
from tests.harness.cmsis import CMSIS_NN
from tests.models.tiny import tiny_qdq_conv

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no `chromium` on PATH (scripts/setup.sh installs it)")
KWS = shared_model("mlperf_kws_dscnn")


def browser(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless chromium on the file `page` (a fresh profile), its console messages logged to stderr."""
    assert BROWSER is not None
    with tempfile.TemporaryDirectory(prefix="mcugen-chromium-") as profile:
        return subprocess.run([BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr",
                               "--v=0", f"--user-data-dir={profile}", *args, page.as_uri()],
                              capture_output=True, text=True, timeout=120, check=True)


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


class Elements(HTMLParser):
    """Every element of the dumped DOM with its attributes, and the text of its <title> child."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []
        self._title: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and self.found:
            self._title = self.found[-1][1]
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        if self._title is not None:
            self._title["<title>"] = self._title.get("<title>", "") + data

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._title = None

    def by_id(self, ident: str) -> dict[str, str]:
        hits = [a for _, a in self.found if a.get("id") == ident]
        assert len(hits) == 1, f"{len(hits)} elements with id {ident}"
        return hits[0]


def dom(page: Path) -> Elements:
    res = browser(page, "--dump-dom")
    assert console_messages(res.stderr) == [], "console messages while loading the page"
    parsed = Elements()
    parsed.feed(res.stdout)
    return parsed


def live_peak(plan: Plan, steps: int) -> tuple[int, int]:
    """(first step with the most live bytes, those bytes), from the plan itself."""
    live = [sum(b.size for b in plan.buffers if b.first <= s <= b.last) for s in range(steps)]
    return live.index(max(live)), max(live)


def emit(model: Path, out: Path, *extra: str) -> Path:
    assert main([str(model), "--board=cortex-m7", "--backend=portable", "-o", str(out), "--quiet", *extra]) == 0
    return out / "report.html"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "tiny_qdq_conv.onnx"
    onnx.save(tiny_qdq_conv(), path)
    return path


def models(tiny: Path) -> list[Path]:
    return [tiny, KWS] if KWS.is_file() else [tiny]


@needs_browser
def test_console_errors_are_seen(tmp_path):
    """The check below can fail: a page that logs an error or throws one is caught. (A file that fails
    to load is not logged: report.html is checked to load none, see below.)"""
    page = tmp_path / "bad.html"
    page.write_text('<html><body><script>console.error("boom"); undefinedFn()</script></body></html>')
    msgs = console_messages(browser(page, "--dump-dom").stderr)
    assert any("boom" in m for m in msgs) and any("undefinedFn is not defined" in m for m in msgs), msgs


@needs_browser
@pytest.mark.parametrize("which", ["tiny_qdq_conv", "mlperf_kws_dscnn"])
def test_memory_plan_is_drawn_at_the_planner_offsets(tmp_path, tiny, which):
    model = tiny if which == "tiny_qdq_conv" else KWS
    if not model.is_file():
        pytest.skip(f"shared model {model} is absent")
    page = emit(model, tmp_path / "b", "--memory", "layer")  # whole layers: one rectangle per plan buffer
    c = compile_model(model, board=load_board("cortex-m7"), backend="portable", memory="layer")
    steps = len(c.graph.nodes)
    html = page.read_text()
    for external in ("<script", "<link", "<img", "<iframe", "<object", "@import", "url(", "src=", "href=",
                     "https://"):
        assert external not in html, f"report.html is not self-contained: {external}"
    assert html.replace('xmlns="http://www.w3.org/2000/svg"', "").count("http://") == 0
    d = dom(page)
    rects = [a for tag, a in d.found if tag == "rect" and "data-offset" in a]
    want = sorted((b.name, b.offset, b.size, b.first, b.last) for b in c.plan.buffers)
    got = sorted((a["data-name"], int(a["data-offset"]), int(a["data-bytes"]), int(a["data-first"]),
                  int(a["data-last"])) for a in rects)
    assert got == want and len(rects) == len(c.plan.buffers) > 0
    # each rectangle is drawn where its data says: bottom edge at its offset, left edge at `first`
    plot = d.by_id("memory-plan")
    arena_y, bottom = float(d.by_id("arena")["y1"]), float(d.by_id("x-axis")["y1"])
    scale = (bottom - arena_y) / c.plan.arena_size
    x0, step_w = float(d.by_id("x-axis")["x1"]), (float(d.by_id("x-axis")["x2"])
                                                        - float(d.by_id("x-axis")["x1"])) / steps
    for a in rects:
        assert abs(float(a["y"]) + float(a["height"]) - (bottom - int(a["data-offset"]) * scale)) < 0.02 or \
            float(a["height"]) == 0.5, a
        assert abs(float(a["x"]) - (x0 + int(a["data-first"]) * step_w)) < 0.02, a
        assert a["data-name"] in a["<title>"] and f"{int(a['data-bytes']):,} bytes" in a["<title>"]
    assert plot["viewbox"] == f"0 0 {plot['width']} {plot['height']}"
    step, live = live_peak(c.plan, steps)
    peak = d.by_id("peak")
    assert int(peak["data-step"]) == step and f"{live:,} bytes live" in peak["<title>"]
    assert live == c.plan.lower_bound  # the peak is where the lower bound comes from
    assert abs(float(d.by_id("lower-bound")["y1"]) - (bottom - c.plan.lower_bound * scale)) < 0.02
    assert f"arena {c.plan.arena_size:,} B" in html
    rows = [a for tag, a in d.found if tag == "tr" and "data-index" in a]
    assert len([a for a in rows if a.get("class") != "view"]) == sum(1 for p in c.prepared if p.kernel)
    assert len([a for a in rows if a.get("class") == "view"]) == sum(1 for p in c.prepared if not p.kernel)


@needs_browser
def test_screenshot(tmp_path, tiny):
    """The page renders to a picture of the width asked for (as docs/report_kws.png was made)."""
    page = emit(tiny, tmp_path / "b")
    shot = tmp_path / "shot.png"
    res = browser(page, "--hide-scrollbars", "--window-size=1100,900", f"--screenshot={shot}")
    assert console_messages(res.stderr) == []
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1100, 900)


def test_report_json_memory_is_the_plan(tmp_path, tiny):
    page = emit(tiny, tmp_path / "b", "--memory", "layer")  # the whole-layer plan's record
    mem = json.loads(page.with_name("report.json").read_text())["memory"]
    c = compile_model(tiny, board=load_board("cortex-m7"), backend="portable", memory="layer")
    steps = len(c.graph.nodes)
    live = [sum(b.size for b in c.plan.buffers if b.first <= s <= b.last) for s in range(steps)]
    assert mem == {"kind": "layer", "arena_bytes": c.plan.arena_size, "liveness_lower_bound_bytes": c.plan.lower_bound,
                   "floor_bytes": c.plan.lower_bound, "steps": steps, "in_use_bytes": live, "floor_step_bytes": live,
                   "buffers": [{"name": b.name, "offset": b.offset, "bytes": b.size, "first": b.first,
                                "last": b.last, "kind": "scratch" if b.name.endswith("#scratch") else "tensor"}
                               for b in c.plan.buffers],
                   "overlaps": []}
    assert {"tensor", "scratch"} == {b["kind"] for b in mem["buffers"]}


def test_other_buffer_kinds_are_drawn(tmp_path, tiny):
    """A planner may add kinds and keys (e.g. a ring buffer): drawn all the same, in their colour."""
    from emitter.report.html import report_html

    page = emit(tiny, tmp_path / "b")
    data = json.loads(page.with_name("report.json").read_text())
    data["memory"]["buffers"][0] |= {"kind": "ring", "band_rows": 3}
    data["memory"]["buffers"][1] |= {"kind": "new kind"}
    html = report_html(data)
    assert html.count("data-offset=") == len(data["memory"]["buffers"])
    assert 'class="buf kind-ring"' in html and "band_rows 3" in html and 'class="buf kind-new-kind"' in html


def test_verification_is_shown_after_verify(tmp_path, tiny):
    """--verify adds its results to report.json, and report.html shows them."""
    page = emit(tiny, tmp_path / "b", "--verify", "--no-qemu", "--samples", "2")
    html = page.read_text()
    assert "Not verified yet" not in html and 'id="verify-cortex-m7"' in html
    assert "host gcc vs golden</td><td class=\"ok\">bit-exact: 0/" in html
    fig = json.loads(page.with_name("report.json").read_text())["measured"]["cortex-m7"]
    assert fig["checks"][0] == {"what": "host gcc vs golden", "check": "host_vs_golden", "ok": True, "differ": 0,
                                "elements": fig["checks"][0]["elements"], "max_diff": 0, "first_differences": []}


@pytest.mark.qemu
def test_profile_shows_instructions_per_layer(tmp_path, tiny):
    from emitter.target import missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip("missing tools: " + "; ".join(missing))
    out = tmp_path / "b"
    assert main([str(tiny), "--board=cortex-m4", "--backend=portable", "-o", str(out), "--quiet", "--verify",
                 "--profile", "--samples", "1"]) == 0
    layers = json.loads((out / "report.json").read_text())["measured"]["cortex-m4"]["layers"]
    html = (out / "report.html").read_text()
    assert "<th>instructions (cortex-m4)</th>" in html and "QEMU cortex-m4 vs golden" in html
    for lay in layers:
        assert f'<td class="n instr">{lay["instructions"]:,}</td>' in html


def test_bundle_is_deterministic_with_the_report(tmp_path, tiny):
    a, b = emit(tiny, tmp_path / "a"), emit(tiny, tmp_path / "b")
    assert a.read_bytes() == b.read_bytes()


def test_code_estimate_reads_the_one_code_size_table(tiny):
    """The report's code per kernel is the flash budget's table (emitter/report/codesize.py): the sum of
    each kernel's shipped files on the board's core (tests/test_code_size_estimate.py keeps it current)."""
    from emitter.report.codesize import table
    from emitter.report.data import code_estimate

    files = table()["cores"]["cortex-m7"]["files"]
    shipped = tuple(f"mcu_runtime/{f}" for f in files if f.startswith(("kernels/mcu_conv2d_s8", "support/mcu_dot"))
                    and not f.endswith(("_ref.c", "_mve.c")))  # what an M7 bundle ships for it
    est = code_estimate("stm32f746g-disco", ["mcu_conv2d_s8"], sources=shipped, calls=2)["code_estimate"]
    want = sum(v for f, v in files.items() if f.startswith("kernels/mcu_conv2d_s8")
               and not f.endswith(("_ref.c", "_mve.c")))
    assert est["kernels"] == {"mcu_conv2d_s8": want} and want > 0
    assert est["support"] == sum(v for f, v in files.items() if f.startswith("support/mcu_dot"))
    assert est["schedule"] == 2 * table()["cores"]["cortex-m7"]["per_kernel_call"]
    assert est["bytes"] == want + est["support"] + est["schedule"] + est["other"]
    assert code_estimate("host", ["mcu_conv2d_s8"]) == {}


@pytest.mark.skipif(not CMSIS_NN, reason="CMSIS_NN_PATH is not set (the user's CMSIS-NN)")
def test_cmsis_nn_layers_say_which_backend_and_why(tmp_path, tiny, cmsis_env):
    """A cmsis-nn bundle: each layer's row names its backend; a portable layer gives the summary's reason."""
    out = tmp_path / "b"
    assert main([str(tiny), "--board=cortex-m4", "--backend=cmsis-nn", "-o", str(out), "--quiet"]) == 0
    data = json.loads((out / "report.json").read_text())
    html = (out / "report.html").read_text()
    why = {p["index"]: p["why"] for p in data["portable_layers"]}
    assert why and len(why) < len(data["layers"])  # both kinds of row are checked
    for lay in data["layers"]:
        row = html.split(f'<tr data-index="{lay["index"]}">', 1)[1].split("</tr>", 1)[0]
        if lay["index"] in why:
            assert f'portable <span class="why">({why[lay["index"]]})</span>' in row
        elif not lay["kernel"].startswith("mcu_"):
            assert '<td class="backend">CMSIS-NN</td>' in row
    assert "CMSIS-NN functions called" in html


def in_use(plan: Plan, steps: int) -> list[int]:
    """Per step, the bytes of the arena that some live buffer of the plan occupies (counted once)."""
    return [len({i for b in plan.buffers if b.first <= s <= b.last for i in range(b.offset, b.offset + b.size)})
            for s in range(steps)]


@pytest.fixture(scope="module", params=["stream", "overlap"])
def kws_plan(request, tmp_path_factory):
    """KWS with a streamed or an overlapped plan: its report.html and the compiled model."""
    if not KWS.is_file():
        pytest.skip(f"shared model {KWS} is absent")
    page = emit(KWS, tmp_path_factory.mktemp(request.param), "--memory", request.param)
    c = compile_model(KWS, board=load_board("cortex-m7"), backend="portable", memory=request.param)
    assert c.plan.schedule.kind == request.param
    return request.param, page, c


def test_streamed_and_overlapped_plans_are_reported_as_they_are(kws_plan):
    """issue 22: a streamed plan's report said "liveness lower bound (gap -62)" and listed 8,000-byte
    outputs at one offset for layers whose outputs are rings. Now: the bytes in use per step are the
    plan's (shared bytes once), the floor (the least RAM this kind of plan can reach with its
    buffers) is at most that at every step and the arena is never below it; rings and bands are
    named; a ring layer's row gives its ring, not a whole output."""
    kind, page, c = kws_plan
    steps = len(c.graph.nodes)
    data = json.loads(page.with_name("report.json").read_text())
    mem = data["memory"]
    assert c.plan.lower_bound > c.plan.arena_size  # the old "gap" was negative for this plan
    assert mem["in_use_bytes"] == in_use(c.plan, steps)
    assert all(f <= u for f, u in zip(mem["floor_step_bytes"], mem["in_use_bytes"], strict=True))
    assert mem["floor_bytes"] == max(mem["floor_step_bytes"]) <= max(mem["in_use_bytes"]) <= c.plan.arena_size
    assert data["plan_floor_bytes"] == mem["floor_bytes"]
    assert data["arena_gap_bytes"] == c.plan.arena_size - mem["floor_bytes"] >= 0
    for o in mem["overlaps"]:
        assert 0 <= o["bytes"] <= o["allowed_bytes"]
    html = page.read_text()
    assert re.search(r"gap -|gap &minus;|liveness lower bound \(gap", html) is None
    gap = c.plan.arena_size - mem["floor_bytes"]
    assert f"least RAM of this {kind} plan (gap {gap:,})" in html
    assert f"The floor, {mem['floor_bytes']:,} bytes, is the least RAM this kind of plan ({kind})" in html
    rings = [b for b in c.plan.buffers if b.kind == "ring" and not b.of.endswith("#acc")]
    by_node = {node.outputs[0]: k for k, node in enumerate(c.graph.nodes)}
    if kind == "stream":
        assert rings and f"{len(rings)} rings ({sum(b.size for b in rings):,} bytes): a streamed layer" in html
        for b in rings:  # the layer's row: its ring, never its whole output at one offset
            k = by_node[b.of]
            row = html.split(f'<tr data-index="{k}">', 1)[1].split("</tr>", 1)[0]
            whole = c.graph.t(b.of).nbytes
            assert f'<td class="n">ring at {b.offset:,}</td>' in row, row
            assert f"{b.size:,} of {whole:,} (ring of " in row and "never whole" in row, row
            assert f'<td class="n">{whole:,}</td>' not in row
    else:
        # outputs over their input: band by band (a layer by rows alone), or in one whole call (KWS's
        # depthwise and pointwise convolutions on cortex-m7, their twins' in_place)
        bands = [k for k, m in c.plan.modes.items() if m in ("down", "up")]
        assert not bands or f"{len(bands)} layers run band by band and write their output over the input" in html
        over = [o for o in mem["overlaps"] if o["bytes"]]
        assert over and all(o["mode"] in ("down", "up", "in place") for o in over)
        for k in bands:
            row = html.split(f'<tr data-index="{k}">', 1)[1].split("</tr>", 1)[0]
            assert '<td class="runs">band by band, ' in row and "over its input</td>" in row, row
        whole = [k for k, node in enumerate(c.graph.nodes) if k in c.plan.schedule.exact
                 and any(o["output"] == c.plan.root.get(node.outputs[0]) for o in over)]
        assert whole or bands
        for k in whole:
            row = html.split(f'<tr data-index="{k}">', 1)[1].split("</tr>", 1)[0]
            assert '<td class="runs">in place over an operand</td>' in row, row


@needs_browser
def test_streamed_and_overlapped_plans_are_drawn_as_they_are(kws_plan, tmp_path):
    """In the browser: one column per step whose live bytes are the plan's, the floor line where
    the floor is, a hatched band for every output written over its input, rings in their colour;
    and the page renders (the screenshot was looked at when this was written)."""
    kind, page, c = kws_plan
    steps = len(c.graph.nodes)
    mem = json.loads(page.with_name("report.json").read_text())["memory"]
    d = dom(page)
    cols = sorted((int(a["data-step"]), int(a["data-live"]), int(a["data-floor"]))
                  for tag, a in d.found if tag == "rect" and a.get("class") == "step")
    assert [s for s, _, _ in cols] == list(range(steps))
    assert [v for _, v, _ in cols] == in_use(c.plan, steps)
    assert all(f <= v for _, v, f in cols)
    for s, v, _ in cols:
        title = next(a["<title>"] for tag, a in d.found if tag == "rect" and a.get("data-step") == str(s)
                     and a.get("class") == "step")
        assert f"{v:,} bytes in use" in title
    arena_y, bottom = float(d.by_id("arena")["y1"]), float(d.by_id("x-axis")["y1"])
    scale = (bottom - arena_y) / c.plan.arena_size
    assert abs(float(d.by_id("lower-bound")["y1"]) - (bottom - mem["floor_bytes"] * scale)) < 0.02
    assert float(d.by_id("lower-bound")["y1"]) >= arena_y  # the floor is never above the arena
    peak = d.by_id("peak")
    live = in_use(c.plan, steps)
    assert int(peak["data-step"]) == live.index(max(live)) and f"{max(live):,} bytes live" in peak["<title>"]
    bands = [a for tag, a in d.found if tag == "rect" and a.get("class") == "band" and "data-input" in a]
    assert len(bands) == sum(1 for o in mem["overlaps"] if o["bytes"]) > 0
    for a in bands:
        assert f"{int(a['data-bytes']):,} bytes hold both, counted once" in a["<title>"]
    ring_rects = [a for tag, a in d.found if tag == "rect" and a.get("data-kind") == "ring"]
    assert len(ring_rects) == sum(1 for b in c.plan.buffers if b.kind == "ring")
    for a in ring_rects:
        if not a["data-name"].endswith("#acc"):
            assert "(ring)" in a["<title>"] and "never exists whole" in a["<title>"]
    shot = tmp_path / f"{kind}.png"
    res = browser(page, "--hide-scrollbars", "--window-size=1100,1250", f"--screenshot={shot}")
    assert console_messages(res.stderr) == []
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1100, 1250)
