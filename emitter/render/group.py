"""Several models, one bundle (issue 25 item 1): each model's header, source and weights as if it
were alone, one copy of mcu_runtime/ (the union of the files the models need), one Makefile and
CMakeLists.txt building all of them into one library, and, unless the models run concurrently,
one arena shared by all of them, sized to the largest need.

    <group>_arena.h/.c    the shared arena (<GROUP>_ARENA_SIZE = max of the models' arenas); each
                          model's header maps <name>_arena onto it, its source asserts it fits
    --concurrent          no shared arena: each model keeps its own <name>_arena, as alone
    <name>_report.json/.html   each model's report; report.json and report.html: the group, its
                          arenas and models

The group's C prefix is the models' names joined by `_` (kws_digits); it names the library, the
CMake target and the shared arena.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from emitter import __version__
from emitter.compiler import Compiled
from emitter.errors import UsageError
from emitter.optimize import CONFIG, config_header
from emitter.render.bundle import BundleBuilder
from emitter.render.cfmt import c_comment, environment, prefix_problem, upper_ident, wrap_comments
from emitter.render.runtime_files import runtime_files, runtime_symbols, variant_config, variant_tag
from emitter.report.data import report
from emitter.report.html import report_html
from emitter.resources import data_dir

MODEL_TEMPLATES = (("model.h.j2", "{p}.h"), ("model.c.j2", "{p}.c"), ("weights.h.j2", "{p}_weights.h"),
                   ("weights.c.j2", "{p}_weights.c"))


@dataclass(frozen=True)
class GroupFigures:
    """What the summary prints of a group: each model's arena and the bundle's."""
    prefix: str
    shared: bool
    arenas: tuple[tuple[str, int], ...]  # (model name, its own arena bytes)
    arena_bytes: int  # the shared arena's size, or the sum of the models' own
    runtime_files: int
    pools: tuple[tuple[str, int], ...] = ()  # several RAM pools: (pool, its shared array's bytes)

    def lines(self) -> list[str]:
        own = ", ".join(f"{n} {b:,}" for n, b in self.arenas)
        total = sum(b for _, b in self.arenas)
        if self.shared and self.pools:
            arrays = ", ".join(f"{self.prefix}_arena_{n} {b:,}" for n, b in self.pools)
            return [f"bundle {self.prefix}: {len(self.arenas)} models, one runtime ({self.runtime_files} files); "
                    f"one shared arena per RAM pool ({arrays}; {self.arena_bytes:,} bytes, each the largest "
                    f"need in it; the models' own: {own})"]
        if self.shared:
            return [f"bundle {self.prefix}: {len(self.arenas)} models, one runtime ({self.runtime_files} files); "
                    f"one shared arena {self.prefix}_arena of {self.arena_bytes:,} bytes (the largest of: {own}; "
                    f"{total - self.arena_bytes:,} bytes less than their sum)"]
        return [f"bundle {self.prefix}: {len(self.arenas)} models, one runtime ({self.runtime_files} files); "
                f"--concurrent: one arena per model ({own}), {total:,} bytes in all"]


def group_prefix(names: list[str]) -> str:
    return "_".join(names)


def check_names(names: list[str]) -> None:
    """Distinct model names, each a usable C prefix, and a usable group prefix: UsageError otherwise."""
    seen = [n for k, n in enumerate(names) if n in names[:k]]
    if seen:
        raise UsageError(f"several models have the name '{seen[0]}' (from the file stems or --name): "
                         "give each a different one with --name a,b,...")
    for n in [*names, group_prefix(names)]:
        problem = prefix_problem(n)
        if problem is not None:
            raise UsageError(f"the C prefix '{n}' cannot be used: {problem}; choose others with --name a,b,...")


def shared_pools(ctxs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The group's pool arrays: every pool a model uses, fastest first, sized to the largest need
    (and which model needs what, for the header's comment)."""
    out: dict[str, dict[str, Any]] = {}
    for ctx in ctxs:
        for p in ctx["pools"]:
            pool = out.setdefault(p["name"], p | {"size": 0, "needs": []})
            pool["size"] = max(pool["size"], p["size"])
            pool["needs"].append(f"{ctx['prefix']} {p['size']}")
    return sorted(out.values(), key=lambda p: (p["rank"], p["name"]))


def render_group(models: list[Compiled], board_flags: str, board_name: str,
                 concurrent: bool = False) -> tuple[dict[str, bytes], GroupFigures]:
    """Every file of a several-model bundle, relative path -> bytes, and the summary's figures."""
    names = [c.name for c in models]
    check_names(names)
    optimize = {c.optimize for c in models}
    assert len(optimize) == 1, "one --optimize for the whole bundle"
    prefix = group_prefix(names)
    # a model needs several RAM pools: the shared arena is one array per pool, each the largest need
    pooled = not concurrent and any(c.pools is not None and c.pools.multi for c in models)
    ctxs = [BundleBuilder(c, pooled).context() for c in models]
    pools = shared_pools(ctxs) if pooled else []
    size = sum(p["size"] for p in pools) if pooled else max(ctx["arena_size"] for ctx in ctxs)
    env = environment()
    files: dict[str, str] = {}
    for c, ctx in zip(models, ctxs, strict=True):
        others = ", ".join(n for n in names if n != c.name)
        ctx.update(cpu_flags=board_flags, board=board_name, frontend=None, tests=False,
                   SHARED_PREFIX=upper_ident(prefix),
                   shared_arena=None if concurrent else {"prefix": prefix, "others": others})
        for template, path in MODEL_TEMPLATES:
            files[path.format(p=c.name)] = env.get_template(template).render(ctx)
        if ctx["single_io"]:
            files[f"{c.name}_f32.c"] = env.get_template("model_f32.c.j2").render(ctx)
    kernels = sorted({k for ctx in ctxs for k in ctx["kernels"]})
    bands = any(ctx["bands"] for ctx in ctxs)
    isa = ctxs[0]["isa"]
    runtime = runtime_files(kernels, bands, isa)
    first = ctxs[0]
    arenas = [{"prefix": c.name, "PREFIX": upper_ident(c.name), "size": ctx["arena_size"],
               "weight_bytes": ctx["weight_bytes"], "model_file": c_comment(c.model.path.name)}
              for c, ctx in zip(models, ctxs, strict=True)]
    total = sum(a["size"] for a in arenas)
    for a in arenas:  # report.html's bar: 300 px for the largest arena
        a["bar"] = 300 * a["size"] // max(size, 1)
    gctx = first | {"prefix": prefix, "PREFIX": upper_ident(prefix), "models": names, "arenas": arenas,
                    "pools": pools,
                    "size": size, "total": total, "shared": not concurrent, "kernels": kernels, "bands": bands,
                    "cmsis": any(ctx["cmsis"] for ctx in ctxs),
                    "model_sources": [s for ctx in ctxs for s in ctx["model_sources"]]
                    + ([] if concurrent else [f"{prefix}_arena.c"]),
                    "runtime_sources": [f"mcu_runtime/{f}" for f in runtime if f.endswith(".c")]}
    if not concurrent:
        files[f"{prefix}_arena.h"] = env.get_template("arena.h.j2").render(gctx)
        files[f"{prefix}_arena.c"] = env.get_template("arena.c.j2").render(gctx)
    files["Makefile"] = env.get_template("Makefile.j2").render(gctx)
    files["CMakeLists.txt"] = env.get_template("CMakeLists.txt.j2").render(gctx)
    files["README.md"] = env.get_template("group_README.md.j2").render(gctx)
    out = {k: (wrap_comments(v) if k.endswith((".c", ".h")) else v).encode() for k, v in files.items()}
    reports: list[dict[str, Any]] = []
    for c, ctx in zip(models, ctxs, strict=True):
        rep = report(c, ctx)
        reports.append(rep)
        out[f"{c.name}_report.json"] = (json.dumps(rep, indent=1, sort_keys=True) + "\n").encode()
        out[f"{c.name}_report.html"] = report_html(json.loads(out[f"{c.name}_report.json"])).encode()
    group = {"mcugen_version": __version__, "name": prefix, "board": board_name, "optimize": models[0].optimize,
             "models": [{"name": r["name"], "model": r["model"], "model_sha256": r["model_sha256"],
                         "arena_bytes": r["arena_bytes"], "weight_bytes": r["weight_bytes"],
                         "report": f"{r['name']}_report.json"} for r in reports],
             "arena": {"shared": not concurrent, "bytes": size if not concurrent else total,
                       "sum_of_models_bytes": total, "alignment": 16}}
    out["report.json"] = (json.dumps(group, indent=1, sort_keys=True) + "\n").encode()
    out["report.html"] = env.get_template("group_report.html.j2").render(gctx).encode()
    rt = data_dir("mcu_runtime")
    for rel in runtime:
        out[f"mcu_runtime/{rel}"] = (rt / rel).read_bytes()
    out[CONFIG] = variant_config(config_header(out[CONFIG], models[0].optimize, isa),
                                 variant_tag(models[0].optimize, isa, board_flags), runtime_symbols())
    figures = GroupFigures(prefix, not concurrent, tuple((a["prefix"], a["size"]) for a in arenas),
                           size if not concurrent else total, len(runtime),
                           tuple((p["name"], p["size"]) for p in pools))
    return out, figures
