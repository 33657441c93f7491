"""benchmarks/loss_curves.py: the last curve of each JSON lines file, drawn into one PNG."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "loss_curves.py"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def curve(*losses: float) -> list[dict[str, float]]:
    return [
        {"step": 100 * i, "seconds": 60.0 * i, "target_tokens": 250_000 * i, "loss": loss}
        for i, loss in enumerate(losses, start=1)
    ]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


def test_the_last_curve_of_each_file_is_drawn(tmp_path: Path) -> None:
    ours = tmp_path / "ours.json"
    ours.write_text(
        "I0101 step 100/1000000000  loss 6.1\n"
        + json.dumps({"system": "t2t_keras", "loss_curve": curve(9.0)})
        + "\n"
        + json.dumps({"system": "t2t_keras", "loss_curve": curve(6.1, 4.8, 4.0)})
        + "\n"
        + json.dumps({"note": "no curve here"})
        + "\n"
    )
    peer = tmp_path / "peer.json"  # No "system": named by its file.
    peer.write_text(json.dumps({"steps": 200, "loss_curve": curve(7.5, 6.0)}) + "\n")
    png = tmp_path / "curves.png"

    result = run(f"--plot={png}", str(ours), str(peer))

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{png}: t2t_keras (3 points), peer.json (2 points)"
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000


def test_a_file_without_a_curve_is_named(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text('step 100 loss 6.1\n{"steps": 100}\n')

    result = run(f"--plot={tmp_path / 'curves.png'}", str(log))

    assert result.returncode == 2
    assert f"{log} has no JSON line with a loss_curve" in result.stderr
    assert not (tmp_path / "curves.png").exists()
