"""benchmarks/quality_curve.py: the checkpoints each minute had, and the curves drawn and tabled."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "quality_curve.py"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
STARTED = 1_800_000_000.0


def load_module():  # type: ignore[no-untyped-def]
    """The script as a module, its folder on the path as when it runs (it imports its neighbours)."""
    spec = importlib.util.spec_from_file_location("quality_curve", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return module


def fake_checkpoints(directory: Path, saved: dict[int, float]) -> None:
    """ckpt-STEP.index and .data files, written `seconds` after STARTED."""
    for step, seconds in saved.items():
        for suffix in (".index", ".data-00000-of-00001"):
            path = directory / f"ckpt-{step}{suffix}"
            path.write_bytes(b"")
            os.utime(path, (STARTED + seconds, STARTED + seconds))
    (directory / "checkpoint").write_text("")


def test_each_minute_gets_the_checkpoints_saved_by_then(tmp_path: Path) -> None:
    quality_curve = load_module()
    # One checkpoint every 40 s of a 90-s "minute"; the last one 5 s after the budget.
    fake_checkpoints(tmp_path, {120: 40.0, 250: 80.0, 390: 120.0, 500: 160.0, 610: 275.0})
    asked = []

    def score(saved: list[str], name: str) -> dict:
        asked.append((name, [Path(prefix).name for prefix in saved]))
        return {"val": {"bleu": float(len(saved))}}

    points = quality_curve.curve([0.25, 1, 2, 3], 90.0, STARTED, str(tmp_path), score)

    assert asked == [
        ("curve-1", ["ckpt-120", "ckpt-250"]),
        ("curve-2", ["ckpt-120", "ckpt-250", "ckpt-390", "ckpt-500"]),
        ("curve-3", ["ckpt-120", "ckpt-250", "ckpt-390", "ckpt-500", "ckpt-610"]),
    ]  # Minute 0.25 (22.5 s) had no checkpoint yet; 610 came late, within LATE_SECONDS.
    assert [(p["minutes"], p["step"], p["val"]["bleu"]) for p in points] == [
        (1, 250, 2.0),
        (2, 500, 4.0),
        (3, 610, 5.0),
    ]


def test_a_window_keeps_the_checkpoints_of_the_minutes_last_share(tmp_path: Path) -> None:
    quality_curve = load_module()
    fake_checkpoints(tmp_path, {120: 40.0, 250: 80.0, 390: 120.0, 500: 160.0})
    asked = []

    def score(saved: list[str], name: str) -> dict:
        asked.append([Path(prefix).name for prefix in saved])
        return {}

    quality_curve.curve([0.2, 1, 2], 90.0, STARTED, str(tmp_path), score, window=0.5)

    # 0.2 minutes: none yet; minute 1 (90 s): saved since 45 s; minute 2 (180 s): since 90 s.
    assert asked == [["ckpt-250"], ["ckpt-390", "ckpt-500"]]


def test_the_curves_are_tabled_and_drawn(tmp_path: Path) -> None:
    def point(minutes: float, step: int, bleu: float) -> dict:
        return {"minutes": minutes, "step": step, "test_2016_flickr": {"bleu": bleu}}

    ours, peer = tmp_path / "ours.json", tmp_path / "peer.json"
    ours.write_text(
        "I0101 a log line\n"
        + json.dumps({"system": "t2t_keras", "budget": "30 reference minutes = 18 minutes here"})
        + "\n"
        + json.dumps({"system": "t2t_keras", "curve": [point(5, 500, 30.1), point(30, 3000, 40.2)]})
        + "\n"
    )
    peer.write_text(json.dumps({"system": "marian", "curve": [point(5, 400, 28.5)]}) + "\n")
    png = tmp_path / "quality.png"

    done = subprocess.run(
        [sys.executable, str(SCRIPT), f"--plot={png}", str(ours), str(peer)],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "| system | 5 min | 30 min |",
        "|---|---|---|",
        "| t2t_keras | 30.10 (500) | 40.20 (3000) |",
        "| marian | 28.50 (400) |  |",
    ]
    assert png.read_bytes().startswith(PNG_SIGNATURE)


def test_a_file_without_a_curve_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"system": "t2t_keras", "steps": 10}) + "\n")

    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(plain)], capture_output=True, text=True, timeout=60
    )

    assert done.returncode != 0
    assert "--curve_minutes" in done.stderr
