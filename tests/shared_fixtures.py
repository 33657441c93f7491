"""The trained models many tests read, each built once per test run.

Under pytest-xdist every worker may ask for them; whichever asks first builds
(the others wait on a lock), and the controller starts a process of its own
building them all at the start of the run (`start_building`), so that no
worker sits waiting while another trains. Run as a script, this module is
that process: `python tests/shared_fixtures.py ROOT`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from t2t_keras import registry
from t2t_keras.hparams.transformer import transformer_tiny
from t2t_keras.problems.number_words import TranslateNumberWordsEnDe
from t2t_keras.training import make_strategy
from t2t_keras.training.config import TrainConfig
from t2t_keras.training.trainer import train

NUMBER_WORDS = "translate_number_words_en_de"
TRAINED_STEPS = 200


@contextlib.contextmanager
def built_once(root: Path, name: str) -> Iterator[Path | None]:
    """root/name, built once per test run, also by several processes at once.

    Yields the directory's path if the caller must build it (it is locked from
    the other processes meanwhile), else None; the directory is then complete.
    A builder that dies leaves no mark of completion: the next caller builds.
    """
    done = root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            yield None
            return
        yield root / name
        done.touch()


def number_words_data(root: Path) -> Path:
    """data_dir holding the vocabulary and shards of translate_number_words_en_de."""
    with built_once(root, "number_words") as directory:
        if directory is not None:
            registry.problem(NUMBER_WORDS).generate_data(
                str(directory / "data"), str(directory / "tmp")
            )
    return root / "number_words" / "data"


def trained_dir(root: Path) -> Path:
    """output_dir of transformer_tiny trained 200 steps on number words (ckpt-50..200)."""
    data = number_words_data(root)
    with built_once(root, "trained") as directory:
        if directory is not None:
            _train_tiny(data, directory / "train")
    return root / "trained" / "train"


def pre_norm_trained_dir(root: Path) -> Path:
    """output_dir of a pre-norm tiny model with two vocabularies (`_train_pre_norm`)."""
    with built_once(root, "pre_norm") as directory:
        if directory is not None:
            _train_pre_norm(directory)
    return root / "pre_norm" / "train"


def start_building(root: Path, threads: int) -> subprocess.Popen:
    """Builds every shared fixture into root in a process of its own, started now.

    Its TensorFlow uses `threads` intra-op threads, as a worker's does, and its
    output goes to root/shared_fixtures.log.
    """
    env = {**os.environ, "TF_NUM_INTRAOP_THREADS": str(threads)}
    with open(root / "shared_fixtures.log", "w") as log:
        return subprocess.Popen(
            [sys.executable, __file__, str(root)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).parent,
        )


class NumberWordsTwoVocabularies(TranslateNumberWordsEnDe):
    """The number-words problem with a vocabulary per language (never registered)."""

    data_name = "number_words_two_vocabularies"
    shared_vocab = False
    num_samples = {"train": 3000, "dev": 50, "test": 50}  # noqa: RUF012
    dataset_splits = {"train": 1, "dev": 1, "test": 1}  # noqa: RUF012


def _train_pre_norm(root: Path) -> None:
    """A pre-norm tiny model with two vocabularies, three embedding matrices and
    learned positions, trained 80 steps on NumberWordsTwoVocabularies into
    root/train; its data_dir is root/data."""
    problem = NumberWordsTwoVocabularies()
    problem.generate_data(str(root / "data"), str(root / "tmp"))
    hparams = dataclasses.replace(
        transformer_tiny(),
        layer_norm_position="pre",
        shared_embeddings=False,
        tie_target_embeddings=False,
        position_encoding="learned",
        max_length=64,
    )
    config = TrainConfig(
        train_steps=80,
        eval_steps=1,  # The end of training evaluates one dev batch, not the whole split.
        eval_every_steps=0,
        eval_bleu_examples=0,
        random_seed=1,
        xla="off",  # Compiling each bucket's attention costs more than a short run saves.
    )
    train(
        problem,
        "transformer",
        hparams,
        str(root / "data"),
        str(root / "train"),
        make_strategy("one_device"),
        config,
    )


def _train_tiny(data_dir: Path, output_dir: Path) -> None:
    config = TrainConfig(
        train_steps=TRAINED_STEPS,
        eval_steps=1,  # The end of training evaluates one dev batch, not the whole split.
        eval_every_steps=0,
        eval_bleu_examples=0,
        save_checkpoints_steps=50,
        random_seed=1,
        xla="off",  # As above; decoding tests choose their own XLA setting.
    )
    train(
        registry.problem(NUMBER_WORDS),
        "transformer",
        transformer_tiny(),
        str(data_dir),
        str(output_dir),
        make_strategy("one_device"),
        config,
        hparams_set="transformer_tiny",
    )


if __name__ == "__main__":
    from t2t_keras import catalog
    from t2t_keras.training import split_cpu

    catalog.load()
    split_cpu(2)  # As in every worker (conftest.py): the same models as a worker builds.
    shared = Path(sys.argv[1])
    trained_dir(shared)
    pre_norm_trained_dir(shared)
