"""What t2t-decoder does: decode a file, a problem's split, or lines typed in, and score.

Every mode writes exactly one output line per input line, in input order.
Input must be UTF-8: a file with invalid UTF-8 is refused before decoding,
naming the line (nothing is written).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from typing import BinaryIO, TextIO

from absl import logging

from t2t_keras.data.problem import Problem
from t2t_keras.errors import UserError
from t2t_keras.files import check_writable, read_text_lines, write_atomically
from t2t_keras.metrics.output_metrics import score
from t2t_keras.run.loading import TrainedModel
from t2t_keras.serving.translator import (
    SentenceTranslator,
    Translation,
    Translator,
    readable_texts,
)


@dataclasses.dataclass
class Decoded:
    """Inputs, their translations in the same order, and the scores printed."""

    sources: list[str]
    translations: list[Translation]
    scores: dict[str, float] = dataclasses.field(default_factory=dict)


def report_progress(done: int, total: int, seconds: float) -> None:
    """Logs sentences done and sentences per second."""
    rate = done / seconds if seconds > 0 else 0.0
    logging.info("Decoded %d/%d sentences (%.1f sentences/s).", done, total, rate)


def translate_lines(
    translator: SentenceTranslator,
    sources: Sequence[str],
    problem: Problem | None = None,
    report: Callable[[int, int, float], None] | None = None,
    first: int = 0,
) -> list[Translation]:
    """Translations of input lines, as the problem reads and writes them; the
    first line is number `first` (sampling draws each line's samples by its number).

    The model reads `problem.model_input(line)`, and each hypothesis becomes
    `problem.output_texts` of it (a parser's tree, never empty for a
    non-empty input); without a problem, lines and outputs are used as they are.
    Lone surrogates are read as U+FFFD (`readable_texts`), by the problem too.
    """
    if problem is None:
        return translator.translate(sources, report, first)
    sources = readable_texts(sources)
    inputs = [problem.model_input(s) for s in sources]
    translations = translator.translate(inputs, report, first)
    for translation, texts in zip(
        translations, written_texts(problem, sources, translations), strict=True
    ):
        translation.texts = texts
    return translations


def written_texts(
    problem: Problem | None, sources: Sequence[str], translations: Sequence[Translation]
) -> list[list[str]]:
    """Each translation's hypotheses as the problem writes them (a parser's trees over
    its source's words; a non-empty source whose search ended no hypothesis still
    gets one, empty, scored -inf); as they are without a problem."""
    if problem is None:
        return [list(t.texts) for t in translations]
    for source, translation in zip(sources, translations, strict=True):
        if source.strip() and not translation.texts:  # No hypothesis ended: still one line.
            translation.texts, translation.scores = [""], [float("-inf")]
    pairs = [
        (source, text) for source, t in zip(sources, translations, strict=True) for text in t.texts
    ]
    written = iter(problem.output_texts([s for s, _ in pairs], [text for _, text in pairs]))
    return [[next(written) for _ in translation.texts] for translation in translations]


def decode_file(
    translator: SentenceTranslator,
    from_file: str,
    to_file: str | None,
    reference_file: str | None = None,
    problem: Problem | None = None,
    out: TextIO | None = None,
) -> Decoded:
    """Translates every line of from_file into to_file (or `out`), then scores if asked.

    Args:
      translator: the model and settings.
      from_file: UTF-8 text, one sentence per line.
      to_file: where the outputs go, written whole at the end; None = `out`.
      reference_file: references, one per input line: print the scores.
      problem: the problem trained on, if known: how lines are read and
        outputs written (`translate_lines`), and its `decode_metrics()`;
        without it, text as it is and sacreBLEU.
      out: where scores (and outputs without to_file) are printed; default stdout.

    Returns:
      The inputs, their translations and the scores printed.
    """
    sources = read_text_lines(from_file, "--decode_from_file")
    references = None
    if reference_file:
        references = read_text_lines(reference_file, "--decode_reference")
        if len(references) != len(sources):
            raise UserError(
                f"--decode_reference {reference_file} has {len(references)} lines but "
                f"--decode_from_file {from_file} has {len(sources)}; give one reference "
                "per input line."
            )
    if to_file:
        _check_output(
            to_file, {"--decode_from_file": from_file, "--decode_reference": reference_file}
        )
    translations = translate_lines(translator, sources, problem, report_progress)
    write_outputs(translations, translator, to_file, out)
    decoded = Decoded(sources, translations)
    if references is not None:
        hypotheses = [t.text for t in translations]
        metrics = problem.decode_metrics() if problem else ["bleu"]
        decoded.scores = print_scores(hypotheses, references, metrics, out)
    return decoded


def _check_output(to_file: str, inputs: dict[str, str | None]) -> None:
    """Refuses an output path that cannot be written or that is one of the inputs."""
    check_writable(to_file, "--decode_to_file")
    target = os.path.expanduser(to_file)
    for flag, path in inputs.items():
        if path and os.path.exists(target) and os.path.samefile(target, os.path.expanduser(path)):
            raise UserError(
                f"--decode_to_file {to_file} is the {flag} file; writing the outputs there "
                "would replace it. Give another --decode_to_file."
            )


def decode_split(
    translator: SentenceTranslator,
    problem: Problem,
    data_dir: str,
    split: str,
    to_file: str | None = None,
    out: TextIO | None = None,
) -> Decoded:
    """Translates a problem's split (its first num_samples examples) and prints its scores.

    Returns:
      The inputs, their translations and the problem's metrics.
    """
    if split not in problem.dataset_splits:
        raise UserError(
            f"problem {problem.name} has no {split!r} split; it has "
            f"{', '.join(problem.dataset_splits)}."
        )
    if to_file:
        check_writable(to_file, "--decode_to_file")
    count = translator.settings.num_samples or -1
    pairs = problem.text_examples(data_dir, split, count)
    sources, references = [source for source, _ in pairs], [target for _, target in pairs]
    translations = translate_lines(translator, sources, problem, report_progress)
    if to_file:
        write_outputs(translations, translator, to_file, out)
    print(f"{problem.name} {split}, {len(pairs)} sentences:", file=out or sys.stdout)
    hypotheses = [t.text for t in translations]
    scores = print_scores(hypotheses, references, problem.eval_metrics(), out)
    return Decoded(sources, translations, scores)


def decode_interactive(
    translator: SentenceTranslator,
    lines: BinaryIO | None = None,
    out: TextIO | None = None,
    problem: Problem | None = None,
) -> int:
    """Translates each line typed (or piped) in as soon as it is read; returns how many.

    Lines end at "\n" only, and a "\r" before it is dropped, as in file mode
    (`read_text_lines`): the same bytes give the same outputs in both modes.
    A line that is not UTF-8 gets an empty output line and a warning naming it,
    so a long session is not lost to one bad line.

    Args:
      translator: the model and settings.
      lines: where lines are read, as bytes; default stdin.
      out: where outputs are printed, one line each; default stdout.
      problem: the problem trained on, if known (see `translate_lines`).
    """
    lines = lines or sys.stdin.buffer
    out = out or sys.stdout
    prompt = lines.isatty()
    # A typed sentence's search shape is compiled (or loaded from the XLA cache)
    # on its first use: here, before the first prompt, not while a line waits.
    translate_lines(translator, ["."], problem)
    count = 0
    while True:
        if prompt:
            print("> ", end="", file=sys.stderr, flush=True)
        raw = lines.readline()
        if not raw:
            return count
        count += 1
        try:
            text = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
        except UnicodeDecodeError as error:
            logging.warning(
                "Input line %d is not UTF-8 (%s at byte %d); its output line is empty.",
                count,
                error.reason,
                error.start,
            )
            text = ""
        # Numbered as in a file of the lines typed: a line typed again samples anew.
        (translation,) = translate_lines(translator, [text], problem, first=count - 1)
        print(_line(translation, translator), file=out, flush=True)


def write_outputs(
    translations: list[Translation],
    translator: SentenceTranslator,
    to_file: str | None,
    out: TextIO | None = None,
) -> None:
    """One line per translation into to_file (atomically) or onto `out` (default stdout)."""
    lines = [_line(t, translator) for t in translations]
    if to_file is None:
        for line in lines:
            print(line, file=out or sys.stdout)
        return
    text = "".join(f"{line}\n" for line in lines)
    write_atomically(text.encode("utf-8"), os.path.expanduser(to_file))
    logging.info("Wrote %d lines to %s.", len(lines), to_file)


def _line(translation: Translation, translator: SentenceTranslator) -> str:
    settings = translator.settings
    return translation.line(settings.write_beam_scores, settings.search.num_returned)


def print_scores(
    hypotheses: list[str],
    references: list[str],
    metrics: Sequence[str],
    out: TextIO | None = None,
) -> dict[str, float]:
    """Prints one line per distinct metric; returns their values."""
    out = out or sys.stdout
    if not references:
        print("No sentences, so no scores.", file=out)
        return {}
    values = {}
    for name in dict.fromkeys(metrics):
        values[name], line = score(name, hypotheses, references)
        print(line, file=out)
    return values


def plot_attention(
    trained: TrainedModel,
    translator: Translator,
    decoded: Decoded,
    plot_dir: str,
    count: int,
) -> list[str]:
    """Attention heat maps of the first `count` non-empty inputs and their outputs."""
    # matplotlib is imported only when plots are asked for.
    from t2t_keras.metrics.attention_plots import write_attention_plots

    chosen = [i for i, translation in enumerate(decoded.translations) if translation.ids][:count]
    rows, _ = translator.encode([decoded.sources[i] for i in chosen])  # Only those plotted.
    examples = [(row, decoded.translations[i].ids[0]) for row, i in zip(rows, chosen, strict=True)]
    plot_dir = os.path.expanduser(plot_dir)
    paths = write_attention_plots(trained.model, trained.vocabs, examples, plot_dir)
    logging.info("Wrote %d attention plots and index.html to %s.", len(paths), plot_dir)
    return paths
