"""mcugen's cache folder (emitter.resources.cache_dir): where the host tools (kernel_info,
cmsis_sizer), the QEMU plugin and tuning measurements are kept; a plain emit builds kernel_info
there, so an unwritable cache must not stop it."""
from __future__ import annotations

import tempfile
from pathlib import Path

from emitter.resources import cache_dir


def test_cache_dir_follows_mcugen_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MCUGEN_CACHE_DIR", str(tmp_path / "c"))
    got = cache_dir("tune")
    assert got == tmp_path / "c" / "tune" and got.is_dir()


def test_cache_dir_then_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("MCUGEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir("x") == tmp_path / "mcugen" / "x"


def test_unwritable_cache_falls_back_to_the_temporary_directory(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")  # nothing can be created below a file, not even by root
    monkeypatch.setenv("MCUGEN_CACHE_DIR", str(blocker / "cache"))
    got = cache_dir("kernel-info-test")
    assert got.is_dir()
    assert Path(tempfile.gettempdir()) in got.parents
