"""Text2TextProblem through t2t-datagen: shards, idempotence, kill -9, batches, _rev."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from t2t_keras import registry
from t2t_keras.data import records
from t2t_keras.models import TransformerHParams

# The user's problem, as README shows it: 20 lines in a --t2t_usr_dir package.
USER_PROBLEM = """
import os
import time

from t2t_keras import registry
from t2t_keras.data import Text2TextProblem


@registry.register_problem
class TinyParallelCorpus(Text2TextProblem):
    '''Numbers spelled out in English and as digits.'''

    approx_vocab_size = 80
    dataset_splits = {"train": 3, "dev": 1}

    def generate_samples(self, data_dir, tmp_dir, split):
        count = 600 if split == "train" else 60
        pause = float(os.environ.get("TINY_CORPUS_PAUSE", "0"))
        writing = os.path.exists(os.path.join(data_dir, "vocab.tiny_parallel_corpus.model"))
        for number in range(count):
            if pause and writing and number == 100:
                time.sleep(pause)  # Lets a test kill datagen while it writes shards.
            words = " ".join("zero one two three four five six seven eight nine".split()[int(d)]
                             for d in str(number))
            yield {"inputs": words, "targets": str(number)}
"""

HPARAMS = TransformerHParams(batch_size=64, max_length=32)


@pytest.fixture
def usr_dir(tmp_path: Path, clean_registry: None) -> Iterator[Path]:
    package = tmp_path / "tiny_corpus_problems"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(USER_PROBLEM))
    yield package
    sys.modules.pop(package.name, None)


def datagen(usr_dir: Path, data_dir: Path, **env: str) -> subprocess.Popen:
    script = Path(sys.executable).parent / "t2t-datagen"
    return subprocess.Popen(
        [
            str(script),
            f"--t2t_usr_dir={usr_dir}",
            "--problem=tiny_parallel_corpus",
            f"--data_dir={data_dir}",
            f"--tmp_dir={data_dir.parent / 'tmp'}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def finish(process: subprocess.Popen) -> str:
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    return stdout


def test_user_problem_through_datagen_to_batches(usr_dir: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    output = finish(datagen(usr_dir, data_dir))
    assert "wrote 600 train examples to 3 shard(s)" in output
    names = sorted(os.listdir(data_dir))
    assert names == [
        "tiny_parallel_corpus-dev-00000-of-00001",
        "tiny_parallel_corpus-train-00000-of-00003",
        "tiny_parallel_corpus-train-00001-of-00003",
        "tiny_parallel_corpus-train-00002-of-00003",
        "vocab.tiny_parallel_corpus.model",
    ]
    assert records.count_records([str(data_dir / n) for n in names if "-train-" in n]) == 600

    registry.import_usr_dir(str(usr_dir))
    problem = registry.problem("tiny_parallel_corpus")
    batch = next(
        iter(problem.dataset("train", HPARAMS.batching(), str(data_dir), deterministic=True))
    )
    assert set(batch) == {"inputs", "targets"}
    assert batch["inputs"].dtype.name == "int32" and batch["inputs"].shape == batch["targets"].shape
    assert batch["inputs"].shape[0] * batch["inputs"].shape[1] <= HPARAMS.batch_size
    vocab = problem.feature_encoders(str(data_dir))["targets"]
    decoded = vocab.decode(list(batch["targets"][0].numpy()))
    assert decoded.isdigit()

    # A second run has nothing to do and touches nothing.
    stamps = {name: os.stat(data_dir / name).st_mtime_ns for name in names}
    assert "nothing to do" in finish(datagen(usr_dir, data_dir))
    assert {name: os.stat(data_dir / name).st_mtime_ns for name in names} == stamps


def test_reversed_problem_swaps_inputs_and_targets(usr_dir: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    finish(datagen(usr_dir, data_dir))
    registry.import_usr_dir(str(usr_dir))
    forward = registry.problem("tiny_parallel_corpus")
    backward = registry.problem("tiny_parallel_corpus_rev")
    options = {"shuffle": False, "repeat": False, "deterministic": True}
    first = next(iter(forward.dataset("dev", HPARAMS.batching(), str(data_dir), **options)))
    first_rev = next(iter(backward.dataset("dev", HPARAMS.batching(), str(data_dir), **options)))
    np.testing.assert_array_equal(first["inputs"], first_rev["targets"])
    np.testing.assert_array_equal(first["targets"], first_rev["inputs"])
    encoders = backward.feature_encoders(str(data_dir))
    assert encoders["inputs"].decode(list(first_rev["inputs"][0].numpy())).isdigit()


def test_kill_9_leaves_no_shard_that_looks_complete(usr_dir: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process = datagen(usr_dir, data_dir, TINY_CORPUS_PAUSE="60")
    deadline = time.monotonic() + 120
    while not any(name.endswith(records.INCOMPLETE) for name in _listing(data_dir)):
        assert time.monotonic() < deadline and process.poll() is None, "no shard was started"
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not [
        name for name in _listing(data_dir) if "-train-" in name and "incomplete" not in name
    ]
    registry.import_usr_dir(str(usr_dir))
    with pytest.raises(Exception, match="no train shards"):
        registry.problem("tiny_parallel_corpus").data_files(str(data_dir), "train")
    # The rerun cleans up and completes.
    assert "wrote 600 train examples" in finish(datagen(usr_dir, data_dir))
    assert not [name for name in _listing(data_dir) if name.endswith(records.INCOMPLETE)]
    train = registry.problem("tiny_parallel_corpus").data_files(str(data_dir), "train")
    assert records.count_records(train) == 600


def _listing(directory: Path) -> list[str]:
    return os.listdir(directory) if directory.exists() else []
