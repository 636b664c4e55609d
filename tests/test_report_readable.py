"""report.html reads without hovering (issue 32 items 1 and 5), checked in headless Chromium on the
KWS, VWW (streamed) and keyword (front end) bundles: axis titles with units, buffer names on the
blocks or in the key, a legend entry for every colour, no two labels overlapping, chart text of a
readable size on a page the charts fill, free views listed, and the one code figure equal in the
summary, report.json and report.html. The page itself stays script-free: the geometry comes from
a test-only copy with a measuring script appended (MEASURE), its DOM dumped by --dump-dom."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from emitter.cli import main
from tests.harness.bundles import shared_model
from tests.test_report_html import BROWSER, browser, console_messages, needs_browser

KWS = shared_model("mlperf_kws_dscnn")
VWW = shared_model("mlperf_vww_mobilenetv1")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KEYWORD = EXAMPLES / "keyword_audio"
DIGITS = EXAMPLES / "digits_cnn_int8.onnx"
WINDOW = 1400

MEASURE = """<script>
(function () {
  const out = {texts: [], svgs: {}, body: document.body.getBoundingClientRect().width};
  for (const t of document.querySelectorAll('svg.chart text')) {
    const r = t.getBoundingClientRect();
    const svg = t.ownerSVGElement;
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    out.texts.push({svg: svg.id, cls: t.getAttribute('class') || '', text: t.textContent,
                    box: [r.left, r.top, r.right, r.bottom],
                    px: parseFloat(getComputedStyle(t).fontSize) * scale});
  }
  for (const s of document.querySelectorAll('svg.chart')) {
    const r = s.getBoundingClientRect();
    out.svgs[s.id] = [r.left, r.top, r.right, r.bottom];
  }
  const pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def measure(page: Path, tmp: Path) -> dict:
    """The rendered geometry of every chart text, from a measuring copy of `page` (the page itself
    has no script; the copy is this test's)."""
    html = page.read_text()
    assert "<script" not in html
    copy = tmp / "measure.html"
    copy.write_text(html.replace("</body>", MEASURE + "\n</body>"))
    res = browser(copy, "--dump-dom", f"--window-size={WINDOW},1000")
    assert console_messages(res.stderr) == []
    m = re.search(r'<pre id="measured">(.*?)</pre>', res.stdout, re.S)
    assert m, "the measuring script did not run"
    return json.loads(m.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


def emit(out: Path, model: Path, *extra: str, quiet: bool = False) -> list[str]:
    args = [str(model), "--board=cortex-m7", "--backend=portable", "-o", str(out), *extra]
    assert main(args + (["--quiet"] if quiet else [])) == 0
    return []


BUNDLES = {
    "kws": (KWS, ()),
    "vww_streamed": (VWW, ("--memory", "stream")),
    "keyword_frontend": (KEYWORD / "keyword_int8.onnx", ("--frontend", str(KEYWORD / "frontend.toml"))),
}


@pytest.fixture(scope="module", params=sorted(BUNDLES))
def bundle(request, tmp_path_factory):
    model, extra = BUNDLES[request.param]
    if not model.is_file():
        pytest.skip(f"model {model} is absent")
    if request.param == "keyword_frontend":
        pytest.importorskip("cmsisdsp")
    out = tmp_path_factory.mktemp(request.param) / "b"
    emit(out, model, *extra, quiet=True)
    return request.param, out


def code_in_summary(text: str) -> int:
    m = re.search(r"^flash: weights and parameters [\d,]+ bytes \+ code ([\d,]+) bytes", text, re.M)
    assert m, text
    return int(m.group(1).replace(",", ""))


def code_in_html(html: str) -> tuple[int, str]:
    m = re.search(r'id="code-card" data-bytes="([\d,]+)" data-source="(\w+)"', html)
    assert m
    return int(m.group(1).replace(",", "")), m.group(2)


@needs_browser
def test_labels_titles_legend_and_sizes(bundle, tmp_path):
    which, out = bundle
    page = out / "report.html"
    data = json.loads((out / "report.json").read_text())
    html = page.read_text()
    m = measure(page, tmp_path)
    texts = m["texts"]
    mem = [t for t in texts if t["svg"] == "memory-plan"]
    words = {t["text"] for t in mem}
    # axis titles with units
    assert "arena offset (bytes)" in words and "layer (execution step)" in words
    # every buffer: its name on its block, or its number on it / a row of the key
    key_refs = set(re.findall(r'<tr data-ref="(\d+)">', html))
    labels = {t["text"] for t in mem if "buf-label" in t["cls"]}
    assert labels, "no buffer name drawn on any block"
    for i, b in enumerate(data["memory"]["buffers"], 1):
        from emitter.report.html import display_name

        assert display_name(b["name"]) in labels or str(i) in key_refs, b["name"]
    assert any(len(t) > 3 for t in labels)  # names, not only numbers
    # a legend entry for every colour the chart uses
    legend = set(re.findall(r'data-colour="([\w-]+)"', html))
    used = {c for c in re.findall(r'<rect class="buf (kind-[\w-]+)"', html)}
    assert used <= legend and {"peak", "live", "arena", "lb"} <= legend
    if data["memory"]["overlaps"] and any(o["bytes"] for o in data["memory"]["overlaps"]):
        assert "band" in legend
    # no two labels overlap (rendered boxes, every chart)
    for svg in {t["svg"] for t in texts}:
        boxes = [t for t in texts if t["svg"] == svg and t["text"].strip()]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                ax0, ay0, ax1, ay1 = a["box"]
                bx0, by0, bx1, by1 = b["box"]
                assert ax1 <= bx0 or bx1 <= ax0 or ay1 <= by0 or by1 <= ay0, (svg, a, b)
    # readable sizes on a page the charts fill
    assert min(t["px"] for t in mem if "buf-label" not in t["cls"]) >= 14
    assert min(t["px"] for t in mem) >= 12
    left, _, right, _ = m["svgs"]["memory-plan"]
    assert right - left >= 0.9 * m["body"] and m["body"] >= 0.9 * (WINDOW - 48)
    # the numbers are report.json's
    assert f"arena {data['arena_bytes']:,} B" in words
    floor = data["memory"]["floor_bytes"]
    assert any(t.endswith(f" {floor:,} B") and t.startswith(("floor", "lower bound")) for t in words)
    # free views listed as views
    views = data["views"]
    rows = re.findall(r'<tr data-index="(\d+)"( class="view")?>', html)
    assert sorted(int(i) for i, _ in rows) == sorted([lay["index"] for lay in data["layers"]]
                                                     + [v["index"] for v in views])
    assert {int(i) for i, v in rows if v} == {v["index"] for v in views}
    if which == "keyword_frontend" or views:
        assert "free view" in html


@needs_browser
def test_screenshot_is_looked_at(bundle, tmp_path):
    """The page renders at a 1400 px window (the pictures were looked at when this was written)."""
    which, out = bundle
    shot = tmp_path / f"{which}.png"
    res = browser(out / "report.html", "--hide-scrollbars", f"--window-size={WINDOW},1400", f"--screenshot={shot}")
    assert console_messages(res.stderr) == [] and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("which", ["digits", "kws", "keyword_frontend"])
def test_one_code_figure_before_verify(tmp_path, capsys, which):
    """Summary, report.json and report.html state the same code figure, and its parts add up to the estimate."""
    model, extra = {"digits": (DIGITS, ()), **BUNDLES}[which]
    if not model.is_file():
        pytest.skip(f"model {model} is absent")
    if which == "keyword_frontend":
        pytest.importorskip("cmsisdsp")
    out = tmp_path / "b"
    capsys.readouterr()
    emit(out, model, *extra)
    said = code_in_summary(capsys.readouterr().out)
    data = json.loads((out / "report.json").read_text())
    est = data["code_estimate"]
    assert data["code"]["bytes"] == said == est["bytes"] and data["code"]["source"] == "estimate"
    assert sum(est["kernels"].values()) + est["support"] + est["other"] + est["schedule"] == est["bytes"]
    html = (out / "report.html").read_text()
    assert code_in_html(html) == (said, "estimate")
    assert f"<b>{data['weight_bytes'] + said:,}</b><span>flash: weights + code (estimate)" in html
    bars = [int(v) for v in re.findall(r'<rect class="bar" data-bytes="(\d+)"', html.split('id="code-chart"')[1])]
    assert sum(bars) == said


@pytest.mark.qemu
@pytest.mark.parametrize("which", ["digits", "kws", "keyword_frontend"])
def test_one_code_figure_after_verify(tmp_path, capsys, which):
    """After --verify the measured figure wins everywhere, and the page says it is measured."""
    from emitter.target import missing_tools

    if missing := missing_tools():
        pytest.skip("missing tools: " + "; ".join(missing))
    model, extra = {"digits": (DIGITS, ()), **BUNDLES}[which]
    if not model.is_file():
        pytest.skip(f"model {model} is absent")
    if which == "keyword_frontend":
        pytest.importorskip("cmsisdsp")
    out = tmp_path / "b"
    capsys.readouterr()
    emit(out, model, *extra, "--verify", "--samples", "1")
    text = capsys.readouterr().out
    data = json.loads((out / "report.json").read_text())
    measured = data["measured"]["cortex-m7"]["code_bytes"]
    last = [line for line in text.splitlines() if line.startswith("flash: ")][-1]
    assert code_in_summary(last) == measured and "measured by --verify" in last
    assert data["code"] == data["code"] | {"bytes": measured, "source": "measured", "board": "cortex-m7"}
    html = (out / "report.html").read_text()
    assert code_in_html(html) == (measured, "measured")
    assert f"<b>{data['weight_bytes'] + measured:,}</b><span>flash: weights + code (measured on cortex-m7" in html
    assert f"code (measured)</td><td>{measured:,} bytes" in html
    assert "samples</td><td>1</td>" in html and "input source</td><td>" in html


def test_browser_is_there_or_the_tests_say_so():
    assert BROWSER is not None or needs_browser.kwargs["reason"]
