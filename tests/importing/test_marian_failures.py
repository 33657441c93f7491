"""What t2t-importer refuses: one paragraph saying what and why, exit status 2, and
nothing written."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from binaries import run_in_process

from t2t_keras.errors import UserError
from t2t_keras.importing.weights_file import read_weights

MODEL = Path(__file__).resolve().parents[1] / "fixtures" / "marian" / "model"


def edit_json(name: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(directory: Path) -> None:
        path = directory / name
        value = json.loads(path.read_text(encoding="utf-8"))
        change(value)
        path.write_text(json.dumps(value), encoding="utf-8")

    return edit


def drop_last_piece(vocab: dict) -> None:
    del vocab[max(vocab, key=vocab.get)]


CASES = {
    "missing file": (lambda d: (d / "source.spm").unlink(), "lacks source.spm"),
    "no weights": (lambda d: (d / "model.safetensors").unlink(), "model.safetensors or"),
    "layernorm_embedding": (
        edit_json("config.json", lambda c: c.update(layernorm_embedding=True)),
        "layernorm_embedding=True",
    ),
    "unknown activation": (
        edit_json("config.json", lambda c: c.update(activation_function="gelu_new")),
        "activation_function='gelu_new'",
    ),
    "another model type": (
        edit_json("config.json", lambda c: c.update(model_type="bart")),
        "model_type='bart'",
    ),
    "vocabulary of another size": (edit_json("vocab.json", drop_last_piece), "vocab.json"),
    "damaged weights": (
        lambda d: (d / "model.safetensors").write_bytes(b"\x00" * 64),
        "cannot be read as safetensors",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_refused_in_one_paragraph_and_nothing_written(
    case: str, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    shutil.copytree(MODEL, model_dir)
    damage, named = CASES[case]
    damage(model_dir)
    output_dir = tmp_path / "train"
    result = run_in_process(
        "t2t-importer", "--from=marian", f"--model_dir={model_dir}", f"--output_dir={output_dir}"
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert named in result.stderr
    assert "Traceback" not in result.stderr
    assert not output_dir.exists()
    assert [path.name for path in tmp_path.iterdir()] == ["model"]  # Nothing half-written.


def test_a_pytorch_pickle_without_pytorch_says_how_to_convert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(b"not read")
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails, as without it.
    with pytest.raises(UserError, match="save_pretrained"):
        read_weights(str(path))


def test_an_occupied_output_dir_is_refused_before_reading(tmp_path: Path) -> None:
    output_dir = tmp_path / "train"
    output_dir.mkdir()
    (output_dir / "notes.txt").write_text("mine", encoding="utf-8")
    result = run_in_process(
        "t2t-importer", "--from=marian", f"--model_dir={MODEL}", f"--output_dir={output_dir}"
    )
    assert result.returncode == 2 and "already holds files" in result.stderr
    assert [path.name for path in output_dir.iterdir()] == ["notes.txt"]
