"""An imported Marian model through every runtime, with the texts transformers gave
(tests/fixtures/marian): the SavedModel, a CTranslate2 export; and fine-tuned
with t2t-trainer --warm_start_from on pairs of its own. t2t-server runs the
slot search t2t-decoder does (test_marian.py), whose texts the server tests
hold it to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tensorflow as tf
from binaries import run_in_process

from t2t_keras.export.ctranslate2_export import export_ctranslate2, read_info, search_defaults
from t2t_keras.export.ctranslate2_runtime import CTranslate2Translator
from t2t_keras.export.saved_model import SIGNATURE, export_translator
from t2t_keras.run.loading import load_trained
from t2t_keras.search.settings import DecodeHParams

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "marian"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
BEAM = {
    line: text
    for line, text in zip(EXPECTED["beam"]["lines"], EXPECTED["beam"]["texts"], strict=True)
    if line.strip()
}


@pytest.fixture(scope="module")
def train_dir(marian_train_dir: Path) -> Path:
    return marian_train_dir


def test_the_saved_model_gives_marians_texts(train_dir: Path, tmp_path: Path) -> None:
    trained = load_trained(str(train_dir), use_xla=False)
    search = DecodeHParams().resolve(trained.hparams).search
    version = export_translator(trained, str(tmp_path / "export"), search, jit_compile=False)
    translate = tf.saved_model.load(version).signatures[SIGNATURE]
    outputs = translate(inputs=tf.constant(list(BEAM)))["outputs"].numpy()
    assert [output.decode("utf-8") for output in outputs] == list(BEAM.values())


def test_a_ctranslate2_export_gives_marians_texts(train_dir: Path, tmp_path: Path) -> None:
    """Biases, swish, the halves sinusoid and the logits bias written to its spec."""
    trained = load_trained(str(train_dir), use_xla=False)
    search = DecodeHParams().resolve(trained.hparams).search
    model_dir = export_ctranslate2(trained, str(tmp_path / "ct2"), search, "float32")
    defaults = search_defaults(read_info(model_dir))
    translator = CTranslate2Translator(model_dir, DecodeHParams().resolve(defaults))
    assert [t.text for t in translator.translate(list(BEAM))] == list(BEAM.values())


def test_fine_tuned_from_an_import_on_its_own_pairs(train_dir: Path, tmp_path: Path) -> None:
    """t2t-datagen --vocab_from encodes the pairs with its two SentencePiece models;
    t2t-trainer without --hparams_set takes its hparams; the result decodes."""
    raw = tmp_path / "raw"
    raw.mkdir()
    sources = [line for line in EXPECTED["lines"][:60] if line.strip()]
    for split, rows in (("train", sources[:48]), ("dev", sources[48:])):
        (raw / f"{split}.src").write_text("\n".join(rows) + "\n", encoding="utf-8")
        (raw / f"{split}.tgt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    problem = "--problem=text2text_tmpdir_two_vocabs"
    data, tuned = tmp_path / "data", tmp_path / "tuned"
    result = run_in_process(
        "t2t-datagen", problem, f"--vocab_from={train_dir}", f"--tmp_dir={raw}",
        f"--data_dir={data}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    result = run_in_process(
        "t2t-trainer", problem, f"--data_dir={data}", f"--output_dir={tuned}",
        f"--warm_start_from={train_dir}", "--train_steps=2", "--eval_steps=1", "--eval_every_steps=0", "--xla=off",
        "--eval_bleu_examples=0", "--hparams=batch_size=256,learning_rate_schedule=constant,"
        "learning_rate=0.001", "--mixed_precision=off",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    tuned_hparams = json.loads((tuned / "hparams.json").read_text())
    assert tuned_hparams["attention_bias"] and tuned_hparams["ffn_activation"] == "swish"
    encoded_with = data / "vocab.text2text_tmpdir_two_vocabs.inputs.model"
    assert encoded_with.read_bytes() == (train_dir / "vocab.source.model").read_bytes()
    trained = load_trained(str(tuned), use_xla=False)
    assert trained.checkpoint.endswith("ckpt-2")
