"""WMT14 problems, offline: archives in the real WMT layout are put in tmp_dir by hand."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from local_tfds import write_archive

from t2t_keras import registry
from t2t_keras.data import records
from t2t_keras.errors import UserError

SHARED_WMT = Path(__file__).resolve().parents[3] / "shared" / "data" / "wmt"


def sentences(count: int, language: str, offset: int) -> list[str]:
    """Real news sentences when ../shared is there, numbered stand-ins otherwise."""
    path = SHARED_WMT / f"newstest2012.{language}"
    if path.exists():
        return path.read_text(encoding="utf-8").splitlines()[offset : offset + count]
    return [f"{language} sentence {offset + i} über Straßen" for i in range(count)]


@pytest.fixture(scope="module")
def wmt_tmp_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tmp_dir as t2t-datagen leaves it after downloading the En-De archives."""
    tmp_dir = tmp_path_factory.mktemp("tmp")
    corpora = {
        "training-parallel-europarl-v7.tgz": ("training/europarl-v7.de-en.{}", 0, 120),
        "training-parallel-commoncrawl.tgz": ("commoncrawl.de-en.{}", 120, 80),
        "training-parallel-nc-v9.tgz": ("training/news-commentary-v9.de-en.{}", 200, 50),
        "dev.tgz": ("dev/newstest2013.{}", 300, 30),
    }
    for name, (pattern, offset, count) in corpora.items():
        english, german = sentences(count, "en", offset), sentences(count, "de", offset)
        if name.startswith("training-parallel-commoncrawl"):
            english[5] = ""  # Crawled data has blank sides; training skips them.
        write_archive(tmp_dir / name, {pattern.format("en"): english, pattern.format("de"): german})
    write_archive(
        tmp_dir / "test-full.tgz",
        {
            "test-full/newstest2014-deen-src.en.sgm": sentences(20, "en", 400),
            "test-full/newstest2014-deen-ref.de.sgm": sentences(20, "de", 400),
        },
        sgm=True,
    )
    return tmp_dir


def test_ende_generates_from_the_wmt_archives(wmt_tmp_dir: Path, tmp_path: Path) -> None:
    problem = registry.problem("translate_ende_wmt_bpe37k")
    problem.generate_data(str(tmp_path), str(wmt_tmp_dir))
    counts = {
        split: records.count_records(problem.data_files(str(tmp_path), split))
        for split in ("train", "dev", "test")
    }
    assert counts == {"train": 120 + 79 + 50, "dev": 30, "test": 20}
    assert len(problem.data_files(str(tmp_path), "train")) == 100
    vocab = problem.feature_encoders(str(tmp_path))["targets"]
    reference = sentences(20, "de", 400)[0]
    assert vocab.decode(vocab.encode(reference)) == reference

    # German->English reads the same files, sides swapped.
    options = {"shuffle": False, "repeat": False, "deterministic": True}
    hparams = registry.hparams("transformer_tiny")
    forward = next(iter(problem.dataset("test", hparams.batching(), str(tmp_path), **options)))
    backward_problem = registry.problem("translate_ende_wmt_bpe37k_rev")
    backward = next(
        iter(backward_problem.dataset("test", hparams.batching(), str(tmp_path), **options))
    )
    assert (forward["inputs"].numpy() == backward["targets"].numpy()).all()


def test_missing_archive_offline_names_the_file_and_its_url(tmp_path: Path) -> None:
    problem = registry.problem("translate_ende_wmt_bpe37k")
    corpus = problem.corpora["dev"][0]
    nowhere = type(corpus)(
        (tmp_path / "nowhere" / "dev.tgz").as_uri(), corpus.source, corpus.target
    )
    with pytest.raises(
        UserError, match=r"dev\.tgz is missing and could not be downloaded"
    ) as error:
        next(nowhere.pairs(str(tmp_path / "tmp")))
    assert "put it at" in str(error.value)
    assert not os.listdir(tmp_path / "tmp")


def test_enfr_corpora_are_the_papers() -> None:
    corpora = registry.problem("translate_enfr_wmt32k").corpora
    names = [os.path.basename(corpus.url) for corpus in corpora["train"]]
    assert names == [
        "training-parallel-europarl-v7.tgz",
        "training-parallel-commoncrawl.tgz",
        "training-parallel-nc-v9.tgz",
        "training-parallel-un.tgz",
        "training-giga-fren.tar",
    ]
    assert corpora["test"][0].target == "test-full/newstest2014-fren-ref.fr.sgm"
    assert corpora["dev"][0].target == "dev/newstest2013.fr"
