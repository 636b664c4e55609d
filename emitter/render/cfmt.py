"""C literal formatting: the only place Python values become C text (used as Jinja filters)."""
from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
import numpy as np

C_TYPES = {"int8": "int8_t", "int32": "int32_t", "uint8": "uint8_t", "int16": "int16_t", "int64": "int64_t",
           "uint32": "uint32_t", "uint16": "uint16_t", "float32": "float"}


def c_int(v: int) -> str:
    """An int32 literal; INT32_MIN cannot be written as a plain negative literal."""
    v = int(v)
    if v == -(1 << 31):
        return "(-2147483647 - 1)"
    return str(v)


def c_array(values: np.ndarray, per_line: int = 16, indent: str = "    ") -> str:
    """Array initializer body: integers via c_int; a float array via c_float, at most 6 per line."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        flat = [c_float(v) for v in arr.ravel()]
        per_line = min(per_line, 6)
    else:
        flat = [c_int(v) for v in arr.ravel()]
    lines = [indent + ", ".join(flat[i:i + per_line]) + "," for i in range(0, len(flat), per_line)]
    return "\n".join(lines)


def c_comment(text: Any) -> str:
    """Safe inside /* */ (names from the model are untrusted): printable ASCII only (anything else
    becomes '?'), one line, no comment opener or closer, and no trigraph (`??/` would turn into a
    backslash under -std=c99): every '?' followed by another '?' gets a '_' after it."""
    s = "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in str(text))
    s = s.replace("*/", "*_/").replace("/*", "/_*")
    return re.sub(r"\?(?=\?)", "?_", s)


def c_string(text: Any) -> str:
    """A C string literal holding exactly the UTF-8 bytes of `text`: printable ASCII as is, except
    `"`, `\\` and `?` (trigraphs) which are escaped; every other byte as a 3-digit octal escape."""
    out = []
    for byte in str(text).encode("utf-8", "surrogatepass"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _fields(value: Any) -> list[tuple[str, Any, bool]]:
    """(name, value, declared float) of a dataclass's fields or a dict's items."""
    if isinstance(value, dict):
        return [(name, v, False) for name, v in value.items()]
    return [(f.name, getattr(value, f.name), f.type in ("float", float)) for f in dataclasses.fields(value)]


def _is_struct(value: Any) -> bool:
    """A dict of struct fields, or a struct twin (a dataclass naming its C type in CTYPE)."""
    return isinstance(value, dict) or (dataclasses.is_dataclass(value) and hasattr(value, "CTYPE"))


def c_struct(value: Any, refs: Mapping[str, str] | Callable[[str, Any], str] | None = None,
             indent: int = 1) -> str:
    """A designated initializer for a struct value: a params dataclass of emitter/kernels/ (C type
    `type(value).CTYPE`) or the dict of a CMSIS-NN struct's fields. The one formatter of struct
    values.

    An int renders via c_int; a float, or any value of a field annotated `float`, as an exact
    float32 literal (c_float); None as NULL; a tuple of ints as an inline C array. A nested struct
    (dataclass or dict) without nested structs of its own renders on one line
    (`.input = {.n = 1, .h = 8, ...}`), a deeper one as an indented block, recursively. Anything
    else (an np.ndarray of a params struct, a CRef of a CMSIS-NN struct) is a reference the caller
    names: `refs[path]` or `refs(path, value)`, with path the dotted field path.
    """
    return _c_struct(value, refs if refs is not None else {}, indent, "")


def _c_struct(value: Any, refs: Mapping[str, str] | Callable[[str, Any], str], indent: int, where: str) -> str:
    pad = "    " * indent
    parts = []
    for name, v, is_float in _fields(value):
        path = where + name
        if _is_struct(v):
            if not any(_is_struct(x) for _, x, _ in _fields(v)):
                inner = ", ".join(f".{n} = {_c_value(x, f'{path}.{n}', fl, refs)}" for n, x, fl in _fields(v))
                parts.append(f"{pad}.{name} = {{{inner}}},")
            else:
                parts.append(f"{pad}.{name} = {_c_struct(v, refs, indent + 1, path + '.')},")
        else:
            parts.append(f"{pad}.{name} = {_c_value(v, path, is_float, refs)},")
    return "{\n" + "\n".join(parts) + "\n" + "    " * (indent - 1) + "}"


# mcu_runtime/include/mcu_nn.h's MCU_ROUND_* (quant.ROUND_*): a `rounding` field renders by name
ROUNDING_NAMES = {0: "MCU_ROUND_TFLITE", 1: "MCU_ROUND_NEAREST_EVEN", 2: "MCU_ROUND_NEAREST_NO_TIE"}


def _c_value(v: Any, path: str, is_float: bool, refs: Mapping[str, str] | Callable[[str, Any], str]) -> str:
    if path.rsplit(".", 1)[-1] == "rounding" and isinstance(v, (int, np.integer)) and int(v) in ROUNDING_NAMES:
        return ROUNDING_NAMES[int(v)]
    if isinstance(v, tuple):
        return f"{{{', '.join(c_int(x) for x in v)}}}"
    if v is None:
        return "NULL"
    if isinstance(v, (int, np.integer)) and not is_float:
        return c_int(int(v))
    if is_float or isinstance(v, (float, np.floating)):
        return c_float(v)
    if callable(refs):
        return refs(path, v)
    if path not in refs:
        raise TypeError(f"{path}: no C name for this {type(v).__name__} field")
    return refs[path]


def c_float(v: float) -> str:
    """A float literal that round-trips the float32 value: the shortest repr of it as a double,
    suffixed f (`1.5f`, `0.10000000149011612f`); inf/nan become INFINITY/NAN (<math.h>)."""
    return f"{float(np.float32(v))!r}f".replace("inf", "INFINITY").replace("nanf", "NAN")


# File and symbol names a bundle prefix must not take: the bundle's NAME.h would shadow the header of
# that name (the Makefile compiles with -I.), or its NAME_* symbols and NAME_* macros would collide.
C_STD_HEADERS = frozenset((
    "assert", "complex", "ctype", "errno", "fenv", "float", "inttypes", "iso646", "limits", "locale",
    "math", "setjmp", "signal", "stdalign", "stdarg", "stdatomic", "stdbool", "stddef", "stdint",
    "stdio", "stdlib", "stdnoreturn", "string", "tgmath", "threads", "time", "uchar", "wchar",
    "wctype"))
CMSIS_HEADERS = frozenset((
    "arm_math", "arm_math_types", "arm_nnfunctions", "arm_nn_types", "arm_nnsupportfunctions",
    "arm_nn_math_types", "cmsis_compiler", "cmsis_gcc", "cmsis_armclang", "cmsis_version"))
MCUGEN_NAMES = frozenset({"mcu", "glue", "model_glue", "harness"})


def prefix_problem(name: str) -> str | None:
    """Why `name` cannot prefix a bundle's files and symbols, or None if it can."""
    if name.startswith("_"):
        return "a leading '_' makes identifiers such as _NAME_H reserved in C"
    if name in MCUGEN_NAMES or name.startswith("mcu_"):
        return "mcugen's runtime kernels and verification harness use it (mcu_*, MCU_*, glue, harness)"
    if name in C_STD_HEADERS:
        return f"{name}.h would shadow the C standard header <{name}.h>"
    if name in CMSIS_HEADERS:
        return f"{name}.h would shadow the CMSIS header {name}.h"
    return None


def upper_ident(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", name).upper()


COMMENT_WIDTH = 100  # no line of a generated comment is longer (wrap_comments)
_BREAK_AFTER = " ;/,"


def _code_and_comment(line: str, inside: bool) -> tuple[bool, bool, bool]:
    """Scan one line of C starting inside a /* */ comment or not: (has code outside comments,
    has comment text, inside a comment at the end). String and character literals are skipped."""
    code = comment = False
    quote = ""
    i = 0
    while i < len(line):
        if inside:
            comment = True
            end = line.find("*/", i)
            if end < 0:
                return code, comment, True
            inside, i = False, end + 2
        elif quote:
            if line[i] == "\\":
                i += 2
                continue
            if line[i] == quote:
                quote = ""
            i += 1
        elif line.startswith("/*", i):
            inside, i = True, i + 2
        elif line.startswith("//", i):
            return code, True, False
        else:
            if line[i] in "\"'":
                quote = line[i]
            code = code or not line[i].isspace()
            i += 1
    return code, comment, inside


def _pieces(body: str, width: int) -> list[str]:
    """`body` cut into pieces of at most `width` characters, each cut just after a space, ';', '/'
    or ',' in the second half of the piece when there is one (a space at a cut is dropped)."""
    out = []
    while len(body) > width:
        cut = max(body.rfind(ch, width // 2, width) for ch in _BREAK_AFTER)
        if cut < 0:
            out.append(body[:width])
            body = body[width:]
        else:
            out.append(body[:cut + 1].rstrip(" "))
            body = body[cut + 1:].lstrip(" ") if body[cut] == " " else body[cut + 1:]
    return out + [body]


def wrap_comments(text: str, width: int = COMMENT_WIDTH) -> str:
    """C text with every comment-only line longer than `width` wrapped onto continuation lines
    (` * ` under the comment's star, two more spaces of hanging indent). Lines that mix code and a
    comment are left alone (the templates keep comments on lines of their own). Text is split,
    never changed: sanitizing comment text stays c_comment's job."""
    out: list[str] = []
    inside = False
    for line in text.split("\n"):
        code, comment, inside = _code_and_comment(line, inside)
        if code or not comment or len(line) <= width or line.count("/*") + line.count("*/") > 2:
            out.append(line)
            continue
        m = re.match(r"(\s*)(/\*\*|/\*|\*(?!/))?( ?)", line)
        assert m is not None
        indent, marker = m.group(1), m.group(2) or ""
        if marker.startswith("/"):
            star = indent + " * "
        elif marker:
            star = indent + "* "
        else:
            star = indent
        cont = star + "  "
        body = line[m.end():]
        if not inside and body.rstrip().endswith("*/"):
            body = body.rstrip()[:-2].rstrip()
            tail = " */"
        else:
            tail = ""
        pieces = _pieces(body, width - max(m.end(), len(cont)) - len(tail))
        out.append(line[:m.end()] + pieces[0])
        out += [cont + p for p in pieces[1:]]
        out[-1] += tail
    return "\n".join(out)


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The one Jinja environment of the C templates, with this module's filters (built once:
    compiling the templates is most of a render's time)."""
    from emitter.resources import data_dir

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters.update(c_int=c_int, c_array=c_array, c_comment=c_comment, c_float=c_float,
                       c_string=c_string)
    return env
