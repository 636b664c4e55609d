"""Which CMSIS-NN the cmsis-nn backend works with: the one place that says so.

A CMSIS-NN tree is recognised by the `$Revision: V.x.y.z` line of Include/arm_nnfunctions.h.
Releases and their header revisions (read from the tags of github.com/ARM-software/CMSIS-NN):

    v4.0.0 V.11.2.0   v4.1.0 V.11.3.0   v5.0.0 V.12.4.0   v6.0.0 V.16.0.0   v7.0.0 V.18.0.0

Policy:
  1. TESTED (v7.0.0) is supported: every shared model bit-exact on the host and in QEMU.
  2. Older trees are refused (v6.0.0, for one, has no arm_fully_connected_per_channel_s8).
  3. Newer trees are accepted with a "newer than tested" warning only when the functions and types
     mcugen uses are declared as in v7.0.0 (API_FUNCTIONS: return and parameter types, names not
     compared; API_TYPES: fields); otherwise refused, naming what changed.
     main of 2026-07 (V.19.1.0) passes this check.
  4. A tree without a readable revision is refused.
A function the backend or mcu_runtime/tools/cmsis_sizer.c starts to call is added to the table of
emitter/kernels/cmsis_api.py; API_FUNCTIONS derives from it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from emitter.errors import ToolchainError
from emitter.kernels.cmsis_api import TYPES, declared_functions

TESTED = ("v7.0.0", (18, 0, 0))
RELEASES = {(11, 2, 0): "v4.0.0", (11, 3, 0): "v4.1.0", (12, 4, 0): "v5.0.0", (16, 0, 0): "v6.0.0",
            (18, 0, 0): "v7.0.0"}
GET_IT = (f"use CMSIS-NN {TESTED[0]} (e.g. `git clone --branch {TESTED[0]} https://github.com/ARM-software/CMSIS-NN`, "
          "see docs/getting_cmsis_nn.md in mcugen's repository) and point CMSIS_NN_PATH at it, or unset "
          "CMSIS_NN_PATH / pass --backend portable for mcugen's own kernels")

# What the backend and mcu_runtime/tools/cmsis_sizer.c call, as declared in v7.0.0 (emitter/kernels/cmsis_api.py).
API_FUNCTIONS: dict[str, tuple[str, tuple[str, ...]]] = declared_functions()  # name -> (return, parameter types)
API_TYPES = TYPES  # name -> body of its typedef in arm_nn_types.h


@dataclass(frozen=True)
class CmsisVersion:
    revision: tuple[int, int, int]  # $Revision of Include/arm_nnfunctions.h
    release: str | None             # its release tag, when known
    tested: bool

    @property
    def revision_text(self) -> str:
        return "V." + ".".join(map(str, self.revision))

    def __str__(self) -> str:
        if self.tested:
            return f"{self.release} ({self.revision_text})"
        return f"{self.revision_text} (newer than the tested {TESTED[0]}, same API)"

    def warning(self, path: Path) -> str | None:
        if self.tested:
            return None
        return (f"CMSIS-NN at {path} is arm_nnfunctions.h {self.revision_text}, newer than tested "
                f"{tested()}: the {len(API_FUNCTIONS)} functions and {len(API_TYPES)} types mcugen uses "
                f"are unchanged, but its numerics were verified with {TESTED[0]} only; check the bundle with "
                f"--verify, or use {TESTED[0]}")


def tested() -> str:
    return f"{TESTED[0]} (arm_nnfunctions.h V.{'.'.join(map(str, TESTED[1]))})"


def supported() -> str:
    return f"{tested()}, and newer revisions in which the API mcugen uses is unchanged (with a warning)"


def canonical(c_text: str) -> str:
    """C declarations compared token by token: no comments, no preprocessor lines, single spaces."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", c_text, flags=re.S)
    text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)
    text = re.sub(r"\s+", " ", text)
    return re.sub(r" ?([*(),;{}=]) ?", r"\1", text).strip()


QUALIFIERS = {"const", "volatile", "restrict", "signed", "unsigned", "struct", "enum"}


def parameter_types(declaration: str) -> str:
    """`ret name(type,type,...)` of a canonical declaration: parameter names dropped."""
    m = re.fullmatch(r"(.*?)\((.*)\)", declaration)
    if m is None:
        return declaration
    types = []
    for param in m.group(2).split(","):
        bare = re.sub(r"\w+$", "", param).strip()
        named = bare and not set(bare.replace("*", " ").split()) <= QUALIFIERS
        types.append(bare if named else param)
    return f"{m.group(1)}({','.join(types)})"


def prototype(name: str) -> str:
    """The declaration API_FUNCTIONS describes, without parameter names."""
    ret, params = API_FUNCTIONS[name]
    return f"{ret} {name}({', '.join(params)})"


def api_changes(include: Path) -> list[str]:
    """What differs from API_FUNCTIONS / API_TYPES in the headers under `include`."""
    texts = {}
    for name in ("arm_nnfunctions.h", "arm_nn_types.h"):
        header = include / name
        if not header.is_file():
            return [f"{name} is missing"]
        texts[name] = canonical(header.read_text(errors="replace"))
    changes = []
    statements = re.split(r"[;{}]", texts["arm_nnfunctions.h"])
    for name in API_FUNCTIONS:
        found = [parameter_types(s.strip()) for s in statements if re.search(rf"(^|[ *]){name}\(", s)]
        if canonical(prototype(name)) not in found:
            seen = f"`{found[0]}`" if found else "no declaration"
            changes.append(f"{name}: expected `{prototype(name)}`, found {seen}")
    for name, want in API_TYPES.items():
        m = re.search(r"typedef (?:struct|enum)(?: \w+)?\{([^}]*)\}" + name + ";", texts["arm_nn_types.h"])
        if m is None or m.group(1) != canonical(want):
            changes.append(f"{name}: expected {{{want}}}, found " + (f"{{{m.group(1)}}}" if m else "no typedef"))
    return changes


def detect(path: Path | str) -> CmsisVersion:
    """The CMSIS-NN version at `path`; ToolchainError (what was found, what is supported, what to do)
    for a tree that is missing, unrecognised, older than supported, or newer with another API."""
    path = Path(path)
    header = path / "Include" / "arm_nnfunctions.h"
    if not header.is_file():
        raise ToolchainError(f"CMSIS_NN_PATH={path} holds no Include/arm_nnfunctions.h, so it is not a CMSIS-NN "
                         f"source tree (supported: {supported()}); {GET_IT}")
    m = re.search(r"\$Revision:\s*V\.(\d+)\.(\d+)\.(\d+)", header.read_text(errors="replace")[:8000])
    if m is None:
        raise ToolchainError(f"CMSIS-NN at {path}: Include/arm_nnfunctions.h has no `$Revision: V.x.y.z` line, so "
                         f"its version cannot be recognised (supported: {supported()}); {GET_IT}")
    revision = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    found = "V." + ".".join(m.groups()) + (f" ({RELEASES[revision]})" if revision in RELEASES else "")
    if revision < TESTED[1]:
        raise ToolchainError(f"CMSIS-NN at {path} is arm_nnfunctions.h {found}, older than supported. "
                         f"Supported: {supported()}; {GET_IT}")
    if revision == TESTED[1]:
        return CmsisVersion(revision, TESTED[0], True)
    changes = api_changes(path / "Include")
    if changes:
        more = f" (and {len(changes) - 1} more)" if len(changes) > 1 else ""
        raise ToolchainError(f"CMSIS-NN at {path} is arm_nnfunctions.h {found}, newer than tested {tested()}, "
                         f"and the API mcugen calls changed: {changes[0]}{more}; {GET_IT}")
    return CmsisVersion(revision, RELEASES.get(revision), False)
