"""The user's path (issue 22, item 3): the documents' shell blocks, and a fresh install to run them in.

Documents: README.md, examples/README.md and docs/*.md (DOCS). A *block* is a 4-space-indented code
block (after a blank line, an HTML comment or the start of the file) or a fenced one whose language
is a shell's (```sh, ```bash, ```console, ```shell) or none; fenced blocks in another language
(```c, ```toml) are not commands and are left out. In a block, lines starting with `$ ` are
commands and the lines after one are its quoted output (a `$ ` block); otherwise every line is a
command, except `# ` lines, which quote the output of the command above them (in a fenced block
they are comments); a line ending in a backslash continues on the next.

Every block is either run by tests/test_user_path.py or marked by an HTML comment directly above
it (the line above the block, or above the blank line before it); markers travel with their block:

    <!-- user-path: synopsis -->                     a usage form (brackets, placeholders), not runnable
    <!-- user-path: not run: REASON -->              cannot run in CI (needs torch, regenerates figures, ...)
    <!-- user-path: not a command: REASON -->        an indented block that is C, or quoted output
    <!-- user-path: full tier: REASON -->            run, but only in the full tier (-m userpath_full)
    <!-- user-path: run as `COMMAND`: REASON -->     run, as COMMAND instead of its text (a setup script's job)

An unmarked block must parse as runnable (each command starts with a known program, a VAR=value
assignment or a relative path, and holds no synopsis brackets or placeholders), else the test
names its file:line.

The install: `build_install(root)` copies the checkout's files (git ls-files: what a clone holds,
uncommitted changes included), builds a wheel with `pip wheel --no-deps` there, makes a fresh
virtual environment (no system site packages), installs the wheel with its dependencies at the
versions in scripts/constraints.txt (the newest with MCUGEN_NEWEST=1, as scripts/setup.sh), and
sets up a folder outside the repository holding a copy of examples/, where the blocks run.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

MARKER = re.compile(r"^<!-- user-path: (?P<body>.*?) -->\s*$")
MARKER_ANY = "<!-- user-path:"
KINDS = ("synopsis", "not run", "not a command", "full tier", "run as")
SHELL_LANGS = ("", "sh", "bash", "console", "shell", "shell-session")
# programs a documented command may start with
PROGRAMS = frozenset({"mcugen", "python", "python3", "bash", "sh", "make", "cmake", "pip", "pip3", "scons", "git",
                      "cd", "export", "env", "ls", "cat", "arm-none-eabi-gcc", "arm-none-eabi-size", "qemu-system-arm",
                      "gcc", "cp", "mkdir", "rm", "espeak-ng", "ctest"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SYNOPSIS_SIGNS = (
    (re.compile(r"(^|\s)\[[^\]]*\]"), "an optional part in [brackets]"),
    (re.compile(r"\.\.\."), "'...'"),
    (re.compile(r"<[^>]+>"), "a <placeholder>"),
    (re.compile(r"(^|[\s=/])[A-Z][A-Z0-9_]*\.(onnx|npz|toml|wav)\b"), "an UPPERCASE.ext placeholder"),
    (re.compile(r"/path/to\b"), "a /path/to placeholder"),
)


def docs() -> list[Path]:
    return [REPO / "README.md", REPO / "examples" / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@dataclass
class Command:
    text: str  # as written (one line)
    output: list[str] = field(default_factory=list)  # quoted output lines under it


@dataclass
class Block:
    path: str  # relative to the repository
    line: int  # 1-based line of the block's first line
    lines: list[str]  # the block's text, unindented
    intro: str  # the paragraph right above the block (its marker left out)
    marker: str | None = None  # the marker's body, e.g. "not run: needs torch"
    marker_line: int = 0
    fenced: bool = False  # a ``` block: `#` lines are comments, not quoted output

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def kind(self) -> str | None:
        """The marker's kind (one of KINDS), or None when unmarked."""
        if self.marker is None:
            return None
        return next((k for k in KINDS if self.marker == k or self.marker.startswith(k + ":")
                     or self.marker.startswith(k + " ")), "?")

    @property
    def reason(self) -> str:
        body = self.marker or ""
        if self.kind == "run as":
            body = body.split("`", 2)[-1]
        else:
            body = body[len(self.kind or ""):]
        return body.lstrip(": ").strip()

    @property
    def run_as(self) -> str | None:
        """The command of a `run as` marker."""
        if self.kind != "run as" or self.marker is None:
            return None
        m = re.match(r"run as `([^`]+)`", self.marker)
        return m.group(1) if m else None

    def commands(self) -> list[Command]:
        """The block's commands with the output quoted under each (see the module's docstring)."""
        dollar = any(line.startswith("$ ") for line in self.lines)
        cmds: list[Command] = []
        joined: list[str] = []  # backslash continuations joined into one line
        for line in self.lines:
            if joined and joined[-1].endswith("\\"):
                joined[-1] = joined[-1][:-1].rstrip() + " " + line.strip()
            else:
                joined.append(line)
        for line in joined:
            if dollar:
                if line.startswith("$ "):
                    cmds.append(Command(line[2:].strip()))
                elif cmds:
                    cmds[-1].output.append(line)
            elif line.startswith("#"):
                if cmds and not self.fenced:
                    cmds[-1].output.append(line[1:].strip())
            elif line.strip():
                cmds.append(Command(line.strip()))
        return cmds

    def problems(self) -> list[str]:
        """Why the block is not runnable as written ([] when it is)."""
        cmds = self.commands()
        if not cmds:
            return ["no command in it"]
        why = []
        for cmd in cmds:
            words = cmd.text.split()
            while words and ASSIGNMENT.match(words[0]):
                words = words[1:]
            first = words[0] if words else ""
            if first not in PROGRAMS and "/" not in first:
                why.append(f"{cmd.text[:60]!r} does not start with a program")
                continue
            for sign, what in SYNOPSIS_SIGNS:
                if sign.search(cmd.text.split(" #")[0]):
                    why.append(f"{cmd.text[:60]!r} holds {what}")
                    break
        return why


def parse(path: Path) -> tuple[list[Block], list[int]]:
    """The candidate blocks of one document, and the line numbers of markers attached to none."""
    rel = path.relative_to(REPO).as_posix()
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    used: set[int] = set()
    k = 0

    def marker_above(start: int) -> tuple[str | None, int]:
        j = start - 1
        if j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            m = MARKER.match(lines[j].strip())
            if m:
                return m.group("body").strip(), j
        return None, -1

    def intro_above(start: int, marker_at: int) -> str:
        j = (marker_at if marker_at >= 0 else start) - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        end = j + 1
        while j >= 0 and lines[j].strip() and not lines[j].startswith("    "):
            j -= 1
        return "\n".join(lines[j + 1:end])

    while k < len(lines):
        line = lines[k]
        fence = re.match(r"^\s*(```+|~~~+)\s*([\w-]*)", line)
        if fence:
            close = fence.group(1)
            end = k + 1
            while end < len(lines) and not lines[end].strip().startswith(close):
                end += 1
            if fence.group(2).lower() in SHELL_LANGS:
                marker, at = marker_above(k)
                blocks.append(Block(rel, k + 2, lines[k + 1:end], intro_above(k, at), marker, at + 1, fenced=True))
                if at >= 0:
                    used.add(at)
            k = end + 1
            continue
        prev = lines[k - 1] if k else ""
        if line.startswith("    ") and line.strip() and (not prev.strip() or MARKER.match(prev.strip())):
            end = k
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            while not lines[end - 1].strip():
                end -= 1
            marker, at = marker_above(k)
            blocks.append(Block(rel, k + 1, [x[4:] for x in lines[k:end]], intro_above(k, at), marker, at + 1))
            if at >= 0:
                used.add(at)
            k = end
            continue
        k += 1
    orphans = [j + 1 for j, line in enumerate(lines) if MARKER_ANY in line and j not in used]
    return blocks, orphans


def all_blocks() -> list[Block]:
    out: list[Block] = []
    for path in docs():
        out += parse(path)[0]
    return out


# ---- comparing quoted output ---------------------------------------------------------------------

TOOL_LINES = ("instructions", "firmware:", "code beyond the weights")  # depend on the compiler and QEMU


def tool_versions() -> tuple[str, str]:
    """('arm-none-eabi-gcc 12.2.1', 'QEMU 7.2.22') of the tools on PATH ('' for a missing one)."""
    def out(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
        except OSError:
            return ""
    gcc = out(["arm-none-eabi-gcc", "-dumpversion"]).strip()
    qemu = out(["qemu-system-arm", "--version"]).split()
    return (f"arm-none-eabi-gcc {gcc}" if gcc else "", f"QEMU {qemu[3]}" if len(qemu) > 3 else "")


@functools.cache
def _readme_demo() -> Any:
    """scripts/readme_demo.py, which writes README's demo block (its host_neutral() rule)."""
    spec = importlib.util.spec_from_file_location("readme_demo", REPO / "scripts" / "readme_demo.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def neutral(line: str) -> str:
    """The line without the note that depends on the host CPU (readme_demo.py's host_neutral)."""
    return _readme_demo().host_neutral(line) or line


def comparable(line: str, intro: str, ort_version: str) -> bool:
    """Whether a quoted output line is compared: mcugen's own figures always; a figure of the
    compiler and QEMU (instruction counts, firmware sizes) only when the paragraph above the block
    names the versions installed here, onnxruntime's only when it names the installed one, and never
    a line about onnxruntime's optimized session (it depends on the host CPU: readme_demo.py's
    host_neutral; the accuracy line is compared without its note on that session)."""
    text = line.strip()
    if _readme_demo().host_neutral(text) is None:
        return False
    if text.startswith(TOOL_LINES):
        gcc, qemu = tool_versions()
        return bool(gcc and qemu) and gcc in intro and qemu in intro
    if "onnxruntime" in text:
        return f"onnxruntime {ort_version}" in intro
    return True


# ---- the fresh install -----------------------------------------------------------------------------

def repo_files() -> list[str]:
    """What a clone holds: tracked files and new ones that are not ignored (uncommitted changes too)."""
    res = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, check=True)
    return [f for f in res.stdout.decode().split("\0") if f and (REPO / f).is_file()]


@dataclass
class Install:
    root: Path
    venv: Path
    user: Path  # the folder outside the repository the commands run in
    wheel: Path
    log: list[str]
    pip: list[str]  # the venv's pip: its own, or the outer pip aimed at it (a venv made without ensurepip)

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def env(self, cmsis_nn: Path | None = None, cmsis_dsp: Path | None = None) -> dict[str, str]:
        """The user's environment: the venv's bin first on PATH, no PYTHONPATH into the checkout,
        CMSIS_NN_PATH only when given."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CMSIS_NN_PATH", "CMSIS_DSP_PATH",
                            "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")}
        env["PATH"] = os.pathsep.join([str(self.bin), env.get("PATH", "")])
        env["VIRTUAL_ENV"] = str(self.venv)
        if cmsis_nn is not None:
            env["CMSIS_NN_PATH"] = str(cmsis_nn)
        if cmsis_dsp is not None:
            env["CMSIS_DSP_PATH"] = str(cmsis_dsp)
        return env


def _run(cmd: list[str], log: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload]
    log.append(f"$ {shlex.join(cmd)}  -> {res.returncode}")
    if res.returncode != 0:
        raise RuntimeError(f"`{shlex.join(cmd)}` failed ({res.returncode}):\n{res.stdout[-3000:]}{res.stderr[-3000:]}")
    return res


def build_install(root: Path) -> Install:
    """Wheel from a copy of the checkout, a fresh venv with it and its dependencies, a user folder."""
    log: list[str] = []
    src, dist, venv, user = root / "src", root / "dist", root / "venv", root / "user"
    for rel in repo_files():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, src / rel)
    pip_q = ["-q", "--disable-pip-version-check"]
    _run([sys.executable, "-m", "pip", "wheel", *pip_q, "--no-deps", "-w", str(dist), "."], log, cwd=src)
    wheel = next(dist.glob("mcugen-*.whl"))
    py = str(venv / "bin" / "python")
    try:
        _run([sys.executable, "-m", "venv", str(venv)], log)
        pip = [py, "-m", "pip"]
    except RuntimeError:
        # a Debian system Python without python3-venv has no ensurepip: a venv without pip, filled
        # by the outer pip (pip >= 22.3: --python)
        shutil.rmtree(venv, ignore_errors=True)
        _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], log)
        pip = [sys.executable, "-m", "pip", "--python", py]
    constraints = ([] if os.environ.get("MCUGEN_NEWEST") == "1"
                   else ["-c", str(src / "scripts" / "constraints.txt")])
    _run([*pip, "install", *pip_q, *constraints, str(wheel)], log, cwd=root)
    user.mkdir()
    shutil.copytree(src / "examples", user / "examples")
    return Install(root, venv, user, wheel, log, pip)
