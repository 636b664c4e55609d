"""Machine-readable verification results: `verify --junit FILE` and `verify --json` (docs/ci.md).

One test case per board and check (verify.CHECKS: host vs golden, QEMU vs golden, QEMU vs host,
golden and host vs the reference outputs of --inputs, front end). A case is
  passed   the check ran and was bit-exact;
  failed   it found a difference: the message gives the differing elements, the first few of
           them (sample, output, index, got, want) and max |diff|;
  skipped  it did not run (--no-qemu, no reference outputs in --inputs, no --frontend, ...);
  error    the board's build or run stopped before the check (the error's message).
The board's measured figures (instructions per inference, code bytes, stack bytes) are the
properties of its QEMU cases and of its suite. --json prints the same as one JSON document.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emitter import __version__
from emitter.errors import McugenError, VerifyError, exit_status
from emitter.verify.run import CHECKS

QEMU_CHECKS = ("qemu_vs_golden", "qemu_vs_host")
REFERENCE_CHECKS = ("golden_vs_reference", "host_vs_reference")


@dataclass
class BoardResult:
    """What one board's verification produced: its figures (report.json measured.<board>), why
    checks were not run, and the error that stopped it (None: it ran to the end)."""

    board: str
    figures: dict = field(default_factory=dict)
    qemu_skipped: str | None = None  # why the QEMU checks did not run
    frontend_asked: bool = False
    error: McugenError | None = None
    error_stage: str = "verify"  # "verify" (build/run/compare) or "frontend"


def _properties(fig: dict) -> dict[str, int | str]:
    props: dict[str, int | str] = {}
    counts = sorted(fig.get("instructions") or [])
    if counts:
        props["instructions"] = counts[len(counts) // 2]  # the median per inference
        props["instructions_range"] = f"{counts[0]}..{counts[-1]}"
    for key in ("code_bytes", "stack_bytes", "flash_model", "ram_model"):
        if fig.get(key) is not None:
            props[key] = fig[key]
    return props


def _failure_text(c: dict) -> str:
    first = "; ".join(f"sample {d['sample']} output {d['output']} [{d['index']}]: got {d['got']}, want {d['want']}"
                      for d in c.get("first_differences", []))
    return (f"{c['differ']}/{c['elements']} elements differ, max |diff| {c['max_diff']}"
            + (f"; first: {first}" if first else ""))


def cases(r: BoardResult) -> list[dict[str, Any]]:
    """The board's test cases, one per check of verify.CHECKS in that order (frontend only with
    --frontend)."""
    ran = {c["check"]: c for c in r.figures.get("checks", [])}
    props = _properties(r.figures)
    out = []
    for check, title in CHECKS.items():
        if check == "frontend" and not r.frontend_asked:
            continue  # a network without a front end: no such check
        case: dict[str, Any] = {"board": r.board, "check": check, "name": f"{r.board}: {title}",
                                "status": "passed", "message": "", "properties": {}}
        c = ran.get(check)
        if c is not None:
            case.update(differ=c["differ"], elements=c["elements"], max_diff=c["max_diff"],
                        first_differences=c.get("first_differences", []))
            if not c["ok"]:
                case.update(status="failed", message=_failure_text(c))
            else:
                case["message"] = f"bit-exact: 0/{c['elements']} elements differ"
            if check in QEMU_CHECKS:
                case["properties"] = props
        elif check == "frontend" and r.frontend_asked:
            if r.error is not None and r.error_stage == "frontend":
                case.update(status="failed", message=str(r.error))
            elif "frontend" in r.figures:
                bad = [where for where, f in r.figures["frontend"].items() if not f.get("ok")]
                case.update(status="failed" if bad else "passed",
                            message=f"differs on {', '.join(bad)}" if bad else "features and outputs match")
            else:
                case.update(status="skipped", message="not run: the network's checks failed first")
        elif r.error is not None and r.error_stage == "verify":
            status = "failed" if isinstance(r.error, VerifyError) else "error"
            case.update(status=status, message=f"not reached: {r.error}")
        elif check in QEMU_CHECKS:
            case.update(status="skipped", message=r.qemu_skipped or "QEMU did not run")
        elif check in REFERENCE_CHECKS:
            case.update(status="skipped", message="--inputs holds no reference outputs (tflm_outputs or expected)")
        out.append(case)
    return out


def document(model: str, results: list[BoardResult], status: int) -> dict[str, Any]:
    """The --json document (the JUnit file holds the same)."""
    suites = []
    for r in results:
        cs = cases(r)
        suites.append({"board": r.board, "ok": all(c["status"] in ("passed", "skipped") for c in cs),
                       "properties": _properties(r.figures), "cases": cs})
    return {"mcugen_version": __version__, "model": Path(model).name, "exit_code": status,
            "ok": status == 0, "suites": suites}


def overall_status(results: list[BoardResult]) -> int:
    """The exit code the results call for: the first board error's (errors.exit_status), else 0."""
    for r in results:
        if r.error is not None:
            status = exit_status(r.error)
            return 1 if status is None else status
    return 0


def junit_xml(doc: dict[str, Any]) -> str:
    """The document as JUnit XML: <testsuites> with one <testsuite> per board, one <testcase> per
    check; <failure>, <error> or <skipped> carry the message; figures are <properties>."""
    root = ET.Element("testsuites", name=f"mcugen verify {doc['model']}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in doc["suites"]:
        cs = suite["cases"]
        counts = {"tests": len(cs), "failures": sum(c["status"] == "failed" for c in cs),
                  "errors": sum(c["status"] == "error" for c in cs),
                  "skipped": sum(c["status"] == "skipped" for c in cs)}
        for k, v in counts.items():
            totals[k] += v
        el = ET.SubElement(root, "testsuite", name=f"mcugen verify {suite['board']}")
        for k, v in counts.items():
            el.set(k, str(v))
        _props(el, suite["properties"])
        for c in cs:
            tc = ET.SubElement(el, "testcase", classname=f"mcugen.{suite['board']}", name=c["check"])
            _props(tc, c["properties"])
            if c["status"] in ("failed", "error", "skipped"):
                tag = {"failed": "failure", "error": "error", "skipped": "skipped"}[c["status"]]
                sub = ET.SubElement(tc, tag, message=c["message"].splitlines()[0] if c["message"] else "")
                if c["status"] != "skipped":
                    sub.text = c["message"]
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _props(el: ET.Element, props: dict[str, int | str]) -> None:
    if props:
        ps = ET.SubElement(el, "properties")
        for k, v in props.items():
            ET.SubElement(ps, "property", name=k, value=str(v))
