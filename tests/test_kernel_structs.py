"""The params dataclasses of emitter/kernels/ against the typedef structs of mcu_nn.h (and mcu_nn_s16.h): every twin's
CTYPE is declared there with the same field names in the same order and compatible C types
(int -> int32_t/int, float -> float, np.ndarray -> pointer, tuple -> [MCU_MAX_RANK] array, nested
dataclass -> the nested struct of its CTYPE), and every params struct of mcu_nn.h has a twin.
"""
from __future__ import annotations

import dataclasses
import importlib
import re
import typing
from pathlib import Path

import numpy as np
import pytest

from emitter.kernels import KERNELS
from emitter.render.runtime_files import PATH_FILES

HEADER = Path(__file__).resolve().parent.parent / "mcu_runtime" / "include" / "mcu_nn.h"
C_KERNELS = HEADER.parent.parent / "kernels"
HEADER_S16 = HEADER.parent / "mcu_nn_s16.h"  # the params structs of the int16-activation kernels only


def headers() -> str:
    return HEADER.read_text() + HEADER_S16.read_text()


def c_structs(text: str) -> dict[str, list[tuple[str, str]]]:
    """typedef struct name -> [(field, C declarator without the name)], comments dropped."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    out = {}
    for body, name in re.findall(r"typedef\s+struct\s*\{([^}]*)\}\s*(\w+)\s*;", text):
        fields = []
        for decl in filter(None, (d.strip() for d in body.split(";"))):
            m = re.fullmatch(r"(.*?)\s*\b(\w+)\s*(\[\s*\w+\s*\])?", " ".join(decl.split()))
            assert m is not None, decl
            fields.append((m.group(2), (m.group(1) + (m.group(3) or "")).strip()))
        out[name] = fields
    return out


def twins() -> dict[str, type]:
    """CTYPE -> params dataclass, over every twin module and common.py."""
    out: dict[str, type] = {}
    for name in ("common", *KERNELS):
        module = importlib.import_module(f"emitter.kernels.{name}")
        for obj in vars(module).values():
            if dataclasses.is_dataclass(obj) and isinstance(obj, type) and "CTYPE" in vars(obj):
                out[obj.CTYPE] = obj  # type: ignore[attr-defined]
    return out


def compatible(hint: typing.Any, ctype: str) -> bool:
    if hint is int:
        return re.fullmatch(r"(const )?(int32_t|int)", ctype) is not None
    if hint is float:
        return re.fullmatch(r"(const )?float", ctype) is not None
    if hint is np.ndarray or hint == (np.ndarray | None):
        return ctype.endswith("*")
    if hint is tuple or typing.get_origin(hint) is tuple:
        return re.fullmatch(r"int32_t\s*\[\s*MCU_MAX_RANK\s*\]", ctype) is not None
    if dataclasses.is_dataclass(hint):
        return ctype == getattr(hint, "CTYPE", None)
    return False


def mismatches(structs: dict[str, list[tuple[str, str]]], classes: dict[str, type]) -> list[str]:
    """What differs between the C structs and the dataclasses naming them."""
    out = []
    for ctype, cls in classes.items():
        if ctype not in structs:
            out.append(f"{cls.__name__}: mcu_nn.h declares no struct {ctype}")
            continue
        hints = typing.get_type_hints(cls)
        py = [(f.name, hints[f.name]) for f in dataclasses.fields(cls)]
        c = structs[ctype]
        if [n for n, _ in py] != [n for n, _ in c]:
            out.append(f"{ctype}: C fields {[n for n, _ in c]} != {cls.__name__} fields {[n for n, _ in py]}")
            continue
        for (name, hint), (_, decl) in zip(py, c, strict=False):
            if not compatible(hint, decl):
                out.append(f"{ctype}.{name}: C type `{decl}` does not hold a Python {hint!r}")
            elif dataclasses.is_dataclass(hint) and getattr(hint, "CTYPE", None) not in classes:
                out.append(f"{ctype}.{name}: nested {hint!r} is no checked twin")
    for ctype in structs:
        if ctype.endswith("_params_t") and ctype not in classes:
            out.append(f"{ctype}: no params dataclass in emitter/kernels/ names it")
    return out


def test_every_params_dataclass_matches_its_struct() -> None:
    classes = twins()
    assert len(classes) >= 20  # 17 params structs + Dims, QuantIO, Bcast, PoolParams
    assert mismatches(c_structs(headers()), classes) == []


@pytest.mark.parametrize("side", ["c", "python"])
def test_a_field_added_on_one_side_is_found(side: str) -> None:
    """The check above can fail: one extra field in the header, or in a dataclass, is reported."""
    text, classes = headers(), twins()
    if side == "c":
        text = text.replace("    int32_t shift;\n} mcu_requantize_params_t;",
                            "    int32_t shift;\n    int32_t extra;\n} mcu_requantize_params_t;")
    else:
        cls = classes["mcu_requantize_params_t"]
        wider = dataclasses.make_dataclass(cls.__name__, [("extra", int)], bases=(cls,), frozen=True)
        classes["mcu_requantize_params_t"] = wider
    found = mismatches(c_structs(text), classes)
    assert len(found) == 1 and found[0].startswith("mcu_requantize_params_t: C fields") and "extra" in found[0]


def test_a_changed_field_type_is_found() -> None:
    text = headers().replace("    int32_t perm[MCU_MAX_RANK];", "    int32_t perm;")
    assert mismatches(c_structs(text), twins()) == [
        "mcu_transpose_params_t.perm: C type `int32_t` does not hold a Python tuple[int, ...]"]


def test_one_twin_per_c_kernel() -> None:
    """emitter/kernels/mcu_<k>.py beside every mcu_runtime/kernels/mcu_<k>.c (path files and the
    _ref.c reference belong to their kernel)."""
    paths = "|".join((*PATH_FILES, "ref"))
    kernels = {p.stem for p in C_KERNELS.glob("mcu_*.c") if not re.search(rf"_({paths})$", p.stem)}
    assert set(KERNELS) == kernels and len(KERNELS) >= 32  # int8 kernels and those with int16 activations
