"""ParsingProblem: constituency parsing as translation, trees in and trees out.

A subclass says which treebank files make each split (`tree_files`); the
class reads them, skipping and reporting malformed trees, and turns each tree
into a sample: the words as input, the linearized tree as target
(`t2t_keras.data.trees`), and the gold tree as the reference the dev and test
splits keep beside their shards. Decoding gives trees back: every output is
repaired into a PTB tree over exactly the input's words
(`t2t_keras.data.tree_repair`) and scored by EVALB's rules against the gold
trees (`t2t_keras.metrics.evalb`).

Inputs are words separated by spaces, tokenized as the treebank is. Brackets
in an input are written as the treebank writes them ("(" -> -LRB-, see
`trees.escape_words`) before the model reads it, and stay so in the output
tree's leaves, as they are in gold trees.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from absl import logging

from t2t_keras.data import corpus, records, trees
from t2t_keras.data.text_problem import Sample, Text2TextProblem
from t2t_keras.data.tree_repair import RepairCounts, output_tree
from t2t_keras.data.tree_tokens import TreeTokens, tree_tokens
from t2t_keras.data.vocab import Vocabulary
from t2t_keras.errors import UserError

# The Penn Treebank's constituent labels (Bies et al. 1995, and NML): their
# brackets are one vocabulary piece each, "(NP" and ")NP", as are XX and -LRB-; with
# SentencePiece's default they are two ("(" "NP"), and targets half again as long.
# fmt: off
PTB_LABELS = (
    "ADJP", "ADVP", "CONJP", "FRAG", "INTJ", "LST", "NAC", "NML", "NP", "NX", "PP", "PRN",
    "PRT", "QP", "RRC", "S", "SBAR", "SBARQ", "SINV", "SQ", "UCP", "VP", "WHADJP", "WHADVP",
    "WHNP", "WHPP", "X",
)
# fmt: on

# Malformed trees reported one by one per file; the rest are only counted.
_REPORTED_PER_FILE = 10


class ParsingProblem(Text2TextProblem):
    """Words -> linearized tree; decodes to PTB trees scored by EVALB's rules."""

    dataset_splits = {"train": 10, "dev": 1, "test": 1}  # noqa: RUF012
    keep_text = True
    # Words in, tree symbols out: a vocabulary per side. The targets' holds the
    # brackets, XX and little else (~70 pieces), so the softmax is that small
    # (with shared_embeddings=false, as the parsing hparams sets have it).
    shared_vocab = False
    approx_target_vocab_size = 256
    whole_words = (
        trees.POS_PLACEHOLDER,
        *(f"{bracket}{label}" for label in PTB_LABELS for bracket in "()"),
        *trees.PTB_ESCAPES.values(),
    )

    def tree_files(self, tmp_dir: str, split: str) -> list[str]:
        """The treebank files of the split: one tree a line, or trees spanning lines."""
        raise NotImplementedError(f"{type(self).__name__} must define tree_files.")

    def generate_samples(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[Sample]:
        for path in self.tree_files(tmp_dir, split):
            yield from tree_samples(path)

    def text_examples(self, data_dir: str, split: str, count: int) -> list[tuple[str, str]]:
        """(words, gold tree) of the split's first `count` sentences (< 0: all)."""
        if split != "train" and not records.has_text(data_dir, self.data_name, split):
            raise UserError(
                f"data_dir {data_dir} holds no gold trees of the {split} split of "
                f"{self.data_name} ({self.data_name}-{split}.references); run `t2t-datagen "
                f"--problem={self.data_name} --data_dir={data_dir} --tmp_dir=TREEBANK` "
                "again: it writes them beside the shards, which scoring needs."
            )
        return super().text_examples(data_dir, split, count)

    def eval_metrics(self) -> list[str]:
        return ["bracket_f1"]

    def decode_metrics(self) -> list[str]:
        return ["bracket_f1"]  # BLEU of bracketed trees means nothing.

    def model_input(self, line: str) -> str:
        return " ".join(trees.escape_words(line))

    def model_target(self, line: str) -> str:
        """A gold PTB tree's linearized target, cleaned as training cleans it; reversed,
        the words (escaped as `model_input` escapes them). A blank line stays blank.

        Raises:
          TreeError: a line that is not one well-formed tree, or one with no words left.
        """
        if self.was_reversed:
            return " ".join(trees.escape_words(line))
        if not line.strip():
            return ""
        tree = trees.clean(trees.parse_tree(line))
        if tree is None:
            raise trees.TreeError("a tree of empty elements only (-NONE-), which has no words")
        return trees.linearize(tree)

    def output_texts(self, sources: Sequence[str], outputs: Sequence[str]) -> list[str]:
        """One PTB tree per output over its source's words (`output_trees`); repairs logged."""
        texts, counts = self.output_trees(sources, outputs)
        if counts.repaired:
            logging.warning("%s: %s.", self.name, counts)
        elif counts.outputs:
            logging.info("%s: %s.", self.name, counts)
        return texts

    def tree_constraint(self, vocabs: dict[str, Vocabulary]) -> TreeTokens | None:
        """The tree symbols of the vocabularies; None when reversed (trees are then read)."""
        return None if self.was_reversed else tree_tokens(vocabs)

    @staticmethod
    def output_trees(
        sources: Sequence[str], outputs: Sequence[str]
    ) -> tuple[list[str], RepairCounts]:
        """(one PTB tree per output, "" for an empty source; how many needed which repair)."""
        counts = RepairCounts()
        texts = []
        for source, output in zip(sources, outputs, strict=True):
            words = trees.escape_words(source)
            if not words:
                texts.append("")
                continue
            tree, repairs = output_tree(output, words)
            counts.add(repairs)
            texts.append(str(tree))
        return texts, counts


def tree_samples(path: str) -> Iterator[Sample]:
    """{"inputs": words, "targets": linearized tree, "reference": gold tree} per tree of a file.

    The gold tree is cleaned as the target is (no traces, no function tags)
    and put under TOP. A malformed tree is logged with the file and the line
    it starts on, and skipped; the number skipped is logged at the end.
    """
    lines = (
        corpus.decode_line(raw, path, number)
        for number, raw in enumerate(corpus.read_lines(path), start=1)
    )
    skipped = 0
    for line, parsed in trees.read_trees(lines):
        if isinstance(parsed, trees.TreeError):
            skipped += 1
            if skipped <= _REPORTED_PER_FILE:
                logging.warning("%s, line %d: %s; tree skipped.", path, line, parsed)
            continue
        tree = trees.clean(parsed)
        if tree is not None:
            yield {
                "inputs": " ".join(tree.words()),
                "targets": trees.linearize(tree),
                "reference": str(trees.Tree("TOP", [tree])),
            }
    if skipped:
        logging.warning("%s: %d malformed tree(s) skipped.", path, skipped)
