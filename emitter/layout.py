"""Physical layouts of activations: what a Layout means, when two agree, how to convert.

A Layout (view, perm) stores logical tensor L as L.reshape(view).transpose(perm). Identity is the
ONNX order; NHWC of an NCHW tensor is perm (0, 2, 3, 1). Reshapes keep the layout (they are free
views) and a Transpose only changes it, so Transpose nodes cost nothing unless a consumer needs a
different order; then one relayout (an N-D transpose kernel) is inserted.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from emitter.ir import Layout

NHWC = (0, 2, 3, 1)


def nhwc(shape: tuple[int, ...]) -> Layout:
    return Layout(tuple(shape), NHWC)


def physical_shape(layout: Layout) -> tuple[int, ...]:
    return tuple(layout.view[p] for p in layout.perm)


@lru_cache(maxsize=256)
def index_map(layout: Layout) -> np.ndarray:
    """Entry k: the logical flat index stored at physical position k."""
    size = int(np.prod(layout.view, dtype=np.int64))
    return np.arange(size, dtype=np.int64).reshape(layout.view).transpose(layout.perm).ravel()


def equivalent(a: Layout, b: Layout) -> bool:
    """Same bytes in the same order (unit dimensions and reshapes do not matter)."""
    if a == b:
        return True
    return bool(np.array_equal(index_map(a), index_map(b)))


def is_identity(layout: Layout) -> bool:
    ids = index_map(layout)
    return bool(np.array_equal(ids, np.arange(ids.size)))


def is_simple(layout: Layout, shape: tuple[int, ...]) -> bool:
    """The view is the logical shape itself, so the layout is a plain axis permutation."""
    return tuple(layout.view) == tuple(shape)


def after_transpose(layout: Layout, in_shape: tuple[int, ...], perm: tuple[int, ...]) -> Layout | None:
    """Layout of Transpose(perm)'s output that keeps the input bytes unchanged (None if the input
    layout is not a plain permutation of the input shape)."""
    if not is_simple(layout, in_shape):
        if is_identity(layout):
            layout = Layout.identity(in_shape)
        else:
            return None
    inv = np.argsort(perm)
    out_shape = tuple(in_shape[p] for p in perm)
    return Layout(out_shape, tuple(int(inv[p]) for p in layout.perm))


def squeeze_transpose(shape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Drop unit axes and merge axes that stay adjacent: the smallest equivalent transpose."""
    keep = [a for a in range(len(shape)) if shape[a] != 1]
    if not keep:
        return (1,), (0,)
    rank_of = {a: i for i, a in enumerate(keep)}
    sq_shape = [shape[a] for a in keep]
    sq_perm = [rank_of[a] for a in perm if a in rank_of]
    # merge input axes i, i+1 when they appear consecutively in perm
    groups: list[list[int]] = []
    for a in sq_perm:
        if groups and groups[-1][-1] + 1 == a:
            groups[-1].append(a)
        else:
            groups.append([a])
    order = sorted(groups, key=lambda g: g[0])
    merged_shape = [int(np.prod([sq_shape[a] for a in g])) for g in order]
    gid = {id(g): i for i, g in enumerate(order)}
    merged_perm = [gid[id(g)] for g in groups]
    return tuple(merged_shape), tuple(merged_perm)


def relayout_steps(src: Layout, dst: Layout) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Physical transposes (in_shape, perm) that turn bytes in layout src into layout dst."""
    if equivalent(src, dst):
        return []
    steps = []
    if src.view == dst.view:
        inv_src = np.argsort(src.perm)
        steps.append((physical_shape(src), tuple(int(inv_src[p]) for p in dst.perm)))
    else:
        if not is_identity(src):  # src -> logical order
            steps.append((physical_shape(src), tuple(int(i) for i in np.argsort(src.perm))))
        if not is_identity(dst):  # logical order -> dst
            steps.append((tuple(dst.view), tuple(dst.perm)))
    return [squeeze_transpose(s, p) for s, p in steps]
