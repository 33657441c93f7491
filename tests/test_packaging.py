"""`pip install .` gives a wheel with the catalog inside the t2t_keras namespace."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ["setup.py", "pyproject.toml", "README.md", "t2t_keras", "problems", "hparams", "bin"]


def test_wheel_maps_catalog_and_binaries_into_the_package(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, source / name)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), "."],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("t2t_keras-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith("-info")}
    assert top_level == {"t2t_keras"}
    for module in ("problems/__init__.py", "hparams/transformer.py", "bin/t2t_trainer.py"):
        assert f"t2t_keras/{module}" in names
    (entry_points,) = [name for name in names if name.endswith("entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    for command in ("t2t-datagen", "t2t-trainer", "t2t-decoder"):
        assert f"{command} = t2t_keras.bin." in text
