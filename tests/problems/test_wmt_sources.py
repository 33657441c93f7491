"""The WMT problems' sources, offline: plain text and a real TFDS dataset on disk.

The TFDS dataset is written by a real tensorflow-datasets builder that reads
local files (tests/local_tfds.py), under the name, config and version of
TFDS's wmt14_translate; the problem then reads it with `tfds.load` as it
reads the real one. The archives are tested in test_translate_wmt.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from binaries import assert_user_error, run_in_process
from local_tfds import write_wmt14

from t2t_keras import registry
from t2t_keras.data import records

PAIRS = {
    # And one more train pair, written by `tfds_dir`, whose German is not UTF-8.
    "train": [
        (f"The house number {i} is red.", f"Das Haus Nummer {i} ist rot.") for i in range(60)
    ],
    "validation": [(f"A cat sees {i} dogs.", f"Eine Katze sieht {i} Hunde.") for i in range(12)],
    "test": [(f"We walk {i} miles.", f"Wir laufen {i} Meilen.") for i in range(8)],
}


@pytest.fixture(scope="module")
def tfds_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TFDS data directory holding a prepared wmt14_translate/de-en."""
    corpus_dir = tmp_path_factory.mktemp("corpus")
    for split, pairs in PAIRS.items():
        for index, language in enumerate(("en", "de")):
            text = "".join(f"{pair[index]}\n" for pair in pairs).encode()
            if split == "train":
                text += b"A sentence.\n" if language == "en" else b"Kein UTF-8: \xff\n"
            (corpus_dir / f"{split}.{language}").write_bytes(text)
    data_dir = tmp_path_factory.mktemp("tensorflow_datasets")
    write_wmt14(corpus_dir, data_dir)
    return data_dir


def datagen(problem: str, data_dir: Path, tmp_dir: Path, *flags: str):
    return run_in_process(
        "t2t-datagen",
        f"--problem={problem}",
        f"--data_dir={data_dir}",
        f"--tmp_dir={tmp_dir}",
        *flags,
    )


# Marks local text; the vocabulary would normalize its double space and ligature away.
LOCAL = "  (local ﬁle)"


def local_corpus(tmp_dir: Path, test: bool = True) -> None:
    """train, newstest2013 and (optionally) newstest2014 as plain text in tmp_dir."""
    tmp_dir.mkdir(exist_ok=True)
    stems = {"train": "train", "validation": "newstest2013", "test": "newstest2014"}
    for split, stem in stems.items():
        if split == "test" and not test:
            continue
        for index, language in enumerate(("en", "de")):
            lines = "".join(f"{pair[index]}{LOCAL}\n" for pair in PAIRS[split])
            (tmp_dir / f"{stem}.{language}").write_text(lines, encoding="utf-8")


def test_tfds_source_reads_a_prepared_dataset_and_is_recorded(
    tfds_dir: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    # Nothing in tmp_dir: auto chooses tensorflow-datasets, found prepared in --tfds_data_dir.
    result = datagen(
        "translate_ende_wmt8k", data_dir, tmp_path / "empty", f"--tfds_data_dir={tfds_dir}"
    )
    assert result.returncode == 0, result.stderr
    assert "translate_ende_wmt8k: reading the tfds source (tensorflow-datasets" in result.stdout
    # The pair whose German is not UTF-8 is skipped and counted, as local files' are.
    assert "wrote 60 train examples to 100 shard(s); skipped 1 not valid Unicode" in result.stdout
    problem = registry.problem("translate_ende_wmt8k")
    counts = {
        split: records.count_records(problem.data_files(str(data_dir), split))
        for split in ("train", "dev", "test")
    }
    assert counts == {"train": 60, "dev": 12, "test": 8}
    # English in, German out, whatever order TFDS's supervised keys have (TFDS
    # shuffles the examples when it prepares a dataset).
    assert sorted(problem.text_examples(str(data_dir), "dev", -1)) == sorted(PAIRS["validation"])
    backward = registry.problem("translate_ende_wmt8k_rev").text_examples(str(data_dir), "dev", -1)
    assert sorted(backward) == sorted((de, en) for en, de in PAIRS["validation"])
    record = json.loads((data_dir / "translate_ende_wmt8k-source.json").read_text())
    assert record["source"] == "tfds"
    assert "wmt14_translate/de-en" in record["from"]
    # The test split as plain files, for t2t-bleu and --decode_from_file.
    english, german = (
        (data_dir / f"newstest2014.{language}").read_text().splitlines()
        for language in ("en", "de")
    )
    assert sorted(zip(english, german, strict=True)) == sorted(PAIRS["test"])


def test_local_files_win_and_a_data_dir_never_mixes_sources(tfds_dir: Path, tmp_path: Path) -> None:
    data_dir, tmp_dir = tmp_path / "data", tmp_path / "tmp"
    local_corpus(tmp_dir, test=False)
    # A dev file missing is said before any vocabulary or shard is made.
    (tmp_dir / "newstest2013.de").rename(tmp_dir / "held_back")
    result = datagen("translate_ende_wmt8k", data_dir, tmp_dir)
    assert_user_error(result, "newstest2013.de is missing", "train.{en,de}, newstest2013")
    assert not list(data_dir.glob("*translate_ende_wmt8k-train*"))
    assert not list(data_dir.glob("vocab.*"))
    (tmp_dir / "held_back").rename(tmp_dir / "newstest2013.de")
    result = datagen("translate_ende_wmt8k", data_dir, tmp_dir, f"--tfds_data_dir={tfds_dir}")
    assert result.returncode == 0, result.stderr
    problem = registry.problem("translate_ende_wmt8k")
    # Dev text as the corpus has it, not decoded from ids: what evaluation decodes and scores.
    first = PAIRS["validation"][0]
    assert problem.text_examples(str(data_dir), "dev", 1) == [(first[0] + LOCAL, first[1] + LOCAL)]
    # Without newstest2014 the test split is not generated (and said so).
    assert not list(data_dir.glob("translate_ende_wmt8k-test-*"))
    assert "local" in (data_dir / "translate_ende_wmt8k-source.json").read_text()

    # Another source into the same data_dir is refused, nothing written.
    before = sorted(path.name for path in data_dir.iterdir())
    result = datagen(
        "translate_ende_wmt8k",
        data_dir,
        tmp_dir,
        "--data_source=tfds",
        f"--tfds_data_dir={tfds_dir}",
    )
    assert_user_error(result, "built from the 'local' source", "never mixed", "--data_source=local")
    assert sorted(path.name for path in data_dir.iterdir()) == before

    # Auto keeps to the recorded source: adding newstest2014 later completes the data.
    local_corpus(tmp_dir)
    result = datagen("translate_ende_wmt8k", data_dir, tmp_dir)
    assert result.returncode == 0, result.stderr
    assert records.count_records(problem.data_files(str(data_dir), "test")) == 8


def test_without_network_or_local_files_tfds_fails_fast_saying_what_to_do(
    tmp_path: Path,
) -> None:
    start = time.monotonic()
    result = datagen(
        "translate_ende_wmt_bpe37k",
        tmp_path / "data",
        tmp_path / "tmp",
        f"--tfds_data_dir={tmp_path / 'tensorflow_datasets'}",
    )
    assert time.monotonic() - start < 60
    assert_user_error(
        result,
        "tensorflow-datasets could not prepare wmt14_translate/de-en",
        "train.{en,de}, newstest2013.{en,de}, newstest2014.{en,de}",
        "--data_source=archives",
    )
    assert not list((tmp_path / "data").glob("*-train-*"))


def test_other_problems_have_one_source_and_t2t_names_exist(tmp_path: Path) -> None:
    result = datagen("translate_number_words_en_de", tmp_path, tmp_path, "--data_source=tfds")
    assert_user_error(result, "reads one")
    ende32k, ende8k = (registry.problem(f"translate_ende_wmt{size}") for size in ("32k", "8k"))
    assert (ende32k.approx_vocab_size, ende8k.approx_vocab_size) == (32_000, 8_000)
    assert ende32k.sources() == ("local", "archives", "tfds")
    enfr = registry.problem("translate_enfr_wmt32k")
    assert enfr.tfds_dataset.name == "wmt14_translate/fr-en"
    assert enfr.local_files.names() == "train.{en,fr}, newstest2013.{en,fr}, newstest2014.{en,fr}"
