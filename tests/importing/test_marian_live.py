"""A fresh random Marian model made with transformers, imported and compared live:
only where the [peers] extra (torch, transformers) is installed, and ../shared's
Multi30k is there to train its SentencePiece models on."""

from __future__ import annotations

from pathlib import Path

import pytest
from marian_checks import check_logits, check_search, check_tokens
from marian_reference import MULTI30K, build_random_marian, hostile_lines, record_outputs

from t2t_keras.importing.training_dir import import_marian
from t2t_keras.run.loading import load_trained

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.skipif(not MULTI30K.is_dir(), reason="needs ../shared/data/multi30k")


@pytest.mark.parametrize("joint_vocab", [True, False])
def test_a_fresh_random_marian_model_imports_exactly(joint_vocab: bool, tmp_path: Path) -> None:
    model_dir = tmp_path / "marian"
    build_random_marian(model_dir, seed=7, joint_vocab=joint_vocab)
    english = (MULTI30K / "val.en").read_text(encoding="utf-8").splitlines()[:40]
    german = (MULTI30K / "val.de").read_text(encoding="utf-8").splitlines()[:2]
    lines = english + hostile_lines()
    expected = record_outputs(model_dir, lines, list(zip(english[:2], german, strict=True)))
    import_marian(str(model_dir), str(tmp_path / "train"))
    trained = load_trained(str(tmp_path / "train"), use_xla=False)
    check_logits(trained, expected)
    for side in ("inputs", "targets"):
        check_tokens(trained, expected, side)
    for search in ("greedy", "beam"):
        check_search(trained, expected, search)
