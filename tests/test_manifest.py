"""The bundle's MANIFEST (issue 32 item 4): mcugen recognises every file it wrote and replaces
exactly those, front end included, instead of a rule of names."""
from __future__ import annotations

from pathlib import Path

import pytest

from emitter.cli import main
from emitter.render.write import MANIFEST

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "keyword_audio"
FRONTEND = [str(EXAMPLE / "keyword_int8.onnx"), "--frontend", str(EXAMPLE / "frontend.toml"), "--quiet"]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_same_frontend_command_twice_gives_the_same_bundle(tmp_path, capsys):
    pytest.importorskip("cmsisdsp")
    out = tmp_path / "kw"
    assert main([*FRONTEND, "-o", str(out)]) == 0
    first = snapshot(out)
    listed = (out / MANIFEST).read_text().splitlines()
    assert listed == sorted(first) and MANIFEST in listed  # every file mcugen wrote, itself included
    assert any(p.endswith("_frontend.c") for p in listed) and "cmsis_dsp_sources.txt" in listed
    capsys.readouterr()
    assert main([*FRONTEND, "-o", str(out)]) == 0
    assert "kept what mcugen did not write" not in capsys.readouterr().out
    assert snapshot(out) == first


def test_regenerating_without_the_front_end_drops_its_files(tmp_path, capsys):
    """--force was needed, and then the stale front-end files stayed as if they were the user's."""
    pytest.importorskip("cmsisdsp")
    out = tmp_path / "kw"
    assert main([*FRONTEND, "-o", str(out)]) == 0
    (out / "notes.txt").write_text("mine")
    (out / "mcu_runtime" / "my_kernel.c").write_text("/* mine */\n")
    capsys.readouterr()
    assert main([str(EXAMPLE / "keyword_int8.onnx"), "--quiet", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "kept what mcugen did not write there: mcu_runtime/my_kernel.c, notes.txt" in said, said
    names = snapshot(out)
    assert not any("frontend" in p for p in names) and "cmsis_dsp_sources.txt" not in names
    assert names["notes.txt"] == b"mine" and names["mcu_runtime/my_kernel.c"] == b"/* mine */\n"
    assert sorted((out / MANIFEST).read_text().splitlines()) == sorted(set(names) - {"notes.txt",
                                                                                    "mcu_runtime/my_kernel.c"})


def test_a_bundle_without_a_manifest_keeps_the_old_rule(tmp_path, capsys):
    from tests.models.tiny import HELLO

    out = tmp_path / "b"
    assert main([str(HELLO), "-o", str(out), "--quiet"]) == 0
    (out / MANIFEST).unlink()  # as written by an mcugen before the MANIFEST
    (out / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main([str(HELLO), "-o", str(out), "--quiet"]) == 0
    assert "kept what mcugen did not write there: notes.txt" in capsys.readouterr().out
    assert (out / MANIFEST).is_file()
