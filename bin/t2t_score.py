r"""t2t-score: a trained model's log-probability of given sentence pairs, for filtering and reranking.

    t2t-score --output_dir=TRAIN --source_file=SRC --target_file=TGT \
        [--output_file=OUT] [--batch_size=TOKENS] [--normalize]

For each line pair of --source_file and --target_file (UTF-8, the same number
of lines) prints one line, in input order, to --output_file or stdout, its
fields tab-separated:

    log P(target | source)    the sum of the target tokens' log-probabilities (EOS included)
    tokens                    the number of target tokens, EOS included
    per-token                 each target token's log-probability, space-separated
    mean                      with --normalize only: the sum divided by tokens

e.g. `-1.234567<TAB>4<TAB>-0.100000 -0.900000 -0.200000 -0.034567`. Natural
logarithms, teacher-forced, the model in inference mode (no dropout): the sum
is minus the training loss of the pair without label smoothing. A pair with a
blank side (or one the vocabulary reads as no tokens) gets an empty line.
Sources longer than the model's max_length are cut to it, as t2t-decoder
cuts them (logged); a longer target is an error naming its line. For a
parsing problem, targets are PTB trees, one a line, scored as their
linearization (the training target). --output_dir, --checkpoint_path and the
tensor2tensor flags that check the model work as in t2t-decoder.
"""

from __future__ import annotations

import os

from absl import flags, logging

from t2t_keras.bin import flag_groups, program, trained_model
from t2t_keras.files import write_atomically

trained_model.define_flags(
    "If given, it must hold the vocabularies the model was trained with (a check: scoring "
    "reads the training directory's copies)."
)
flag_groups.define_xla_cache_flag()
flags.DEFINE_string("source_file", None, "The sources: UTF-8 text, one sentence a line.")
flags.DEFINE_string(
    "target_file",
    None,
    "The targets, aligned line by line with --source_file (a parser's: one PTB tree a line).",
)
flags.DEFINE_string(
    "output_file",
    None,
    "Write the score lines here (default: stdout). Each line: the target's log-probability, "
    "its token count (EOS included) and the per-token log-probabilities (space-separated), "
    "tab-separated; empty for a pair with a blank side.",
)
flags.DEFINE_integer(
    "batch_size",
    0,
    "Tokens per batch, padding counted (default 0: the batch_size the model was trained with).",
    lower_bound=0,
)
flags.DEFINE_bool(
    "normalize", False, "Append a fourth field: the mean log-probability per target token."
)
FLAGS = flags.FLAGS


def main() -> int:
    if flag_groups.start():
        return 0
    from t2t_keras.serving import scoring

    source_file = flag_groups.required("source_file", "the file of source sentences")
    target_file = flag_groups.required("target_file", "the file of target sentences")
    sources, targets = scoring.read_pairs(source_file, target_file)
    if FLAGS.output_file:
        inputs = {"--source_file": source_file, "--target_file": target_file}
        scoring.check_output_file(FLAGS.output_file, inputs)
    trained = trained_model.load()
    problem = trained_model.registered_problem(trained.run)
    target_name = f"--target_file {target_file}"
    sources, targets = scoring.model_texts(problem, sources, targets, target_name)
    batch_size = FLAGS.batch_size or trained.hparams.batch_size
    jit_compile = flag_groups.xla().compiles_whole_search  # full: the whole forward pass.
    scorer = scoring.Scorer(trained.model, trained.vocabs, batch_size, jit_compile)
    logging.info("Scoring %d pairs with %s.", len(sources), trained.checkpoint)
    scores = scorer.score(sources, targets, target_name)
    lines = [scoring.score_line(score, FLAGS.normalize) for score in scores]
    if FLAGS.output_file:
        text = "".join(f"{line}\n" for line in lines)
        write_atomically(text.encode("utf-8"), os.path.expanduser(FLAGS.output_file))
        logging.info("Wrote %d lines to %s.", len(lines), FLAGS.output_file)
    else:
        for line in lines:
            print(line)
    return 0


def run() -> None:
    """Console entry point."""
    program.run(main, before_devices=flag_groups.keep_compilations)


if __name__ == "__main__":
    run()
