"""t2t-importer --from=marian: a random Marian model with every bias, layer norm and
final_logits_bias drawn, and what transformers did with it, recorded
(tests/fixtures/marian, made by tests/marian_reference.py). The import must
give its logits, its greedy and beam outputs and its tokenizer's ids, through
every runtime; no PyTorch is needed here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from binaries import run_in_process
from marian_checks import FIXTURE, check_logits, check_search, check_tokens

from t2t_keras.importing.training_dir import import_marian
from t2t_keras.run.loading import TrainedModel, load_trained

# (the Marian directory, what transformers did with it): one vocabulary, and one a side.
MODELS = {
    "joint": ("model", "expected"),
    "separate": ("model_separate_vocab", "expected_separate_vocab"),
}
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module", params=list(MODELS))
def imported(
    request: pytest.FixtureRequest,
    marian_train_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[TrainedModel, dict]:
    """The imported model and what transformers did with the original (the joint one
    imported by a t2t-importer process, the other by its library call)."""
    directory, expected = MODELS[request.param]
    train_dir = marian_train_dir
    if request.param != "joint":
        train_dir = tmp_path_factory.mktemp("imported") / "train"
        import_marian(str(FIXTURE / directory), str(train_dir))
    recorded = json.loads((FIXTURE / f"{expected}.json").read_text(encoding="utf-8"))
    return load_trained(str(train_dir), use_xla=False), recorded


def test_teacher_forced_logits_are_marians(imported: tuple[TrainedModel, dict]) -> None:
    check_logits(*imported)


def test_searches_give_marians_outputs(imported: tuple[TrainedModel, dict]) -> None:
    """Beam search on both models, greedy search on the joint one."""
    trained, expected = imported
    for search in ("beam", "greedy") if trained.hparams.shared_embeddings else ("beam",):
        check_search(trained, expected, search)


@pytest.mark.parametrize("side", ["inputs", "targets"])
def test_token_ids_are_the_marian_tokenizers(
    imported: tuple[TrainedModel, dict], side: str
) -> None:
    check_tokens(*imported, side)


def test_decoder_gives_the_same_texts(marian_train_dir: Path, tmp_path: Path) -> None:
    lines = [line for line in EXPECTED["beam"]["lines"] if line.strip()]
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_in_process(
        "t2t-decoder", f"--output_dir={marian_train_dir}", f"--decode_from_file={source}",
        f"--decode_to_file={output}", "--xla=off",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    texts = dict(zip(EXPECTED["beam"]["lines"], EXPECTED["beam"]["texts"], strict=True))
    assert output.read_text(encoding="utf-8").splitlines() == [texts[line] for line in lines]


def test_an_occupied_output_dir_is_refused_and_kept(marian_train_dir: Path) -> None:
    before = sorted(os.listdir(marian_train_dir))
    result = run_in_process(
        "t2t-importer", "--from=marian", f"--model_dir={FIXTURE / 'model'}",
        f"--output_dir={marian_train_dir}",
    )  # fmt: skip
    assert result.returncode == 2
    assert "already holds a run" in result.stderr
    assert sorted(os.listdir(marian_train_dir)) == before
