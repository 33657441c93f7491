"""Writers killed or out of disk space: nothing partial looks complete, nothing earlier is lost.

Each writing binary runs as a real process and is killed (SIGKILL) while it
writes; the same command run again must then finish the job. To save process
start-ups, the reruns and most disk-full runs call the binaries in-process
(tests/binaries.py); t2t-avg-checkpoints runs out of room as a real process.
A full disk is simulated by the file-size limit (`ulimit -f`, RLIMIT_FSIZE):
writes past it fail with EFBIG as a full disk's fail with ENOSPC, and go
through the same error path; Python ignores the SIGXFSZ that would kill a
C program instead.
"""

from __future__ import annotations

import contextlib
import errno
import filecmp
import json
import re
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import ctranslate2
import tensorflow as tf
from binaries import assert_user_error, run_in_process, script

from t2t_keras.bin.program import no_room_message
from t2t_keras.data.vocab import SentencePieceVocabulary
from t2t_keras.problems.number_words import english

PROBLEM = "translate_number_words_en_de"
NO_ROOM = "failed: File too large"
# Above what TensorFlow writes on the side (AutoGraph's sources, ~10 KB), below
# a checkpoint (~1 MB of weights) and the decoder output of LINES (~25 KB).
LIMIT = 16_000
LINES = [english(number) for number in range(100_001, 1_000_000, 1_300)]


def kill_when(
    binary: str,
    args: list[str],
    started: Callable[[str], bool],
    log: Path,
    undo: Callable[[], None] | None = None,
) -> None:
    """Runs an installed binary and SIGKILLs it as soon as `started(stderr so far)` holds.

    A binary that ended first fails the test, unless `undo` is given: then
    what it wrote is undone and it is run again (three times at most), for
    writes so short that a busy machine can miss them.
    """
    for _ in range(3 if undo else 1):
        with open(log, "w") as stderr:
            process = subprocess.Popen(
                [str(script(binary)), *args], stdout=subprocess.DEVNULL, stderr=stderr
            )
        deadline = time.monotonic() + 240
        while process.poll() is None and time.monotonic() < deadline:
            if started(log.read_text()):
                process.kill()
                break
            time.sleep(0.002)
        process.wait()
        if process.returncode != 0 or undo is None:
            break
        undo()
    assert process.returncode == -signal.SIGKILL, f"not killed in time:\n{log.read_text()[-3000:]}"


def hidden(directory: Path, name: str) -> list[Path]:
    """What writers of `name` keep in `directory` while they write (files.temporary_path_for)."""
    return sorted(directory.glob(f".{name}.*@*.tmp")) + sorted(directory.glob(f".{name}.*@*.old"))


@contextlib.contextmanager
def file_size_limit(size: int) -> Iterator[None]:
    """Writes past `size` bytes of any file fail with EFBIG meanwhile, as on a full disk."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def same_tree(first: Path, second: Path) -> bool:
    """Whether two directories hold the same names with the same bytes."""
    comparison = filecmp.dircmp(first, second)
    if comparison.left_only or comparison.right_only or comparison.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(first, second, comparison.common_files, shallow=False)
    return (
        not mismatch
        and not errors
        and all(same_tree(first / name, second / name) for name in comparison.common_dirs)
    )


def test_avg_checkpoints_killed_then_rerun_then_disk_full(
    trained_dir: Path, tmp_path: Path
) -> None:
    averaged = tmp_path / "averaged"
    args = [f"--output_dir={trained_dir}", f"--averaged_dir={averaged}"]
    kill_when(
        "t2t-avg-checkpoints",
        [*args, "--num_last_checkpoints=2"],
        lambda _: bool(hidden(tmp_path, "averaged")),
        tmp_path / "killed.log",
        undo=lambda: shutil.rmtree(averaged),
    )
    assert not averaged.exists()
    assert hidden(tmp_path, "averaged"), "killed while writing: its staging directory is left"

    rerun = run_in_process("t2t-avg-checkpoints", *args, "--num_last_checkpoints=2")
    assert rerun.returncode == 0, rerun.stderr
    assert not hidden(tmp_path, "averaged"), "the rerun removes what the killed run left"
    record = json.loads((averaged / "averaged.json").read_text())
    assert [Path(path).name for path in record["checkpoints"]] == ["ckpt-150", "ckpt-200"]
    reader = tf.train.load_checkpoint(str(averaged / "ckpt-200"))
    for name in reader.get_variable_to_shape_map():
        reader.get_tensor(name)

    earlier = shutil.copytree(averaged, tmp_path / "earlier")
    # A real process: it must take the limit's EFBIG as an error, not die of SIGXFSZ.
    full = subprocess.run(
        [str(script("t2t-avg-checkpoints")), *args, "--num_last_checkpoints=3"],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT)),
    )
    assert_user_error(full, NO_ROOM, "run the same command again")
    assert same_tree(averaged, earlier)
    assert not hidden(tmp_path, "averaged")


def test_saved_model_export_killed_then_rerun_then_disk_full(
    trained_dir: Path, tmp_path: Path
) -> None:
    export_dir = tmp_path / "export"
    args = [f"--output_dir={trained_dir}", f"--export_dir={export_dir}", "--xla=off"]
    kill_when("t2t-exporter", args, lambda _: bool(hidden(export_dir, "export")), tmp_path / "log")
    assert [path.name for path in export_dir.iterdir() if not path.name.startswith(".")] == []
    assert hidden(export_dir, "export")

    rerun = run_in_process("t2t-exporter", *args)
    assert rerun.returncode == 0, rerun.stderr
    (version,) = export_dir.iterdir()
    assert rerun.stdout.splitlines()[0] == str(version)
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

    translate = tf.saved_model.load(str(version)).signatures["serving_default"]
    assert translate(inputs=tf.constant(["forty two"]))["outputs"].shape == [1]

    earlier = shutil.copytree(version, tmp_path / "earlier")
    with file_size_limit(LIMIT):
        full = run_in_process("t2t-exporter", *args)
    assert_user_error(full, NO_ROOM, f"writing {export_dir}/.export.")
    assert list(export_dir.iterdir()) == [version]
    assert same_tree(version, earlier)


def test_ctranslate2_export_killed_then_rerun_then_disk_full(
    trained_dir: Path, tmp_path: Path
) -> None:
    model_dir = tmp_path / "ct2"
    args = [f"--output_dir={trained_dir}", "--export_format=ctranslate2"]
    kill_when(
        "t2t-exporter",
        [*args, f"--export_dir={model_dir}"],
        lambda _: bool(hidden(tmp_path, "ct2")),
        tmp_path / "killed.log",
    )
    assert not model_dir.exists()
    assert hidden(tmp_path, "ct2")

    rerun = run_in_process("t2t-exporter", *args, f"--export_dir={model_dir}")
    assert rerun.returncode == 0, rerun.stderr
    assert not hidden(tmp_path, "ct2")
    translator = ctranslate2.Translator(str(model_dir))
    (result,) = translator.translate_batch([["▁forty", "▁two", "</s>"]], max_decoding_length=5)
    assert len(result.hypotheses) == 1

    earlier = shutil.copytree(model_dir, tmp_path / "earlier")
    with file_size_limit(LIMIT):
        full = run_in_process(
            "t2t-exporter", *args, f"--export_dir={model_dir}", "--quantization=int8"
        )
    assert_user_error(full, NO_ROOM, f"writing {model_dir} failed")
    assert same_tree(model_dir, earlier)
    assert not hidden(tmp_path, "ct2")


def test_decode_to_file_killed_then_rerun_then_disk_full(trained_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "few.en").write_text("forty two\nseven\n")
    (tmp_path / "many.en").write_text("".join(f"{line}\n" for line in LINES))
    out = tmp_path / "out.de"
    out.write_bytes(b"an earlier output\n")
    args = [f"--output_dir={trained_dir}", f"--decode_to_file={out}", "--xla=off"]
    kill_when(
        "t2t-decoder",
        [*args, f"--decode_from_file={tmp_path / 'many.en'}"],
        lambda log: "Decoding with" in log,
        tmp_path / "killed.log",
    )
    assert out.read_bytes() == b"an earlier output\n"

    rerun = run_in_process("t2t-decoder", *args, f"--decode_from_file={tmp_path / 'few.en'}")
    assert rerun.returncode == 0, rerun.stderr
    decoded = out.read_bytes()
    assert len(decoded.splitlines()) == 2
    with file_size_limit(LIMIT):
        full = run_in_process(
            "t2t-decoder",
            *args,
            f"--decode_from_file={tmp_path / 'many.en'}",
            "--decode_hparams=beam_size=1,batch_size=64",
        )
    assert_user_error(full, f"writing {out} {NO_ROOM}")
    assert out.read_bytes() == decoded
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "few.en",
        "killed.log",
        "many.en",
        "out.de",
    ]


def test_datagen_killed_in_vocabulary_training_then_in_shards_then_disk_full(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    args = [f"--problem={PROBLEM}", f"--data_dir={data_dir}", f"--tmp_dir={tmp_path / 'tmp'}"]
    kill_when(
        "t2t-datagen", args, lambda log: "training the inputs vocabulary" in log, tmp_path / "1.log"
    )
    assert not data_dir.exists() or not any(data_dir.iterdir())

    kill_when(
        "t2t-datagen", args, lambda _: bool(list(data_dir.glob("*.incomplete"))), tmp_path / "2.log"
    )
    vocab_path = data_dir / f"vocab.{PROBLEM}.model"
    vocab = SentencePieceVocabulary.load(str(vocab_path))
    assert vocab.decode(vocab.encode("forty two")) == "forty two"
    assert not list(data_dir.glob(f"{PROBLEM}-train-*-of-00002")), "no shard looks complete"
    vocab_bytes = vocab_path.read_bytes()

    with file_size_limit(300_000):  # The vocabulary fits, a train shard does not.
        full = run_in_process("t2t-datagen", *args)
    assert_user_error(full, f"writing {data_dir}/{PROBLEM}-train-", NO_ROOM)
    assert sorted(path.name for path in data_dir.iterdir()) == [vocab_path.name]
    assert vocab_path.read_bytes() == vocab_bytes

    rerun = run_in_process("t2t-datagen", *args)
    assert rerun.returncode == 0, rerun.stderr
    shards = sorted(path.name for path in data_dir.glob(f"{PROBLEM}-*"))
    assert shards == [
        f"{PROBLEM}-{split}-0000{index}-of-0000{count}"
        for split, count in (("dev", 1), ("test", 1), ("train", 2))
        for index in range(count)
    ]
    assert vocab_path.read_bytes() == vocab_bytes


def test_trainer_out_of_disk_space_keeps_its_checkpoints(
    trained_dir: Path, number_words_data: Path, tmp_path: Path
) -> None:
    output_dir = shutil.copytree(trained_dir, tmp_path / "train")
    before = tf.train.get_checkpoint_state(str(output_dir)).all_model_checkpoint_paths
    with file_size_limit(1_000_000):
        full = run_in_process(
            "t2t-trainer",
            f"--problem={PROBLEM}",
            "--hparams_set=transformer_tiny",
            f"--data_dir={number_words_data}",
            f"--output_dir={output_dir}",
            "--train_steps=205",
            "--save_checkpoints_steps=5",
            "--eval_steps=1",
            "--eval_bleu_examples=0",
            "--random_seed=1",
            "--xla=off",
            "--distribution_strategy=one_device",  # As the run it goes on from.
        )
    assert_user_error(full, NO_ROOM, "run the same command again")
    assert re.search(r"writing \S+/ckpt-205", full.stderr), full.stderr
    state = tf.train.get_checkpoint_state(str(output_dir))
    assert list(state.all_model_checkpoint_paths) == list(before)
    assert not list(Path(output_dir).glob("ckpt-205*"))  # Nothing of the failed save is left.
    for path in before:
        reader = tf.train.load_checkpoint(path)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)


def test_no_room_errors_of_python_and_tensorflow_become_one_message() -> None:
    full_disk = OSError(errno.ENOSPC, "No space left on device", "/data/out.de")
    assert no_room_message(full_disk).startswith(
        "writing /data/out.de failed: No space left on device. "
    )
    saving = tf.errors.ResourceExhaustedError(
        None, None, "{{function_node SaveV2}} /t/ckpt-9_temp/part-0; No space left on device"
    )
    assert no_room_message(saving).startswith("writing /t/ckpt-9_temp/part-0 failed: No space")
    try:
        try:
            raise tf.errors.OutOfRangeError(None, None, "/t/shard.incomplete; File too large")
        except tf.errors.OpError as error:
            raise RuntimeError("closing the writer failed") from error
    except RuntimeError as wrapped:
        assert "writing /t/shard.incomplete failed: File too large" in no_room_message(wrapped)
    assert no_room_message(OSError(errno.EACCES, "Permission denied", "/x")) is None
    assert no_room_message(tf.errors.OutOfRangeError(None, None, "End of sequence")) is None
