"""Text2TextProblem: a problem defined by pairs of strings.

A subclass yields {"inputs": str, "targets": str} from `generate_samples` and
picks a vocabulary size; the class builds the vocabulary (once), encodes the
pairs and writes the shards:

    @registry.register_problem
    class MyCorpus(Text2TextProblem):
        approx_vocab_size = 2**13

        def generate_samples(self, data_dir, tmp_dir, split):
            for source, target in read_my_files(tmp_dir, split):
                yield {"inputs": source, "targets": target}

What becomes of a sample (`Text2TextProblem._checked`), each counted in the
log and in the line t2t-datagen prints per split:

  - a side longer than `max_chars` characters: skipped;
  - text that is not valid Unicode (lone surrogates, as bytes decoded with
    errors="surrogateescape" give): skipped;
  - a training sample with an empty or whitespace-only side: skipped (it
    teaches nothing); in dev and test it is kept, so that they hold every
    line of their corpus;
  - anything else is kept as it is: NUL bytes, control characters and
    characters the vocabulary does not know become what the vocabulary
    makes of them (SentencePiece drops some, such as ESC and U+FEFF, and
    reads others, NUL among them, as UNK).

A split left with no sample, or a sample that is not {"inputs": str,
"targets": str}, is an error naming the problem.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Iterator

from absl import logging

from t2t_keras.data import records
from t2t_keras.data.ids import EOS_ID
from t2t_keras.data.problem import Problem
from t2t_keras.data.sentence_sample import sample_evenly
from t2t_keras.data.vocab import ByteVocabulary, SentencePieceVocabulary, Vocabulary
from t2t_keras.errors import UserError
from t2t_keras.usr_dir import error_location

Sample = dict[str, str]


@dataclasses.dataclass
class SampleCounts:
    """A split's samples: how many were kept, and how many were skipped for which reason."""

    kept: int = 0
    too_long: int = 0  # A side longer than max_chars.
    not_unicode: int = 0  # Lone surrogates, which no file or vocabulary can hold.
    blank: int = 0  # A training sample with an empty or whitespace-only side.

    def skipped(self, max_chars: int) -> str:
        """The skipped ones by reason, e.g. "2 with a blank side"; "" if none were."""
        reasons = [
            (self.too_long, f"longer than {max_chars} characters"),
            (self.not_unicode, "not valid Unicode"),
            (self.blank, "with a blank side"),
        ]
        return ", ".join(f"{count} {reason}" for count, reason in reasons if count)


class Text2TextProblem(Problem):
    """Pairs of strings, encoded with SentencePiece (or bytes), in TFRecord shards."""

    # Vocabulary size; SentencePiece may stop below it on a small corpus.
    approx_vocab_size: int = 2**15
    # Without shared_vocab: the targets' vocabulary size; 0 = approx_vocab_size.
    approx_target_vocab_size: int = 0
    # "bpe" or "unigram" (SentencePiece), or "byte" for algorithmic/character data.
    vocab_type: str = "bpe"
    # One vocabulary for inputs and targets (needed for shared embeddings).
    shared_vocab: bool = True
    # generate_samples is called per split; otherwise once ("train") and the
    # samples are dealt to train and dev in proportion to their shard counts.
    is_generate_per_split: bool = True
    # Sentences the vocabulary is trained on, at most, drawn evenly from the
    # whole training corpus (both sides of every pair with shared_vocab).
    max_vocab_sentences: int = 1_000_000
    # Seeds that draw: the same corpus gives the same vocabulary.
    vocab_seed: int = 1
    # Samples with a side longer than this many characters are skipped, counted.
    max_chars: int = 10_000
    # Words the vocabulary always keeps as one piece (e.g. a parser's "(NP").
    whole_words: tuple[str, ...] = ()
    # Keep each non-train split's text beside its shards (`records.text_paths`):
    # the samples' inputs and their "reference" (else "targets"), which
    # decoding and evaluation then score against, e.g. a parser's gold trees.
    keep_text: bool = False

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        """Yields {"inputs": str, "targets": str} for the split."""
        raise NotImplementedError(f"{type(self).__name__} must define generate_samples.")

    def split_available(self, tmp_dir: str, split: str) -> bool:
        """False for an optional split whose raw data is absent: it is not generated."""
        return True

    def vocab_samples(self, data_dir: str, tmp_dir: str) -> Iterator[Sample]:
        """The samples the vocabulary's sentences are drawn from, evenly: by default
        the whole training split, every corpus and file of it."""
        return self.generate_samples(data_dir, tmp_dir, "train")

    # Vocabularies.

    def vocab_paths(self, data_dir: str) -> dict[str, str]:
        """Where the SentencePiece models live, per side (forward direction)."""
        if self.shared_vocab:
            path = os.path.join(data_dir, f"vocab.{self.data_name}.model")
            return {"inputs": path, "targets": path}
        return {
            side: os.path.join(data_dir, f"vocab.{self.data_name}.{side}.model")
            for side in ("inputs", "targets")
        }

    def feature_encoders(self, data_dir: str) -> dict[str, Vocabulary]:
        """{"inputs", "targets"} vocabularies, swapped for a reversed problem."""
        encoders = self._forward_encoders(data_dir)
        if self.was_reversed:
            return {"inputs": encoders["targets"], "targets": encoders["inputs"]}
        return encoders

    def _forward_encoders(self, data_dir: str) -> dict[str, Vocabulary]:
        if self.vocab_type == "byte":
            return {"inputs": ByteVocabulary(), "targets": ByteVocabulary()}
        encoders = {}
        for side, path in self.vocab_paths(data_dir).items():
            if not os.path.exists(path):
                raise UserError(
                    f"The vocabulary {path} of problem {self.data_name!r} is missing; "
                    f"generate it with `t2t-datagen --problem={self.data_name} "
                    f"--data_dir={data_dir} --tmp_dir=TMP_DIR`."
                )
            encoders[side] = SentencePieceVocabulary.load(path)
        return encoders

    def _build_vocabularies(self, data_dir: str, tmp_dir: str) -> dict[str, Vocabulary]:
        """Loads the vocabularies, training those that are not in data_dir yet."""
        if self.vocab_type == "byte":
            return self._forward_encoders(data_dir)
        trained: dict[str, Vocabulary] = {}
        for side, path in self.vocab_paths(data_dir).items():
            if path in trained:
                continue
            if os.path.exists(path):
                trained[path] = SentencePieceVocabulary.load(path)
                continue
            sides = ("inputs", "targets") if self.shared_vocab else (side,)
            logging.info("%s: training the %s vocabulary %s", self.data_name, side, path)
            sentences = (
                sample[name]
                for sample in self._checked(
                    self.vocab_samples(data_dir, tmp_dir), "train", "vocabulary"
                )
                for name in sides
            )
            sample = sample_evenly(sentences, self.max_vocab_sentences, self.vocab_seed)
            size = self.approx_vocab_size
            if side == "targets" and not self.shared_vocab:
                size = self.approx_target_vocab_size or size
            trained[path] = SentencePieceVocabulary.train(
                sample.sentences,
                path,
                size,
                model_type=self.vocab_type,
                max_sentences=self.max_vocab_sentences,
                whole_words=self.whole_words,
            )
            print(
                f"{self.data_name}: trained the {side} vocabulary "
                f"({trained[path].vocab_size} pieces) on {sample.describe()}."
            )
        return {side: trained[path] for side, path in self.vocab_paths(data_dir).items()}

    # Data generation.

    def generate_data(self, data_dir: str, tmp_dir: str) -> None:
        """Builds the vocabularies and writes the shards of every missing split.

        Idempotent: a split whose shards all exist is left alone, and a run
        with nothing to do says so.
        """
        os.makedirs(data_dir, exist_ok=True)
        missing = {}
        for split, count in self.dataset_splits.items():
            if not self.split_available(tmp_dir, split):
                logging.info("%s: no raw data for the optional %s split.", self.data_name, split)
            elif count > 0 and (self.is_generate_per_split or split in ("train", "dev")):
                paths = records.shard_paths(data_dir, self.data_name, split, count)
                if not all(
                    os.path.exists(path) for path in paths + self._text_paths(data_dir, split)
                ):
                    missing[split] = paths
        if not missing:
            print(f"{self.data_name}: data already generated in {data_dir}; nothing to do.")
            return
        records.remove_incomplete(data_dir, f"{self.data_name}-")
        vocabularies = self._build_vocabularies(data_dir, tmp_dir)
        for split, paths in missing.items():
            kept: list[tuple[str, str]] = []
            counts = SampleCounts()
            samples = self._samples(data_dir, tmp_dir, split, counts)
            encoded = self._encoded(
                samples, vocabularies, kept if self._text_paths(data_dir, split) else None
            )
            count = records.write_shards(encoded, paths, f"{self.data_name} {split}")
            if kept:
                records.write_text(
                    kept, records.text_paths(data_dir, self.data_name, split), len(paths)
                )
            skipped = counts.skipped(self.max_chars)
            print(
                f"{self.data_name}: wrote {count} {split} examples to {len(paths)} shard(s)"
                f"{f'; skipped {skipped}' if skipped else ''}."
            )

    def _text_paths(self, data_dir: str, split: str) -> list[str]:
        """The split's kept-text files, if it keeps its text (`keep_text`, not train)."""
        if not self.keep_text or split == "train":
            return []
        return list(records.text_paths(data_dir, self.data_name, split))

    def _encoded(
        self,
        samples: Iterator[Sample],
        vocabularies: dict[str, Vocabulary],
        kept: list[tuple[str, str]] | None = None,
    ) -> Iterator[dict[str, list[int]]]:
        """The samples' ids; (inputs, reference) of each appended to `kept` if given."""
        for sample in samples:
            if kept is not None:
                kept.append((sample["inputs"], sample.get("reference", sample["targets"])))
            yield {
                side: [*vocabularies[side].encode(sample[side]), EOS_ID]
                for side in ("inputs", "targets")
            }

    def _samples(
        self, data_dir: str, tmp_dir: str, split: str, counts: SampleCounts | None = None
    ) -> Iterator[Sample]:
        """The split's samples, checked by `_checked` (which fills `counts`)."""
        if self.is_generate_per_split:
            source = self.generate_samples(data_dir, tmp_dir, split)
        else:
            source = self._dealt(self.generate_samples(data_dir, tmp_dir, "train"), split)
        return self._checked(source, split, counts=counts)

    def _checked(
        self,
        source: Iterator[Sample],
        split: str,
        use: str = "",
        counts: SampleCounts | None = None,
    ) -> Iterator[Sample]:
        """Samples of the right type; empty corpora refused, unusable samples skipped.

        What is skipped is in the module's docstring; each reason is counted
        in `counts` and in a logged warning. `use` labels the log lines, e.g.
        "vocabulary" for the vocabulary's sample.
        """
        counts = counts if counts is not None else SampleCounts()
        for sample in self._reported(source, split):
            inputs, targets, reference = self._sample_texts(sample)
            if max(len(inputs), len(targets)) > self.max_chars:
                counts.too_long += 1
            elif not all(_is_unicode(text) for text in (inputs, targets, reference)):
                counts.not_unicode += 1
            elif split == "train" and not (inputs.strip() and targets.strip()):
                counts.blank += 1
            else:
                counts.kept += 1
                yield sample
        name = f"{self.data_name} {split}{f' ({use})' if use else ''}"
        if counts.too_long:
            logging.warning(
                "%s: skipped %d sample(s) longer than %d characters.",
                name,
                counts.too_long,
                self.max_chars,
            )
        if counts.not_unicode:
            logging.warning(
                "%s: skipped %d sample(s) holding text that is not valid Unicode (lone "
                "surrogates, e.g. from bytes decoded with errors='surrogateescape').",
                name,
                counts.not_unicode,
            )
        if counts.blank:
            logging.warning("%s: skipped %d sample(s) with a blank side.", name, counts.blank)
        if counts.kept == 0:
            skipped = counts.skipped(self.max_chars)
            raise UserError(
                f"Problem {self.data_name!r} produced no {split} samples"
                f"{f' (skipped {skipped})' if skipped else ''}; check its corpus."
            )

    def _sample_texts(self, sample: object) -> tuple[str, str, str]:
        """(inputs, targets, reference or "") of a sample, which must be {"inputs": str,
        "targets": str}, with an optional "reference": str (see `keep_text`)."""
        if isinstance(sample, dict):
            inputs, targets = sample.get("inputs"), sample.get("targets")
            reference = sample.get("reference", "")
            if isinstance(inputs, str) and isinstance(targets, str) and isinstance(reference, str):
                return inputs, targets, reference
        raise UserError(
            f"{type(self).__name__}.generate_samples must yield "
            f'{{"inputs": str, "targets": str}}, got {sample!r:.200}.'
        )

    def _reported(self, source: Iterator[Sample], split: str) -> Iterator[Sample]:
        """The samples; a file the problem cannot read becomes a UserError naming it."""
        try:
            yield from source
        except (OSError, UnicodeError) as error:
            where = error_location(error, inspect.getsourcefile(type(self)) or "")
            raise UserError(
                f"Problem {self.data_name!r} could not read its {split} data: "
                f"{type(error).__name__}: {error}{where}."
            ) from error

    def _dealt(self, samples: Iterator[Sample], split: str) -> Iterator[Sample]:
        """Every sample goes to train or dev, in proportion to their shard counts."""
        train, dev = self.dataset_splits.get("train", 0), self.dataset_splits.get("dev", 0)
        for index, sample in enumerate(samples):
            to_dev = index % (train + dev) >= train
            if (split == "dev") == to_dev:
                yield sample


def _is_unicode(text: str) -> bool:
    """Whether text can be written as UTF-8 (holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
