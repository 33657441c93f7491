"""The Problem base class: where a task's data comes from and how it is batched."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import tensorflow as tf
from absl import logging

from t2t_keras import registry
from t2t_keras.data import batching, records
from t2t_keras.data.batching import BatchingConfig, plain_function
from t2t_keras.data.tree_tokens import TreeTokens
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.files import read_text_lines
from t2t_keras.modes import DATA_SOURCE_AUTO

# Chains of one training input pipeline at most (`_chains`).
_MAX_CHAINS = 8


class Problem:
    """A task: its data source, its vocabularies, its splits and its metrics.

    Subclasses are registered with `@registry.register_problem` and looked up
    with `registry.problem(name)`; `<name>_rev` gives the same problem with
    inputs and targets swapped, reading the same files.

    Args:
      was_reversed: swap inputs and targets (De->En from an En->De problem).
    """

    # Shards written per split; a split with 0 shards is not generated. Add
    # "test" for problems that have a test set.
    dataset_splits: dict[str, int] = {"train": 10, "dev": 1}  # noqa: RUF012

    # The name the files carry: the forward problem's, also when reversed. The
    # registry sets it on registration; an unregistered subclass has its
    # snake-case class name unless its body sets one.
    data_name: ClassVar[str] = "problem"

    # The text kept beside the shards (`text_examples`) serves the reversed
    # problem too, sides swapped: true where the reference is the target.
    kept_text_reverses: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "data_name" not in cls.__dict__:
            cls.data_name = registry.default_name(cls)

    def __init__(self, was_reversed: bool = False) -> None:
        self.was_reversed = was_reversed

    @property
    def name(self) -> str:
        """The registered name, with `_rev` when reversed."""
        return f"{self.data_name}_rev" if self.was_reversed else self.data_name

    def __repr__(self) -> str:
        return f"<problem {self.name}>"

    # What subclasses provide.

    def generate_data(self, data_dir: str, tmp_dir: str) -> None:
        """Writes the vocabularies and every split's shards into data_dir."""
        raise NotImplementedError(f"{type(self).__name__} does not generate data.")

    def use_source(self, data_source: str, tfds_data_dir: str | None = None) -> None:
        """Where to generate from (--data_source, --tfds_data_dir): a problem of one
        source takes only "auto" and no TFDS directory (`TranslateProblem` has several)."""
        if data_source != DATA_SOURCE_AUTO or tfds_data_dir:
            raise UserError(
                "--data_source and --tfds_data_dir choose among the sources of a translation "
                f"problem that has several (the WMT ones); problem {self.name!r} reads one."
            )

    def feature_encoders(self, data_dir: str) -> dict[str, Vocabulary]:
        """{"inputs": vocabulary, "targets": vocabulary}, as seen by this direction."""
        raise NotImplementedError(f"{type(self).__name__} has no vocabularies.")

    def max_length(self, model_max_length: int) -> int:
        """The longest example in tokens: training drops longer ones, other splits cut them.

        The model's max_length by default; a problem whose sequences are known
        to be shorter (or must be) can say so here.
        """
        return model_max_length

    def eval_metrics(self) -> list[str]:
        """Names of the metrics that judge this problem's outputs."""
        return ["bleu"]

    def decode_metrics(self) -> list[str]:
        """The metrics t2t-decoder prints against references: sacreBLEU and eval_metrics()."""
        return list(dict.fromkeys(["bleu", *self.eval_metrics()]))

    # What decoding reads and writes.

    def model_input(self, line: str) -> str:
        """The text the model reads for one line of input (as it is; a parser escapes brackets)."""
        return line

    def model_target(self, line: str) -> str:
        """The text the model is scored on for one given target line (`t2t-score`): as it
        is; a parser reads a PTB tree and linearizes it as training did.

        Raises:
          ValueError: a line the problem cannot read as a target (a parser's non-tree).
        """
        return line

    def output_texts(self, sources: Sequence[str], outputs: Sequence[str]) -> list[str]:
        """What is written for each model output (the text itself; a parser writes trees).

        Args:
          sources: the input lines, as given (before `model_input`).
          outputs: the model's decoded output for each, aligned with sources.
        """
        return list(outputs)

    def tree_constraint(self, vocabs: dict[str, Vocabulary]) -> TreeTokens | None:
        """What constrains the search's outputs to trees (a parser's); None: nothing."""
        del vocabs
        return None

    # Reading the data.

    def recorded_source(self, data_dir: str) -> str | None:
        """Which source built data_dir's data, for problems with several
        (TranslateProblem: "local", "tfds" or "archives"); None otherwise."""
        del data_dir
        return None

    def data_files(self, data_dir: str, split: str) -> list[str]:
        """The split's shards; a clear error if they are missing or incomplete."""
        matches = tf.io.gfile.glob(records.split_pattern(data_dir, self.data_name, split))
        counts = {path: re.search(r"-of-(\d+)$", path) for path in matches}
        paths = sorted(path for path, count in counts.items() if count)
        expected = {int(count.group(1)) for count in counts.values() if count}
        if not paths or len(expected) != 1 or len(paths) != expected.pop():
            what = "no" if not paths else "an incomplete set of"
            raise UserError(
                f"data_dir {data_dir} holds {what} {split} shards of problem "
                f"{self.data_name!r}; generate them with `t2t-datagen "
                f"--problem={self.data_name} --data_dir={data_dir} --tmp_dir=TMP_DIR`."
            )
        return paths

    def text_examples(self, data_dir: str, split: str, count: int) -> list[tuple[str, str]]:
        """The split's first `count` examples as text: (inputs, references).

        Where t2t-datagen kept the split's text beside its shards
        (`records.text_paths`), that text as the corpus had it (a parser's gold
        trees); otherwise the records decoded back to text. `count` < 0: all.
        """
        reads_kept = not self.was_reversed or self.kept_text_reverses
        if reads_kept and records.has_text(data_dir, self.data_name, split):
            kept = records.text_paths(data_dir, self.data_name, split)
            sources, references = (read_text_lines(path, f"{split} text") for path in kept)
            if self.was_reversed:
                sources, references = references, sources
            pairs = list(zip(sources, references, strict=True))
            return pairs if count < 0 else pairs[:count]
        encoders = self.feature_encoders(data_dir)
        dataset = tf.data.TFRecordDataset(self.data_files(data_dir, split)).take(count)
        return [
            (
                encoders["inputs"].decode(example["inputs"].numpy()),
                encoders["targets"].decode(example["targets"].numpy()),
            )
            for example in dataset.map(plain_function(self._parse))
        ]

    def dataset(
        self,
        split: str,
        batching_config: BatchingConfig,
        data_dir: str,
        shuffle: bool | None = None,
        repeat: bool | None = None,
        deterministic: bool = False,
        seed: int | None = None,
        input_context: tf.distribute.InputContext | None = None,
        skip_corrupt: bool = False,
    ) -> tf.data.Dataset:
        """Batches {"inputs": int32 [B, L], "targets": int32 [B, L]} of the split.

        Training data ("train") drops examples longer than
        `max_length(batching_config.max_length)`; other splits cut them to it
        (keeping EOS) and log how many. Batches hold batching_config.batch_size
        tokens, padding counted, with lengths padded to a bounded set of bucket
        boundaries.

        Args:
          split: "train", "dev" or "test".
          batching_config: batch size, max length and buckets, e.g. `hparams.batching()`.
          data_dir: where t2t-datagen wrote the shards.
          shuffle, repeat: default to True for "train", False otherwise.
          deterministic: fixed order and seeds (for tests and reproducible runs).
          seed: shuffle seed; defaults to 0 when deterministic.
          input_context: from `distribute_datasets_from_function`; each input
            pipeline reads its own subset of the shards.
          skip_corrupt: read each shard up to its first damaged record instead
            of stopping there with an error (`t2t_keras.data.damage`).
        """
        training = split == "train"
        shuffle = training if shuffle is None else shuffle
        repeat = training if repeat is None else repeat
        seed = 0 if seed is None and deterministic else seed
        paths, by_record = _pipeline_paths(self.data_files(data_dir, split), input_context)
        chains = 1 if deterministic or by_record or not training else _chains(len(paths))
        batches = functools.partial(
            self._batches, split=split, batching_config=batching_config, shuffle=shuffle,
            repeat=repeat, deterministic=deterministic, skip_corrupt=skip_corrupt,
            input_context=input_context if by_record else None,
        )  # fmt: skip
        if chains == 1:
            dataset = batches(paths, seed=seed)
        else:
            # Each chain batches its own shards, in a thread of its own.
            parts = [
                batches(paths[chain::chains], seed=_offset(seed, chain)).prefetch(2)
                for chain in range(chains)
            ]
            order = tf.data.Dataset.range(chains).repeat()
            # An exhausted chain (all its examples too long, or repeat=False) is skipped.
            dataset = tf.data.Dataset.choose_from_datasets(
                parts, order, stop_on_empty_dataset=False
            )
        options = tf.data.Options()
        options.deterministic = deterministic
        return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)

    def _batches(
        self,
        paths: list[str],
        split: str,
        batching_config: BatchingConfig,
        shuffle: bool,
        repeat: bool,
        deterministic: bool,
        seed: int | None,
        skip_corrupt: bool,
        input_context: tf.distribute.InputContext | None,
    ) -> tf.data.Dataset:
        """Reads, parses, fits to length, shuffles and batches the examples of `paths`."""
        max_length = self.max_length(batching_config.max_length)
        parallel = 1 if deterministic else tf.data.AUTOTUNE
        dataset = self._records(paths, shuffle, seed, deterministic, input_context, skip_corrupt)
        dataset = dataset.map(
            plain_function(self._parse), num_parallel_calls=parallel, deterministic=deterministic
        )
        dataset = self._fit_to_length(dataset, split, max_length)
        if shuffle:
            dataset = dataset.shuffle(10_000, seed=seed)
        if repeat:
            dataset = dataset.repeat()
        return batching.batch_by_length(
            dataset,
            batching_config.batch_size,
            max_length,
            batching_config.min_length_bucket,
            batching_config.length_bucket_step,
        )

    def _fit_to_length(
        self, dataset: tf.data.Dataset, split: str, max_length: int
    ) -> tf.data.Dataset:
        """Training drops examples over max_length; other splits cut them, logging how many."""
        if split == "train":
            return batching.filter_by_length(dataset, max_length)
        _log_too_long(dataset, f"{self.name} {split}", max_length)
        return batching.truncate(dataset, max_length)

    @staticmethod
    def _records(
        paths: list[str],
        shuffle: bool,
        seed: int | None,
        deterministic: bool,
        input_context: tf.distribute.InputContext | None,
        skip_corrupt: bool = False,
    ) -> tf.data.Dataset:
        """The serialized examples of `paths`.

        With an input_context here, there are fewer shards than pipelines:
        every pipeline reads all shards in one fixed order and keeps every
        n-th record, so the parts are still disjoint and cover the data.
        """
        files = tf.data.Dataset.from_tensor_slices(paths)
        if shuffle and input_context is None:
            files = files.shuffle(len(paths), seed=seed)

        def read(path: tf.Tensor) -> tf.data.Dataset:
            shard = tf.data.TFRecordDataset(path)
            # After a damaged record TensorFlow moves on to the next file.
            return shard.ignore_errors() if skip_corrupt else shard

        serialized = files.interleave(
            plain_function(read),
            cycle_length=4,
            num_parallel_calls=1 if deterministic else tf.data.AUTOTUNE,
            # Every pipeline sees the same order.
            deterministic=deterministic or input_context is not None,
        )
        if input_context is None:
            return serialized
        return serialized.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)

    def _parse(self, record: tf.Tensor) -> dict[str, tf.Tensor]:
        features = records.parse_example(record)
        if self.was_reversed:
            return {"inputs": features["targets"], "targets": features["inputs"]}
        return features


def _log_too_long(dataset: tf.data.Dataset, what: str, max_length: int) -> None:
    """Logs how many examples of a finite split are longer than max_length (and will be cut)."""
    lengths = dataset.map(
        plain_function(batching.example_length), num_parallel_calls=tf.data.AUTOTUNE
    )
    too_long = int(
        lengths.reduce(
            tf.constant(0, tf.int64),
            plain_function(lambda n, length: n + tf.cast(length > max_length, tf.int64)),
        )
    )
    if too_long:
        logging.warning(
            "%s: %d example(s) longer than max_length=%d are cut to it.", what, too_long, max_length
        )


def _pipeline_paths(
    paths: list[str], input_context: tf.distribute.InputContext | None
) -> tuple[list[str], bool]:
    """This input pipeline's whole shards, or all shards and True when there are
    fewer shards than pipelines (each then keeps every n-th record)."""
    pipelines = input_context.num_input_pipelines if input_context else 1
    if pipelines > len(paths):
        return paths, True
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    return paths[pipeline_id::pipelines], False


def _chains(shards: int) -> int:
    """How many chains batch a training pipeline in parallel: one per core, at most
    _MAX_CHAINS, each with at least one shard. One chain's shuffle and bucketing
    run in one thread each (~0.75M target tokens/s on a 2024 server core); 8
    GPUs training transformer_base want ~1.7M."""
    return max(1, min(_MAX_CHAINS, len(os.sched_getaffinity(0)), shards))


def _offset(seed: int | None, chain: int) -> int | None:
    return None if seed is None else seed + chain
